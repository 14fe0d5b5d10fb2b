//! The inventory of RDMA devices and ports, from live verbs or from a sysfs tree.

pub mod bond;
pub mod bundle;
pub mod capacity;
pub mod catype;
pub mod counters;
pub mod facts;
pub mod firmware;
pub mod host;
pub mod kernel_log;
pub mod live;
pub mod local_mads;
pub mod model;
pub mod netdev;
pub mod node;
pub mod pci;
pub mod phy;
pub mod port_fill;
pub mod qos;
pub mod soak;
pub mod stack;
pub mod sysfs;
pub mod tool;
pub mod tree;
pub mod window;

pub use model::{Device, Gid, Inventory, NetdevState, Port};

use fabcheck_verbs::VerbsError;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("no RDMA devices found")]
    NoDevices,
    #[error("libibverbs cannot list devices: {0}")]
    NoVerbs(std::io::Error),
    /// libibverbs itself cannot be loaded: rdma-core is not installed (or not on the loader's path).
    #[error("rdma-core (libibverbs) is not installed: {soname} cannot be loaded ({detail})")]
    NoRdmaCore { soname: &'static str, detail: String },
    #[error("no RDMA device named '{name}'")]
    NoSuchDevice { name: String, present: Vec<String> },
    #[error("{device} has no port {port}")]
    NoSuchPort { device: String, port: u32, present: Vec<u32> },
    #[error("{0}")]
    Verbs(#[from] VerbsError),
    #[error("sysfs tree {0} holds no class/infiniband devices")]
    EmptySysfs(String),
}

impl ProbeError {
    fn from_device_list(err: VerbsError) -> Self {
        match err {
            VerbsError::DeviceList { source } => ProbeError::NoVerbs(source),
            VerbsError::Library { soname, detail } => ProbeError::NoRdmaCore { soname, detail },
            other => ProbeError::Verbs(other),
        }
    }

    /// What the operator should do next.
    pub fn remedy(&self) -> String {
        match self {
            ProbeError::NoDevices | ProbeError::NoVerbs(_) => {
                "load the driver (mlx5_ib, or rdma_rxe via soft-roce-setup.sh), install the rdma-core provider \
                 (ibverbs-providers / libibverbs1), and in a container pass /dev/infiniband through"
                    .into()
            }
            ProbeError::NoRdmaCore { .. } => fabcheck_verbs::INSTALL_HINT.into(),
            ProbeError::NoSuchDevice { present, .. } => {
                if present.is_empty() {
                    "no devices are present; run `fabcheck devices` to see why".into()
                } else {
                    format!("use one of: {}", present.join(", "))
                }
            }
            ProbeError::NoSuchPort { present, .. } => {
                format!("use one of ports {}", present.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))
            }
            ProbeError::Verbs(VerbsError::OpenDevice { .. }) => "check permissions on /dev/infiniband/uverbs* and that ib_uverbs is loaded".into(),
            ProbeError::Verbs(_) => "run `fabcheck check` for the node's bring-up checklist".into(),
            ProbeError::EmptySysfs(_) => "point --sysfs-root at the folder that holds class/infiniband (make one with `fabcheck bundle DIR`)".into(),
        }
    }
}

/// Where the inventory comes from.
#[derive(Debug, Clone)]
pub enum Source {
    Live,
    Sysfs(std::path::PathBuf),
}

/// Builds the inventory from `source`, optionally only device `only`.
pub fn inventory(source: &Source, only: Option<&str>) -> Result<Inventory, ProbeError> {
    match source {
        Source::Live => live::inventory(only, true),
        Source::Sysfs(root) => sysfs_inventory(root, only),
    }
}

/// The live inventory a test prepares from: without the lossless setup (`dcb`), which only
/// `check` judges.
pub fn test_inventory(only: Option<&str>) -> Result<Inventory, ProbeError> {
    live::inventory(only, false)
}

fn sysfs_inventory(root: &Path, only: Option<&str>) -> Result<Inventory, ProbeError> {
    let tree = sysfs::SysfsRoot::at(root);
    let names = tree.device_names();
    if names.is_empty() {
        return Err(ProbeError::EmptySysfs(root.display().to_string()));
    }
    let mut inv = tree.inventory();
    if let Some(name) = only {
        if !names.iter().any(|n| n == name) {
            return Err(ProbeError::NoSuchDevice { name: name.to_string(), present: names });
        }
        inv.devices.retain(|d| d.name == name);
    }
    Ok(inv)
}
