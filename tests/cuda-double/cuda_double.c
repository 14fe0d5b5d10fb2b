/*
 * A test double of the CUDA driver library (libcuda.so.1): the functions fabcheck calls,
 * serving HOST memory. It proves fabcheck's allocation, registration choice, fallback,
 * teardown order and error paths, not GPU behaviour: its "device memory" is host memory
 * that the adapter registers with ibv_reg_mr, as nvidia_peermem would let it register GPU
 * memory. fabcheck loads it through FABCHECK_CUDA_LIBRARY (environment only).
 *
 * Built by the tests with `cc -shared -fPIC` (tests/integration/cuda.rs, tests/rxe/cuda_double.rs).
 *
 * Knobs (environment, read at each call):
 *   FABCHECK_CUDA_DOUBLE_FAIL   init | alloc | export_ok  (cuInit fails with CUDA_ERROR_NO_DEVICE,
 *                               cuMemAlloc with CUDA_ERROR_OUT_OF_MEMORY, or the dma-buf export
 *                               "succeeds" with a memfd, to drive the dma-buf branch)
 *   FABCHECK_CUDA_DOUBLE_BUS_IDS  comma-separated PCI addresses, one GPU each (default one GPU,
 *                               0000:00:00.0)
 *   FABCHECK_CUDA_DOUBLE_LOG    a file each call appends one line to (retain, alloc, free,
 *                               release...), so tests can check the teardown order; "%p" in
 *                               it is replaced by the process id (one log per agent).
 * Prototypes: NVIDIA's cuda.h (CUDA 12).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_NOT_SUPPORTED 801

static int initialised;
static int retained[64];
static char contexts[64];

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void logline(const char *fmt, ...)
{
	const char *path = getenv("FABCHECK_CUDA_DOUBLE_LOG");
	if (!path || !*path)
		return;
	/* "%p" in the path is the process id: one log per agent. */
	char file[4096];
	const char *pid = strstr(path, "%p");
	if (pid)
		snprintf(file, sizeof file, "%.*s%d%s", (int)(pid - path), path, (int)getpid(), pid + 2);
	else
		snprintf(file, sizeof file, "%s", path);
	FILE *f = fopen(file, "a");
	if (!f)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int knob(const char *value)
{
	const char *fail = getenv("FABCHECK_CUDA_DOUBLE_FAIL");
	return fail && strcmp(fail, value) == 0;
}

/* The i-th bus id of the knob, or the default; 0 when there is no i-th GPU. */
static int bus_id(int i, char *out, size_t len)
{
	const char *ids = getenv("FABCHECK_CUDA_DOUBLE_BUS_IDS");
	if (!ids || !*ids)
		ids = "0000:00:00.0";
	int n = 0;
	const char *p = ids;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		if (n == i) {
			if (l + 1 > len)
				return 0;
			memcpy(out, p, l);
			out[l] = 0;
			return 1;
		}
		n++;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

static int count(void)
{
	char buf[64];
	int n = 0;
	while (n < 64 && bus_id(n, buf, sizeof buf))
		n++;
	return n;
}

CUresult cuInit(unsigned int flags)
{
	logline("cuInit %u", flags);
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (knob("init"))
		return CUDA_ERROR_NO_DEVICE;
	initialised = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	*n = count();
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= count())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *out, int len, CUdevice dev)
{
	char buf[64];
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (len <= 0 || !bus_id(dev, buf, sizeof buf))
		return CUDA_ERROR_INVALID_DEVICE;
	/* The driver writes upper-case hex, as here. */
	for (char *c = buf; *c; c++)
		if (*c >= 'a' && *c <= 'f')
			*c = (char)(*c - 'a' + 'A');
	snprintf(out, (size_t)len, "%s", buf);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= count())
		return CUDA_ERROR_INVALID_DEVICE;
	retained[dev]++;
	*ctx = &contexts[dev];
	logline("retain %d", dev);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (dev < 0 || dev >= 64 || retained[dev] == 0)
		return CUDA_ERROR_INVALID_DEVICE;
	retained[dev]--;
	logline("release %d", dev);
	return CUDA_SUCCESS;
}

static __thread CUcontext current;

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	if (ctx && (ctx < (void *)&contexts[0] || ctx >= (void *)&contexts[64] || retained[(char *)ctx - contexts] == 0))
		return CUDA_ERROR_INVALID_VALUE;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t len)
{
	if (!current)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	if (knob("alloc") || len == 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	void *p = NULL;
	if (posix_memalign(&p, 65536, len) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(p, 0, len);
	*ptr = (CUdeviceptr)(uintptr_t)p;
	logline("alloc %zu", len);
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr ptr)
{
	if (!current)
		return 201;
	free((void *)(uintptr_t)ptr);
	logline("free");
	return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void *value, int attribute, CUdeviceptr ptr)
{
	(void)ptr;
	/* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, with an unsigned int 1 */
	if (attribute != 6 || !value || *(const unsigned int *)value != 1)
		return CUDA_ERROR_INVALID_VALUE;
	logline("sync_memops");
	return CUDA_SUCCESS;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr ptr, size_t len, int type, unsigned long long flags)
{
	(void)ptr;
	(void)flags;
	if (type != 1 /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */ || len % 4096 != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!knob("export_ok")) {
		logline("export refused");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	/* Not a dma-buf: a provider asked to register it refuses, as rxe refuses any dma-buf. */
	int fd = memfd_create("cuda-double-dmabuf", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)handle = fd;
	logline("export fd");
	return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name)
{
	switch (error) {
	case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
	case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
	case 201: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}
