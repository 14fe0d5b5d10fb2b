//! On a machine with an NVIDIA GPU: the real driver (`libcuda.so.1`) initialises, allocates,
//! exports dma-buf (or says it cannot: an outcome to report, not a failure) and frees. No RDMA
//! NIC needed. Elsewhere it prints that it skipped and why — the only skip in fabcheck's
//! tests. Run alone with `cargo test -p fabcheck-verbs --test cuda_gpu -- --nocapture`.

use fabcheck_verbs::{cuda_available, cuda_devices, DeviceBuffer, DmabufExport, Gpu, VerbsError};

#[test]
fn gpu_only_init_alloc_dmabuf_export_free() {
    // The real driver, never a double this process may have inherited.
    std::env::remove_var("FABCHECK_CUDA_LIBRARY");
    match cuda_available() {
        Err(VerbsError::CudaLibrary { library, detail }) => {
            println!("SKIPPED gpu_only_init_alloc_dmabuf_export_free: no CUDA driver here ({library}: {detail})");
            return;
        }
        Err(VerbsError::Cuda { call: "cuInit", name, .. }) if name == "CUDA_ERROR_NO_DEVICE" => {
            println!("SKIPPED gpu_only_init_alloc_dmabuf_export_free: the driver sees no GPU here (cuInit: {name})");
            return;
        }
        // A driver that loads and then fails is a failure of this machine, not a skip.
        Err(e) => panic!("the CUDA driver loads but fails: {e}"),
        Ok(()) => {}
    }
    let gpus = cuda_devices().expect("list the GPUs");
    assert!(!gpus.is_empty(), "cuInit succeeded but no GPU is listed");
    for g in &gpus {
        assert!(g.pci_bus_id.len() >= 12 && g.pci_bus_id.contains(':'), "a PCI address: {g:?}");
        println!("GPU cuda:{} at {}", g.ordinal, g.pci_bus_id);
    }
    let gpu = Gpu::open(0).expect("retain GPU 0's primary context");
    let buffer = DeviceBuffer::new(&gpu, 8 << 20).expect("allocate 8 MiB of GPU memory");
    assert!(buffer.device_addr() != 0 && buffer.len() >= 8 << 20);
    match buffer.export_dmabuf().expect("the export call itself must not error") {
        DmabufExport::Fd { fd, offset } => {
            println!("dma-buf export: descriptor {fd:?}, buffer at offset {offset} (ibv_reg_dmabuf_mr can register this GPU's memory)")
        }
        DmabufExport::Unsupported(why) => println!("dma-buf export refused by this platform: {why} (peer memory, nvidia_peermem, is the path here)"),
    }
    drop(buffer);
    drop(gpu);
    // A second round: the GPU stays open (one context for the process's life), so this is the
    // same context and no new one is made.
    let again = DeviceBuffer::new(&Gpu::open(0).unwrap(), 4096).expect("allocate again on the kept context");
    drop(again);
}
