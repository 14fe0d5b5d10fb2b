//! Reads the PCI hierarchy from a sysfs tree (the live `/sys`, or a bundle laid out the same
//! way) into plain data: every function's place under its host bridge, its identity, its link
//! and its parsed config space; which RDMA device sits on which function; which GPU-related
//! modules are loaded.
//!
//! Sysfs is treated as untrusted input. Every read is bounded in size, only regular files are
//! opened (a FIFO in a bundle must not hang the run), and a symlink loop, an unreadable file
//! or a link pointing out of the tree becomes a [`Problem`] naming the file instead of a
//! silently missing device.

pub mod config;
pub mod health;

use crate::sys::fs::ReadError;
use config::ConfigSpace;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Most bytes read from a text attribute.
const TEXT_LIMIT: u64 = 256;
/// `/proc/driver/nvidia/params`: some 40 lines of `Name: value` (2 KiB); room for long registry strings.
const PARAMS_LIMIT: u64 = 64 << 10;
/// NVIDIA's PCI vendor ID.
pub const NVIDIA_VENDOR: u16 = 0x10de;
/// Class codes (base, sub) of NVIDIA GPUs: 3D controller, VGA controller.
pub const GPU_CLASSES: [u16; 2] = [0x0302, 0x0300];
/// Class codes (base, sub) of InfiniBand and Ethernet controllers, and Mellanox's vendor ID.
const INFINIBAND_CLASS: u32 = 0x0207;
const ETHERNET_CLASS: u32 = 0x0200;
const MELLANOX_VENDOR: u32 = 0x15b3;
/// Modules whose presence the GPU checks read from `module/`.
pub const GPU_MODULES: [&str; 4] = ["nvidia", "nvidia_peermem", "nv_peer_mem", "gdrdrv"];
/// The NVIDIA driver's parameters: `/proc/driver/nvidia/params` on a node, this path under a
/// bundle's root (`gpu.ibgda`).
pub const NVIDIA_PARAMS: &str = "proc/driver/nvidia/params";

/// One PCI function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Function {
    /// `0000:1a:00.0`.
    pub bdf: String,
    /// The host bridge it hangs off, as sysfs names it (`pci0000:15`).
    pub host_bridge: String,
    /// Bridges from the root port down to this function's parent, in order.
    pub chain: Vec<String>,
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// Class code as sysfs prints it (0x030200).
    pub class: Option<u32>,
    /// `None` when unknown; -1 (no NUMA information) is kept as the kernel writes it.
    pub numa_node: Option<i32>,
    pub link: SysfsLink,
    pub config: ConfigRead,
    /// The `config` file, relative to the tree's root, for messages.
    pub config_file: String,
}

/// The link attributes the kernel derives from Link Capabilities / Link Status.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SysfsLink {
    pub current_speed: Option<String>,
    pub current_width: Option<u32>,
    pub max_speed: Option<String>,
    pub max_width: Option<u32>,
}

/// What reading and parsing `config` gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ConfigRead {
    Parsed(ConfigSpace),
    /// No `config` file (some bundles leave it out).
    Missing,
    /// Not read: neither a GPU, nor a NIC, nor a bridge above one. Reading config space can
    /// wake a device from a low-power state, so only what the checks need is read.
    NotRead,
    /// Unreadable or malformed; the reason names the file.
    Bad(String),
}

impl ConfigRead {
    pub fn parsed(&self) -> Option<&ConfigSpace> {
        match self {
            ConfigRead::Parsed(space) => Some(space),
            _ => None,
        }
    }
}

/// An RDMA device and the PCI function it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nic {
    /// `mlx5_0`; the BDF itself when the bundle does not link the device to its function.
    pub name: String,
    pub bdf: String,
}

/// "mlx5_0 (0000:18:00.0)", or just the BDF when that is all that names the NIC.
pub fn nic_label(name: &str, bdf: &str) -> String {
    if name == bdf {
        bdf.to_string()
    } else {
        format!("{name} ({bdf})")
    }
}

