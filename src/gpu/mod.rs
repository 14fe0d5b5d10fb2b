//! GPU node readiness: what GPUDirect RDMA needs from the PCI tree and the kernel, read from
//! sysfs. `pci` reads (bounded, named failures), `config` parses config-space bytes, and
//! `topology` places GPUs against NICs, `bound` says what a GPU's link carries by design; the rules that judge them are in
//! `diagnose::gpu_rules`. See docs/gpu.md.

pub mod bound;
pub mod choice;
pub mod rails;
pub mod table;
pub mod topology;
