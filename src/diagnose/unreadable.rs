//! Which inputs of the rules could not be read (the inventory's `unreadable` files, each
//! already a `sysfs.unreadable` finding): a check whose input is among them is `skip`, not
//! judged on the empty value read in its place (a FIFO for `state` is not a cabling fault; an
//! oversized `fw_ver` is not a firmware mismatch).

use crate::probe::Inventory;
use std::collections::HashSet;

/// The unreadable files, by what they describe.
#[derive(Debug, Default)]
pub(super) struct Unread {
    /// (device, port, attribute) for `class/infiniband/DEV/ports/N/ATTR...`.
    port: HashSet<(String, u32, String)>,
    /// (device, attribute) for `class/infiniband/DEV/ATTR...` (`fw_ver`, `device/current_link_width`).
    device: HashSet<(String, String)>,
    /// (netdev, attribute) for `class/net/IF/ATTR...`.
    netdev: HashSet<(String, String)>,
}

impl Unread {
    pub(super) fn of(inventory: &Inventory) -> Unread {
        let mut unread = Unread::default();
        for u in &inventory.unreadable {
            let parts: Vec<&str> = u.path.split('/').filter(|p| !p.is_empty()).collect();
            let class = parts.windows(2).rposition(|w| w[0] == "class" && (w[1] == "infiniband" || w[1] == "net"));
            let Some(i) = class else { continue };
            let (kind, rest) = (parts[i + 1], &parts[i + 2..]);
            let Some((&name, rest)) = rest.split_first() else { continue };
            match (kind, rest) {
                ("infiniband", ["ports", port, attr @ ..]) if !attr.is_empty() => {
                    if let Ok(port) = port.parse() {
                        unread.port.insert((name.to_string(), port, attr.join("/")));
                    }
                }
                ("infiniband", attr) if !attr.is_empty() => {
                    unread.device.insert((name.to_string(), attr.join("/")));
                }
                ("net", attr) if !attr.is_empty() => {
                    unread.netdev.insert((name.to_string(), attr.join("/")));
                }
                _ => {}
            }
        }
        unread
    }

    /// The first of `attrs` of port `device/port` that could not be read.
    pub(super) fn port<'a>(&self, device: &str, port: u32, attrs: &[&'a str]) -> Option<&'a str> {
        attrs.iter().copied().find(|a| self.port.contains(&(device.to_string(), port, a.to_string())))
    }

    /// Whether any file under `dir` of port `device/port` (its `gids/`, say) could not be read.
    pub(super) fn port_under(&self, device: &str, port: u32, dir: &str) -> bool {
        self.port.iter().any(|(d, p, a)| d == device && *p == port && a.starts_with(dir))
    }

    pub(super) fn device<'a>(&self, device: &str, attrs: &[&'a str]) -> Option<&'a str> {
        attrs.iter().copied().find(|a| self.device.contains(&(device.to_string(), a.to_string())))
    }

    pub(super) fn netdev<'a>(&self, netdev: Option<&str>, attrs: &[&'a str]) -> Option<&'a str> {
        let netdev = netdev?;
        attrs.iter().copied().find(|a| self.netdev.contains(&(netdev.to_string(), a.to_string())))
    }
}

/// The words of a skipped row: which file, and where the finding is.
pub(super) fn why(file: &str) -> String {
    format!("{file} could not be read (see sysfs.unreadable)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::model::Unreadable;

    #[test]
    fn paths_are_sorted_by_what_they_describe() {
        let mut inv = Inventory::default();
        for p in [
            "/b/class/infiniband/mlx5_0/ports/1/state",
            "/b/class/infiniband/mlx5_0/ports/1/gids/3",
            "/b/class/infiniband/mlx5_1/fw_ver",
            "/sys/class/infiniband/mlx5_1/device/current_link_width",
            "/b/class/net/ens2np0/mtu",
            "/b/class/infiniband",
        ] {
            inv.unreadable.push(Unreadable { path: p.into(), error: "x".into() });
        }
        let u = Unread::of(&inv);
        assert_eq!(u.port("mlx5_0", 1, &["phys_state", "state"]), Some("state"));
        assert_eq!(u.port("mlx5_0", 2, &["state"]), None);
        assert!(u.port_under("mlx5_0", 1, "gids/"));
        assert!(!u.port_under("mlx5_0", 1, "counters/"));
        assert_eq!(u.device("mlx5_1", &["fw_ver"]), Some("fw_ver"));
        assert_eq!(u.device("mlx5_1", &["device/current_link_speed", "device/current_link_width"]), Some("device/current_link_width"));
        assert_eq!(u.device("mlx5_0", &["fw_ver"]), None);
        assert_eq!(u.netdev(Some("ens2np0"), &["operstate", "mtu"]), Some("mtu"));
        assert_eq!(u.netdev(None, &["mtu"]), None);
    }
}