/// Modules of the bundle's or node's `module/`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Modules {
    pub present: Vec<String>,
    /// `module/nvidia/taint`: "PO" for the proprietary driver, "O" for the open kernel modules.
    pub nvidia_taint: Option<String>,
    /// The driver's parameters (`/proc/driver/nvidia/params`; a bundle's `proc/driver/nvidia/params`).
    #[serde(skip)]
    pub nvidia_params: Option<String>,
    /// The running kernel's release (`uname -r`), where the node read knows it: dma-buf export
    /// of GPU memory needs 5.12 or later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// The (major, minor) of a kernel release (`5.15.0-105-generic` -> (5, 15)).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

impl Modules {
    pub fn has(&self, name: &str) -> bool {
        self.present.iter().any(|m| m == name)
    }
}

/// A file or link that could not be read as sysfs would give it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    /// What the unread file would have told.
    pub area: Area,
    /// The function concerned, when known.
    pub bdf: Option<String>,
    /// The file, relative to the tree's root.
    pub path: String,
    pub what: String,
}

/// Which check a [`Problem`] takes away from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Area {
    /// Where a function or NIC sits, or what it is (links, `vendor`, `class`, `numa_node`).
    Placement,
    /// A function's `*_link_*` attributes.
    Link,
    /// `module/`.
    Module,
}

/// Why a link could not be placed in the tree.
enum PlaceError {
    /// Nothing there.
    Missing,
    /// It resolves, but not to a PCI function folder under `devices/` (a captured plain folder).
    NotInTree(String),
    /// A loop, or a read that failed.
    Unreadable(String),
}

impl PlaceError {
    fn what(self) -> String {
        match self {
            PlaceError::Missing => "missing".into(),
            PlaceError::NotInTree(what) | PlaceError::Unreadable(what) => what,
        }
    }
}

/// The PCI side of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PciTree {
    pub functions: BTreeMap<String, Function>,
    pub nics: Vec<Nic>,
    /// `None` when the tree has no `module/` folder.
    pub modules: Option<Modules>,
    pub problems: Vec<Problem>,
}

impl PciTree {
    /// NVIDIA GPUs, in BDF order.
    pub fn gpus(&self) -> Vec<&Function> {
        self.functions.values().filter(|f| f.is_gpu()).collect()
    }

    pub fn function(&self, bdf: &str) -> Option<&Function> {
        self.functions.get(bdf)
    }
}

impl Function {
    /// The function's folder, relative to the tree's root (where its `config` is).
    pub fn dir(&self) -> &Path {
        Path::new(&self.config_file).parent().unwrap_or(Path::new(""))
    }

    pub fn is_gpu(&self) -> bool {
        let vendor = self.vendor.or_else(|| self.config.parsed().map(|c| c.vendor));
        let class = self.class.or_else(|| self.config.parsed().map(|c| c.class));
        vendor == Some(NVIDIA_VENDOR) && class.is_some_and(|c| GPU_CLASSES.contains(&((c >> 8) as u16)))
    }
}

