//! Every counter file of a port (`counters/` and `hw_counters/`), each read bounded and through
//! the tree (a bundle's link out of it is refused, as every bundle read is): what the exporter
//! exports as counter families, whatever the driver names them.

use super::tree::SysfsRoot;
use std::path::Path;

/// Counter files read per folder at most (mlx5 has about 60 in `hw_counters/`).
const MAX_COUNTER_FILES: usize = 512;

/// Which folder of `ports/N/` a counter comes from: outcome's, so a printer keys it too.
pub use crate::outcome::CounterDir;

/// The counter files of one port, by folder and name, each a number (a file that is not one,
/// or cannot be read, is left out), in name order.
pub fn read(tree: &SysfsRoot, device: &str, port: u32) -> Vec<(CounterDir, String, u64)> {
    let mut values = Vec::new();
    if !crate::model::valid_device_name(device) {
        return values;
    }
    let port_dir = Path::new("class/infiniband").join(device).join("ports").join(port.to_string());
    for dir in [CounterDir::Ibta, CounterDir::Hardware] {
        let folder = port_dir.join(dir.folder());
        let mut names: Vec<String> = tree.list_rel(&folder).into_iter().filter_map(|n| n.into_string().ok()).collect();
        names.sort();
        names.truncate(MAX_COUNTER_FILES);
        for name in names.into_iter().filter(|n| !n.contains('/') && !n.starts_with('.')) {
            if let Some(value) = tree.read_rel_path(&folder.join(&name), crate::sys::fs::SYSFS_CAP).and_then(|t| t.trim().parse::<u64>().ok()) {
                values.push((dir, name, value));
            }
        }
    }
    values
}
