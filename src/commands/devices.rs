use crate::cli::DevicesArgs;
use crate::error::{Failure, Outcome, Stop};
use crate::model::valid_device_name;
use crate::probe::{self, Source};

pub fn run(args: &DevicesArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    if let Some(name) = &args.device {
        if !valid_device_name(name) {
            return Err(Failure::usage(format!("'{name}' is not a device name")).into());
        }
    }
    let origin = super::bundle::origin(args.sysfs_root.as_deref())?;
    let source = args.sysfs_root.clone().map_or(Source::Live, Source::Sysfs);
    let mut inv = probe::inventory(&source, args.device.as_deref()).map_err(Failure::from)?;
    // Each adapter's firmware configuration (`fw_config`), when it can be read.
    probe::stack::fw_query::attach(&mut inv, &source);
    let human = !(args.json || out.machine());
    // GPU affinity, only in the human view, only on nodes (or bundles) with NVIDIA GPUs.
    let gpu_table = human
        .then(|| crate::probe::pci::read(args.sysfs_root.as_deref().unwrap_or(std::path::Path::new("/sys"))))
        .flatten()
        .map(|tree| crate::gpu::table::affinity_table(&tree, &crate::gpu::topology::pair(&tree)));
    let view = super::devices_doc::DevicesReport { doc: super::devices_doc::json_doc(&inv), inventory: &inv, gpu_table, origin };
    Ok(out.deliver(&view, args.json)?)
}