/// Reads the tree rooted at `root` (`/sys`, or a bundle). `None` when it holds no
/// `bus/pci/devices` (every bundle captured before GPU support): the GPU checks are skipped.
pub fn read(root: &Path) -> Option<PciTree> {
    let listing = root.join("bus/pci/devices");
    if !listing.is_dir() {
        return None;
    }
    let mut tree = PciTree::default();
    let canon_root = match fs::canonicalize(root) {
        Ok(p) => p,
        Err(e) => {
            tree.problems.push(Problem { area: Area::Placement, bdf: None, path: root.display().to_string(), what: io_what(&e) });
            return Some(tree);
        }
    };
    let devices = canon_root.join("devices");
    // Every attribute and config file is read inside the tree (`sys::beneath`): a bundle's
    // `config -> /etc/shadow` is refused, not read.
    let reader = Reader { root: &canon_root, given: root, devices: &devices, tree: crate::sys::beneath::Tree::new(canon_root.clone()) };

    // Every listed function and every bridge above it, each read once from its real folder.
    let mut dirs: BTreeMap<String, (String, Vec<String>, PathBuf)> = BTreeMap::new();
    for name in sorted_entries(&listing) {
        let link = listing.join(&name);
        match reader.place(&link) {
            Ok(placed) => {
                for (i, bdf) in placed.chain.iter().enumerate() {
                    dirs.entry(bdf.clone()).or_insert_with(|| (placed.host_bridge.clone(), placed.chain[..i].to_vec(), placed.dirs[i].clone()));
                }
            }
            Err(e) => tree.problems.push(Problem {
                area: Area::Placement,
                bdf: Some(name.clone()),
                path: format!("bus/pci/devices/{name}"),
                what: e.what(),
            }),
        }
    }
    let ib = root.join("class/infiniband");
    for name in sorted_entries(&ib) {
        let link = ib.join(&name).join("device");
        match reader.place(&link) {
            Ok(placed) => {
                if let Some(bdf) = placed.chain.last() {
                    tree.nics.push(Nic { name, bdf: bdf.clone() });
                }
            }
            // A captured plain folder (or rxe's absent link) is not a PCI function here.
            Err(PlaceError::Missing) | Err(PlaceError::NotInTree(_)) => {}
            Err(e) => {
                tree.problems.push(Problem { area: Area::Placement, bdf: None, path: format!("class/infiniband/{name}/device"), what: e.what() })
            }
        }
    }

    // A bundle that copied class/infiniband/<dev>/device as a plain folder does not say which
    // function each device is: take the tree's RDMA-capable functions, named by BDF.
    if tree.nics.is_empty() && !sorted_entries(&ib).is_empty() {
        for (bdf, (_, _, dir)) in &dirs {
            if reader.maybe_rdma(dir) {
                tree.nics.push(Nic { name: bdf.clone(), bdf: bdf.clone() });
            }
        }
    }

    // Config spaces of GPUs, NICs and the bridges above them, and only on a node with GPUs.
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    let gpu_dirs: Vec<&String> = dirs.iter().filter(|(_, (_, _, dir))| reader.maybe_gpu(dir)).map(|(bdf, _)| bdf).collect();
    if !gpu_dirs.is_empty() {
        for bdf in gpu_dirs.into_iter().chain(tree.nics.iter().map(|n| &n.bdf)) {
            wanted.insert(bdf);
            if let Some((_, chain, _)) = dirs.get(bdf) {
                wanted.extend(chain.iter().map(String::as_str));
            }
        }
    }
    let mut functions = BTreeMap::new();
    for (bdf, (host_bridge, chain, dir)) in &dirs {
        let read_config = wanted.contains(bdf.as_str());
        let function = reader.function(bdf, host_bridge.clone(), chain.clone(), dir, read_config, &mut tree.problems);
        functions.insert(bdf.clone(), function);
    }
    tree.functions = functions;

    let module_dir = root.join("module");
    if module_dir.is_dir() {
        let present = GPU_MODULES.iter().filter(|m| module_dir.join(m).exists()).map(|m| m.to_string()).collect();
        let taint = match reader.text(&module_dir.join("nvidia/taint")) {
            Ok(text) => text,
            Err(e) => {
                tree.problems.push(Problem { area: Area::Module, bdf: None, path: "module/nvidia/taint".into(), what: e.reason() });
                None
            }
        };
        // /sys's parameters are under /proc; a bundle keeps them under its own root.
        let params = if root == Path::new("/sys") {
            crate::sys::fs::read_text(&Path::new("/").join(NVIDIA_PARAMS), PARAMS_LIMIT).map(Some)
        } else {
            reader.bounded(&root.join(NVIDIA_PARAMS), PARAMS_LIMIT).map(|b| b.map(|b| String::from_utf8_lossy(&b).into_owned()))
        };
        let nvidia_params = match params {
            Ok(text) => text,
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                tree.problems.push(Problem { area: Area::Module, bdf: None, path: NVIDIA_PARAMS.into(), what: e.reason() });
                None
            }
        };
        tree.modules = Some(Modules { present, nvidia_taint: taint, nvidia_params, kernel: None });
    }
    Some(tree)
}

struct Reader<'a> {
    /// The tree's root, canonical; `given` is the root as named (paths may be built on either).
    root: &'a Path,
    given: &'a Path,
    devices: &'a Path,
    tree: crate::sys::beneath::Tree,
}

/// Where a link lands: its host bridge and the BDFs from the root port down to it.
struct Placed {
    host_bridge: String,
    chain: Vec<String>,
    /// The real folder of each element of `chain`.
    dirs: Vec<PathBuf>,
}

