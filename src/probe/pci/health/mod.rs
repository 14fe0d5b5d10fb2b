//! PCIe health of a node, as plain data (issue #44): the kernel's AER counters of every RDMA
//! NIC, GPU and bridge on the paths between them (`aer`), mlx5's PCIe counters of `ethtool -S`
//! (`mlx5`) and `devlink health` reporters (`devlink`). The parsers are pure; the read (over
//! the PCI tree) is `probe::pci::health`, the judgement `diagnose::pcie_rules` (`pcie.aer`,
//! `devlink.health`).

pub mod aer;
pub mod devlink;
pub mod mlx5;
pub mod read;

use aer::{AerFile, AerSeverity};
use serde::Serialize;
use std::collections::BTreeMap;

/// What a function is to the checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Role {
    /// An RDMA NIC's function, by its device name (`mlx5_0`; the BDF when nothing names it).
    Nic {
        name: String,
    },
    Gpu,
    /// A bridge on the way from a NIC or GPU to its root complex; `below` names the NICs and
    /// GPUs whose path crosses it, `link_of` those whose own link ends at it (its upstream
    /// port: what the link's errors are seen from, the other side).
    Bridge {
        below: Vec<String>,
        link_of: Vec<String>,
    },
}

/// The PCIe health of one function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionHealth {
    pub bdf: String,
    pub role: Role,
    /// The `aer_dev_*` files read; empty when the function has none (no AER capability, a
    /// kernel before 4.19, a bundle that did not capture them).
    pub aer: BTreeMap<AerSeverity, AerFile>,
    /// Files that exist but could not be read: `(path, why)`.
    pub unreadable: Vec<(String, String)>,
    /// mlx5's PCIe counters, from the `ethtool -S` of the NIC's netdev (`None` where there is
    /// none or the driver prints none), and the netdev they were read from.
    pub mlx5: Option<(String, mlx5::Mlx5Pcie)>,
}

impl FunctionHealth {
    pub fn label(&self) -> String {
        match &self.role {
            Role::Nic { name } if name != &self.bdf => format!("{name} ({})", self.bdf),
            Role::Nic { .. } => format!("NIC {}", self.bdf),
            Role::Gpu => format!("GPU {}", self.bdf),
            Role::Bridge { .. } => format!("bridge {}", self.bdf),
        }
    }

    pub fn count(&self, severity: AerSeverity) -> Option<u64> {
        self.aer.get(&severity).map(AerFile::count)
    }
}

/// What `devlink health` said, or why it was not read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum DevlinkRead {
    Read(Vec<devlink::Reporter>),
    /// Not read: the tool is missing or failed, or the bundle has no capture of it.
    Unread(String),
    /// Not looked at (a bundle without `tools/`, which predates the captures).
    NotLooked,
}

/// Everything `pcie.aer` and `devlink.health` judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcieHealth {
    /// NICs first, then GPUs, then bridges, each in BDF order.
    pub functions: Vec<FunctionHealth>,
    /// Each RDMA device and its PCI function (`mlx5_0`, `0000:18:00.0`): devlink's handles are
    /// named by function.
    pub nics: Vec<(String, String)>,
    pub devlink: DevlinkRead,
    /// Whether the source holds a PCI tree (`bus/pci/devices`); without one only the NICs'
    /// own folders were looked in.
    pub tree: bool,
    /// The live node, not a bundle: a bundle without any AER file predates their capture and
    /// is judged without them; a live node without them has a kernel that keeps none.
    pub live: bool,
    /// Seconds since boot, live (`/proc/uptime`): the span the lifetime counters cover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<u64>,
}

/// What one counter did between two reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Rise {
    Same,
    Rose(u64),
    /// Lower at the end: cleared (a driver reload or a hot reset) during the window.
    Reset,
}

pub fn rise(start: u64, end: u64) -> Rise {
    match end.cmp(&start) {
        std::cmp::Ordering::Equal => Rise::Same,
        std::cmp::Ordering::Greater => Rise::Rose(end - start),
        std::cmp::Ordering::Less => Rise::Reset,
    }
}

/// A soak window over one function: what each AER file and mlx5 counter did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionWindow {
    pub aer: BTreeMap<AerSeverity, Rise>,
    /// Rows that rose, per file, largest first.
    pub rows: BTreeMap<AerSeverity, Vec<(String, u64)>>,
    pub mlx5: Vec<(&'static str, Rise)>,
}

/// The window of `end` against `start`, for a function read at both ends.
pub fn window(start: &FunctionHealth, end: &FunctionHealth) -> FunctionWindow {
    let mut aer = BTreeMap::new();
    let mut rows = BTreeMap::new();
    for (severity, file) in &end.aer {
        let Some(before) = start.aer.get(severity) else { continue };
        aer.insert(*severity, rise(before.count(), file.count()));
        let mut risen: Vec<(String, u64)> = file
            .rows
            .iter()
            .filter_map(|(row, n)| match rise(before.row(row)?, *n) {
                Rise::Rose(by) => Some((row.clone(), by)),
                _ => None,
            })
            .collect();
        risen.sort_by_key(|r| std::cmp::Reverse(r.1));
        rows.insert(*severity, risen);
    }
    let mut mlx5 = Vec::new();
    if let (Some((_, a)), Some((_, b))) = (&start.mlx5, &end.mlx5) {
        let before = a.counters();
        for (name, value) in b.counters() {
            if let Some((_, v0)) = before.iter().find(|(n, _)| *n == name) {
                mlx5.push((name, rise(*v0, value)));
            }
        }
    }
    FunctionWindow { aer, rows, mlx5 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nic(cor: &str, si: Option<u64>) -> FunctionHealth {
        let mut aer = BTreeMap::new();
        aer.insert(AerSeverity::Correctable, aer::parse(cor));
        aer.insert(AerSeverity::NonFatal, aer::parse("CmpltTO 0\nTOTAL_ERR_NONFATAL 0\n"));
        let counters = mlx5::Mlx5Pcie { rx_signal_integrity: si, ..Default::default() };
        FunctionHealth {
            bdf: "0000:3b:00.0".into(),
            role: Role::Nic { name: "mlx5_0".into() },
            aer,
            unreadable: vec![],
            mlx5: Some(("ens1f0np0".into(), counters)),
        }
    }

    #[test]
    fn a_window_names_what_rose() {
        let start = nic("RxErr 1\nBadTLP 10\nTOTAL_ERR_COR 11\n", Some(5));
        let end = nic("RxErr 1\nBadTLP 52\nTOTAL_ERR_COR 53\n", Some(9));
        let w = window(&start, &end);
        assert_eq!(w.aer[&AerSeverity::Correctable], Rise::Rose(42));
        assert_eq!(w.aer[&AerSeverity::NonFatal], Rise::Same);
        assert_eq!(w.rows[&AerSeverity::Correctable], vec![("BadTLP".to_string(), 42)]);
        assert_eq!(w.mlx5, vec![("rx_pci_signal_integrity", Rise::Rose(4))]);
        let cleared = window(&end, &start);
        assert_eq!(cleared.aer[&AerSeverity::Correctable], Rise::Reset);
        assert_eq!(end.label(), "mlx5_0 (0000:3b:00.0)");
    }
}
