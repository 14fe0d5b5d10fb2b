/*
 * A TEST DOUBLE of the CUDA driver library (libcuda.so.1): the functions fabcheck calls,
 * serving HOST memory, and an adversary of the code that uses it. It proves fabcheck's
 * allocation, registration choice, fallback, context lifetime, teardown order and error
 * paths, not GPU behaviour. fabcheck loads it through FABCHECK_CUDA_LIBRARY (environment only).
 *
 * Built by the tests with `cc -shared -fPIC` (tests/cuda-double/build_double.rs).
 *
 * As an adversary:
 *  - "Device memory" is its own anonymous mapping. Once a registration covers it, the mapping is
 *    made PROT_NONE, so any CPU touch of device bytes (an inline send, a last-byte poll, a
 *    provider's memcpy out of a CQE) faults, as a GPU address would. The NIC still reaches the
 *    pages: a registration pins them, and rxe copies through the kernel's mapping of the pinned
 *    pages, not the process's (tests/rxe/cuda_double.rs shows it on every test kind).
 *    The double sees registrations by interposing on rdma-core's ibv_cmd_reg_mr /
 *    ibv_cmd_dereg_mr, which the provider (librxe) calls for every ibv_reg_mr: that needs the
 *    double in the global scope, i.e. LD_PRELOAD=libcuda-double.so (the rxe tests set it; the
 *    prototype is rdma-core's libibverbs/driver.h, unchanged from v17 to v60). cuInit logs
 *    "hooks on" or "hooks off".
 *  - cuMemFree while a registration still covers the buffer is logged ("free-while-registered"):
 *    the tests fail on it.
 *  - cuMemGetHandleForAddressRange checks what cuda.h asks: dptr and size aligned to the host
 *    page, inside one allocation, and CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED asked first.
 *
 * Knobs (environment, read at each call):
 *   FABCHECK_CUDA_DOUBLE_FAIL   init | alloc | export_ok | export_error  (cuInit fails with
 *                               CUDA_ERROR_NO_DEVICE, cuMemAlloc with CUDA_ERROR_OUT_OF_MEMORY; the
 *                               dma-buf export "succeeds" with a memfd, to drive the dma-buf branch
 *                               (rxe refuses to register it, as it refuses any dma-buf), or fails
 *                               with CUDA_ERROR_OUT_OF_MEMORY, an answer that is not "not supported")
 *   FABCHECK_CUDA_DOUBLE_MISALIGN  N: cuMemAlloc returns pointers N bytes past a page boundary
 *                               (cuMemAlloc guarantees 256-byte alignment only; default 0)
 *   FABCHECK_CUDA_DOUBLE_DMABUF_ATTR  0: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED answers 0, and an
 *                               export asked anyway is logged ("export-despite-attr-0") and
 *                               answered CUDA_ERROR_INVALID_VALUE (default 1)
 *   FABCHECK_CUDA_DOUBLE_PROTECT  0: leave registered memory readable (default 1: PROT_NONE once
 *                               registered); early: PROT_NONE from the allocation on, so the kernel
 *                               cannot pin it either, as rxe cannot pin a real GPU address
 *                               (ibv_reg_mr fails with EFAULT: a GPU-registration error)
 *   FABCHECK_CUDA_DOUBLE_BUS_IDS  comma-separated PCI addresses, one GPU each (default one GPU,
 *                               0000:00:00.0)
 *   FABCHECK_CUDA_DOUBLE_LOG    a file each call appends one line to (ctx-create, retain, alloc,
 *                               register, protect, dereg, free, ...), so tests can check the order;
 *                               "%p" in it is replaced by the process id (one log per agent).
 * Prototypes: NVIDIA's cuda.h (CUDA 12).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define MAX 64

static int initialised;
static int retained[MAX];
static char contexts[MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* One allocation: its mapping and the pointer handed out. */
struct allocation {
	char *map;
	size_t map_len;
	CUdeviceptr ptr;
	size_t len;
	int protected_;
};
static struct allocation allocations[MAX];

