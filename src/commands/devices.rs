use crate::cli::DevicesArgs;
use crate::error::{Failure, Outcome};
use crate::probe::{self, Source};
use crate::report;
use crate::spec::valid_device_name;

pub fn run(args: &DevicesArgs) -> Result<Outcome, Failure> {
    if let Some(name) = &args.device {
        if !valid_device_name(name) {
            return Err(Failure::usage(format!("'{name}' is not a device name")));
        }
    }
    let source = args.sysfs_root.clone().map_or(Source::Live, Source::Sysfs);
    let mut inv = probe::inventory(&source, args.device.as_deref())?;
    // Each adapter's firmware configuration (`fw_config`), when it can be read.
    probe::fw_query::attach(&mut inv, &source);
    if args.json || report::machine() {
        report::print_json(&report::devices::json_doc(&inv));
    } else {
        report::print_human(&report::devices::human(&inv));
        // GPU affinity, only on nodes (or bundles) with NVIDIA GPUs.
        if let Some(tree) = crate::gpu::pci::read(args.sysfs_root.as_deref().unwrap_or(std::path::Path::new("/sys"))) {
            report::print_human(&report::gpu::affinity_table(&tree, &crate::gpu::topology::pair(&tree)));
        }
    }
    Ok(Outcome::Pass)
}