impl Reader<'_> {
    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(self.root).unwrap_or(path).display().to_string()
    }

    /// Resolves a link to a function folder under `devices/pci*/`.
    fn place(&self, link: &Path) -> Result<Placed, PlaceError> {
        let target = fs::canonicalize(link).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => PlaceError::Missing,
            _ => PlaceError::Unreadable(io_what(&e)),
        })?;
        let Ok(inside) = target.strip_prefix(self.devices) else {
            return Err(PlaceError::NotInTree(format!("resolves to {}, outside {}", target.display(), self.devices.display())));
        };
        if !target.is_dir() {
            return Err(PlaceError::NotInTree(format!("{} is not a folder", target.display())));
        }
        let mut host_bridge = None;
        let mut chain = Vec::new();
        let mut dirs = Vec::new();
        let mut dir = self.devices.to_path_buf();
        for component in inside.components() {
            let Component::Normal(part) = component else { continue };
            let part = part.to_string_lossy();
            dir.push(part.as_ref());
            if is_bdf(&part) {
                if host_bridge.is_some() {
                    chain.push(part.to_string());
                    dirs.push(dir.clone());
                }
            } else if part.starts_with("pci") && part.contains(':') {
                // The first host bridge; a nested one (Intel VMD's pci10000:e0) is part of the path.
                host_bridge.get_or_insert_with(|| part.to_string());
            }
        }
        match host_bridge {
            Some(host_bridge) if !chain.is_empty() && target.file_name().is_some_and(|n| is_bdf(&n.to_string_lossy())) => {
                Ok(Placed { host_bridge, chain, dirs })
            }
            _ => Err(PlaceError::NotInTree(format!("{} is not devices/pci*/.../<domain:bus:dev.fn>", self.relative(&target)))),
        }
    }

    /// Whether a function folder may be an NVIDIA GPU, from its `vendor` and `class` (when
    /// they cannot be read, it may).
    fn maybe_gpu(&self, dir: &Path) -> bool {
        let hex = |file: &str| self.text(&dir.join(file)).ok().flatten().and_then(|t| parse_hex(&t));
        let vendor = hex("vendor").map(|v| v == u32::from(NVIDIA_VENDOR)).unwrap_or(true);
        let class = hex("class").map(|c| GPU_CLASSES.contains(&((c >> 8) as u16))).unwrap_or(true);
        vendor && class
    }

    /// Whether a function folder is an InfiniBand controller or a Mellanox/NVIDIA Ethernet
    /// function (RoCE), from `class` and `vendor`.
    fn maybe_rdma(&self, dir: &Path) -> bool {
        let hex = |file: &str| self.text(&dir.join(file)).ok().flatten().and_then(|t| parse_hex(&t));
        matches!((hex("vendor"), hex("class").map(|c| c >> 8)), (_, Some(INFINIBAND_CLASS)) | (Some(MELLANOX_VENDOR), Some(ETHERNET_CLASS)))
    }

    fn function(&self, bdf: &str, host_bridge: String, chain: Vec<String>, dir: &Path, read_config: bool, problems: &mut Vec<Problem>) -> Function {
        let mut read = |file: &str, area: Area| match self.text(&dir.join(file)) {
            Ok(v) => v,
            Err(e) => {
                problems.push(Problem { area, bdf: Some(bdf.to_string()), path: self.relative(&dir.join(file)), what: e.reason() });
                None
            }
        };
        let mut text = |file: &str| read(file, Area::Placement);
        let vendor = text("vendor").and_then(|t| parse_hex(&t)).and_then(|v| u16::try_from(v).ok());
        let device = text("device").and_then(|t| parse_hex(&t)).and_then(|v| u16::try_from(v).ok());
        let class = text("class").and_then(|t| parse_hex(&t));
        let numa_node = text("numa_node").and_then(|t| t.parse().ok());
        let link = SysfsLink {
            current_speed: read("current_link_speed", Area::Link),
            current_width: read("current_link_width", Area::Link).and_then(|t| t.parse().ok()),
            max_speed: read("max_link_speed", Area::Link),
            max_width: read("max_link_width", Area::Link).and_then(|t| t.parse().ok()),
        };
        let config_path = dir.join("config");
        let config = match if read_config { self.bounded(&config_path, config::EXTENDED_LEN as u64) } else { Ok(None) } {
            Ok(None) if !read_config => ConfigRead::NotRead,
            Ok(None) => ConfigRead::Missing,
            Ok(Some(bytes)) => match config::parse(&bytes) {
                Ok(space) => ConfigRead::Parsed(space),
                Err(defect) => ConfigRead::Bad(format!("{}: {defect}", self.relative(&config_path))),
            },
            Err(e) => ConfigRead::Bad(format!("{}: {}", self.relative(&config_path), e.reason())),
        };
        let config_file = self.relative(&config_path);
        Function { bdf: bdf.to_string(), host_bridge, chain, vendor, device, class, numa_node, link, config, config_file }
    }

    /// A text attribute, trimmed; `Ok(None)` when absent (as a failed read leaves it in a capture).
    fn text(&self, path: &Path) -> Result<Option<String>, ReadError> {
        Ok(self.bounded(path, TEXT_LIMIT)?.map(|b| String::from_utf8_lossy(&b).trim().to_string()))
    }

    /// At most `limit` bytes of regular file `path` (under the root), read inside the tree: a
    /// link out of it, or a `..` above it, is refused. `Ok(None)` when it does not exist.
    fn bounded(&self, path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
        let Some(rel) = path.strip_prefix(self.root).or_else(|_| path.strip_prefix(self.given)).ok() else {
            return Err(ReadError::OutsideRoot { path: path.to_path_buf(), why: "not under the root being read".into() });
        };
        match self.tree.read_bytes(rel, limit) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn io_what(e: &std::io::Error) -> String {
    crate::sys::fs::ReadError::describe(e)
}

fn sorted_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

/// `0000:1a:00.0` (a domain of 4 or more hex digits, as VMD's 10000: domains have).
pub fn is_bdf(text: &str) -> bool {
    let Some((rest, function)) = text.rsplit_once('.') else { return false };
    let parts: Vec<&str> = rest.split(':').collect();
    let hex = |s: &str, min: usize, max: usize| s.len() >= min && s.len() <= max && s.chars().all(|c| c.is_ascii_hexdigit());
    parts.len() == 3
        && hex(parts[0], 4, 8)
        && hex(parts[1], 2, 2)
        && hex(parts[2], 2, 2)
        && function.len() == 1
        && function.chars().all(|c| ('0'..='7').contains(&c))
}

fn parse_hex(text: &str) -> Option<u32> {
    u32::from_str_radix(text.strip_prefix("0x").unwrap_or(text), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdf_shapes() {
        assert!(is_bdf("0000:1a:00.0"));
        assert!(is_bdf("10000:e0:06.7"));
        assert!(!is_bdf("pci0000:00"));
        assert!(!is_bdf("0000:1a:00.8"));
        assert!(!is_bdf("0000:1a:00"));
        assert!(!is_bdf("power"));
    }

    #[test]
    fn hgx_fixture_reads_into_one_tree() {
        let tree = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gpu-hgx-healthy")).unwrap();
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);
        assert_eq!(tree.gpus().len(), 8);
        assert_eq!(tree.nics.len(), 8);
        assert_eq!(tree.nics[0], Nic { name: "mlx5_0".into(), bdf: "0000:18:00.0".into() });
        let gpu = tree.function("0000:1b:00.0").unwrap();
        assert_eq!(gpu.host_bridge, "pci0000:15");
        assert_eq!(gpu.chain, ["0000:15:01.0", "0000:16:00.0", "0000:17:03.0"]);
        assert_eq!(gpu.numa_node, Some(0));
        assert_eq!(gpu.link.max_speed.as_deref(), Some("32.0 GT/s PCIe"));
        assert!(gpu.config.parsed().is_some_and(|c| c.extended_read && c.pcie.is_some()));
        // The empty slots of the switch: not on any GPU/NIC chain, so their config is left alone.
        assert_eq!(tree.function("0000:17:01.0").unwrap().config, ConfigRead::NotRead);
        assert_eq!(tree.modules.as_ref().unwrap().nvidia_taint.as_deref(), Some("PO"));
        assert!(tree.modules.as_ref().unwrap().has("nvidia_peermem"));
    }

    #[test]
    fn no_bus_folder_means_no_tree() {
        assert!(read(Path::new("/nonexistent/fabcheck")).is_none());
    }
}