/* One registration the provider made (through ibv_cmd_reg_mr), by its verbs_mr. */
struct registration {
	void *vmr;
	uintptr_t addr;
	size_t len;
};
static struct registration registrations[MAX];

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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

static long number(const char *name, long fallback)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : fallback;
}

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
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
	while (n < MAX && bus_id(n, buf, sizeof buf))
		n++;
	return n;
}

/*
 * Whether the double is in the global scope (LD_PRELOAD), so the provider's calls reach it:
 * the main program's handle searches only the global scope (dlopen(3)); RTLD_DEFAULT from here
 * would also search the double's own local scope and always find itself.
 */
int ibv_cmd_reg_mr(void *pd, void *addr, size_t length, uint64_t hca_va, int access, void *vmr, void *cmd, size_t cmd_size,
		   void *resp, size_t resp_size);
static int hooked(void)
{
	void *global = dlopen(NULL, RTLD_NOW);
	return global && dlsym(global, "ibv_cmd_reg_mr") == (void *)ibv_cmd_reg_mr;
}

CUresult cuInit(unsigned int flags)
{
	logline("cuInit %u", flags);
	logline("hooks %s", hooked() ? "on" : "off");
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

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice dev)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= count())
		return CUDA_ERROR_INVALID_DEVICE;
	if (attribute != CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
		return CUDA_ERROR_INVALID_VALUE;
	*value = number("FABCHECK_CUDA_DOUBLE_DMABUF_ATTR", 1) != 0;
	logline("attr dmabuf %d", *value);
	return CUDA_SUCCESS;
}

/* A primary context: created when its count goes 0 -> 1, destroyed when it falls back to 0. */
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= count())
		return CUDA_ERROR_INVALID_DEVICE;
	if (retained[dev]++ == 0)
		logline("ctx-create %d", dev);
	*ctx = &contexts[dev];
	logline("retain %d", dev);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (dev < 0 || dev >= MAX || retained[dev] == 0)
		return CUDA_ERROR_INVALID_DEVICE;
	logline("release %d", dev);
	if (--retained[dev] == 0)
		logline("ctx-destroy %d", dev);
	return CUDA_SUCCESS;
}

static __thread CUcontext current;

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	if (ctx && (ctx < (void *)&contexts[0] || ctx >= (void *)&contexts[MAX] || retained[(char *)ctx - contexts] == 0))
		return CUDA_ERROR_INVALID_VALUE;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t len)
{
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (knob("alloc") || len == 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	size_t misalign = (size_t)number("FABCHECK_CUDA_DOUBLE_MISALIGN", 0);
	if (misalign % 256 != 0 || misalign >= page())
		return CUDA_ERROR_INVALID_VALUE; /* a knob no driver could give */
	size_t map_len = (len + misalign + page() - 1) / page() * page();
	const char *protect = getenv("FABCHECK_CUDA_DOUBLE_PROTECT");
	int early = protect && strcmp(protect, "early") == 0;
	char *map = mmap(NULL, map_len, early ? PROT_NONE : PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	int slot = 0;
	while (slot < MAX && allocations[slot].map)
		slot++;
	if (slot == MAX) {
		pthread_mutex_unlock(&lock);
		munmap(map, map_len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	allocations[slot] = (struct allocation){ map, map_len, (CUdeviceptr)(uintptr_t)(map + misalign), len, early };
	*ptr = allocations[slot].ptr;
	pthread_mutex_unlock(&lock);
	logline("alloc %zu at page offset %zu%s", len, misalign, early ? " unpinnable" : "");
	return CUDA_SUCCESS;
}

/* The allocation holding [addr, addr + len) within its mapping, or NULL. Under the lock. */
static struct allocation *mapping_of(uintptr_t addr, size_t len)
{
	for (int i = 0; i < MAX; i++) {
		struct allocation *a = &allocations[i];
		if (a->map && addr >= (uintptr_t)a->map && addr + len <= (uintptr_t)a->map + a->map_len)
			return a;
	}
	return NULL;
}

static int registered(uintptr_t addr, size_t len)
{
	for (int i = 0; i < MAX; i++)
		if (registrations[i].vmr && registrations[i].addr < addr + len && addr < registrations[i].addr + registrations[i].len)
			return 1;
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr ptr)
{
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&lock);
	struct allocation *a = NULL;
	for (int i = 0; i < MAX; i++)
		if (allocations[i].map && allocations[i].ptr == ptr)
			a = &allocations[i];
	if (!a) {
		pthread_mutex_unlock(&lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (registered((uintptr_t)a->map, a->map_len))
		logline("free-while-registered %#llx", ptr);
	munmap(a->map, a->map_len);
	*a = (struct allocation){ 0 };
	pthread_mutex_unlock(&lock);
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
	if (type != 1 /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */ || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (number("FABCHECK_CUDA_DOUBLE_DMABUF_ATTR", 1) == 0) {
		/* cuda.h: "users are expected to query for dma_buf support ... before calling this API". */
		logline("export-despite-attr-0");
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* cuda.h: dptr and size "Must be aligned to host page size". */
	if (ptr % page() != 0 || len % page() != 0) {
		logline("export misaligned %#llx %zu", ptr, len);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&lock);
	int inside = mapping_of((uintptr_t)ptr, len) != NULL;
	pthread_mutex_unlock(&lock);
	if (!inside) {
		logline("export outside an allocation %#llx %zu", ptr, len);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (knob("export_error")) {
		logline("export failed");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
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
	case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/*
 * rdma-core's provider-side registration calls (libibverbs/driver.h), interposed when the
 * double is preloaded. The real ones are libibverbs' own, looked up through its handle (the
 * double is not in its scope, so that finds libibverbs' definition, not this one).
 */
static void *real(const char *name)
{
	void *verbs = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *f = verbs ? dlsym(verbs, name) : NULL;
	if (!f) {
		fprintf(stderr, "cuda double: cannot find libibverbs' %s\n", name);
		abort();
	}
	return f;
}

int ibv_cmd_reg_mr(void *pd, void *addr, size_t length, uint64_t hca_va, int access, void *vmr, void *cmd, size_t cmd_size,
		   void *resp, size_t resp_size)
{
	int (*f)(void *, void *, size_t, uint64_t, int, void *, void *, size_t, void *, size_t) =
		(int (*)(void *, void *, size_t, uint64_t, int, void *, void *, size_t, void *, size_t))real("ibv_cmd_reg_mr");
	int rc = f(pd, addr, length, hca_va, access, vmr, cmd, cmd_size, resp, resp_size);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&lock);
	struct allocation *a = mapping_of((uintptr_t)addr, length);
	if (a) {
		for (int i = 0; i < MAX; i++)
			if (!registrations[i].vmr) {
				registrations[i] = (struct registration){ vmr, (uintptr_t)addr, length };
				break;
			}
		/* Pinned now: the NIC reaches the pages, the CPU no longer does. */
		if (number("FABCHECK_CUDA_DOUBLE_PROTECT", 1) != 0 && !a->protected_ && mprotect(a->map, a->map_len, PROT_NONE) == 0)
			a->protected_ = 1;
	}
	pthread_mutex_unlock(&lock);
	if (a)
		logline("register %zu%s", length, a->protected_ ? " protect" : "");
	return rc;
}

int ibv_cmd_dereg_mr(void *vmr)
{
	int (*f)(void *) = (int (*)(void *))real("ibv_cmd_dereg_mr");
	int rc = f(vmr);
	if (rc != 0)
		return rc;
	int found = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX; i++)
		if (registrations[i].vmr == vmr) {
			registrations[i] = (struct registration){ 0 };
			found = 1;
		}
	pthread_mutex_unlock(&lock);
	if (found)
		logline("dereg");
	return rc;
}
