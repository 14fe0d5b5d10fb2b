//! The capture: the part of a sysfs tree fabcheck reads, copied into a new directory at the
//! paths `--sysfs-root` reads them from (the attribute lists are those of 0.3's
//! capture-sysfs.sh, which the fixtures were made with), and, from a source that is itself a
//! bundle, its saved tool outputs. Nothing is copied wholesale: only named attributes and the
//! entries directly inside a few table folders are read, links are followed only inside the
//! source (`sys::beneath`) to reach a named file, and a FIFO, device or socket where a file
//! should be is never opened (it is listed as skipped). Every file is capped (its first bytes
//! kept, the cut said in the manifest), and the whole is bounded by a total size, a file count
//! and a deadline.

use super::{Area, Limits, Manifest, Origin, Skipped, MANIFEST, SCHEMA};
use crate::sys::beneath::Tree;
use crate::sys::new_dir::NewDir;
use crate::sys::write_error::WriteError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const IB_ATTRS: &[&str] = &["node_type", "node_guid", "sys_image_guid", "fw_ver", "hca_type", "hw_rev", "board_id", "node_desc", "parent"];
const PORT_ATTRS: &[&str] = &["state", "phys_state", "lid", "sm_lid", "lid_mask_count", "sm_sl", "cap_mask", "rate", "link_layer"];
const PORT_TABLES: &[&str] = &["gids", "pkeys", "gid_attrs/types", "gid_attrs/ndevs", "counters", "hw_counters"];
const PCI_ATTRS: &[&str] = &[
    "vendor",
    "device",
    "class",
    "numa_node",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "aer_dev_correctable",
    "aer_dev_nonfatal",
    "aer_dev_fatal",
];
const MODULES: &[&str] = &[
    "ib_core",
    "ib_uverbs",
    "rdma_ucm",
    "rdma_cm",
    "mlx5_core",
    "mlx5_ib",
    "mlx4_ib",
    "rdma_rxe",
    "siw",
    "irdma",
    "nvidia",
    "nvidia_peermem",
    "nv_peer_mem",
    "gdrdrv",
];
const MODULE_ATTRS: &[&str] = &["taint", "version", "srcversion"];
/// A netdev's attributes the bundle keeps; a bond's mode and legs and each leg's place in it
/// (RoCE LAG: `port.bond`).
const NET_ATTRS: &[&str] = &[
    "mtu",
    "operstate",
    "carrier",
    "speed",
    "duplex",
    "address",
    "type",
    "dev_port",
    "ifindex",
    "mode",
    "bonding/mode",
    "bonding/slaves",
    "bonding_slave/state",
    "bonding_slave/mii_status",
];
/// A source bundle's saved outputs: these files, and these folders (two levels at most).
const SAVED_FILES: &[&str] = &["ibstat.txt", "ibv_devinfo.txt"];
const SAVED_DIRS: &[&str] = &["tools", "dcb", "ethtool"];
/// Skipped paths listed one by one; beyond it they are counted.
const SKIPPED_LIST: usize = 1000;

/// The limits of a capture as `fabcheck bundle` runs it.
pub const LIMITS: Limits =
    Limits { sysfs_file_bytes: 1 << 20, report_bytes: crate::probe::tree::REPORT_CAP, total_bytes: 256 << 20, total_files: 200_000, deadline_s: 300 };

/// What to capture and where.
#[derive(Debug, Clone)]
pub struct Plan {
    pub out: PathBuf,
    /// `None`: the live node (`/sys`, and its tools run). Else a tree in bundle layout (a
    /// bundle, or a test's fake sysfs): read as `--sysfs-root` reads it, no tool run.
    pub from_root: Option<PathBuf>,
    pub limits: Limits,
    /// How long each tool may run.
    pub tool_limit: Duration,
}

/// Why a capture could not be made (the source's own faults are in the manifest instead).
#[derive(Debug)]
pub enum CaptureError {
    /// The source has no `class/infiniband`.
    NoDevices(PathBuf),
    /// The output could not be written.
    Write(WriteError),
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::NoDevices(root) => {
                write!(f, "{}/class/infiniband does not exist (no RDMA devices, or their modules are not loaded)", root.display())
            }
            CaptureError::Write(e) => write!(f, "{e}"),
        }
    }
}

impl From<WriteError> for CaptureError {
    fn from(e: WriteError) -> Self {
        CaptureError::Write(e)
    }
}

/// A capture under way: the source, the new directory and the manifest being filled.
pub(super) struct Capture {
    pub(super) src: Tree,
    pub(super) out: NewDir,
    pub(super) manifest: Manifest,
    started: Instant,
    area: usize,
}

fn p(text: &str) -> PathBuf {
    PathBuf::from(text)
}

impl Capture {
    pub(super) fn stopped(&mut self) -> bool {
        if self.manifest.stopped.is_some() {
            return true;
        }
        let l = self.manifest.limits;
        let why = if self.started.elapsed() > Duration::from_secs(l.deadline_s) {
            Some(format!("the capture ran past its deadline ({} s)", l.deadline_s))
        } else if self.manifest.files >= l.total_files {
            Some(format!("the capture reached its file count ({})", l.total_files))
        } else if self.manifest.bytes >= l.total_bytes {
            Some(format!("the capture reached its total size ({} bytes)", l.total_bytes))
        } else {
            None
        };
        if let Some(why) = why {
            self.manifest.complete = false;
            self.manifest.stopped = Some(why);
        }
        self.manifest.stopped.is_some()
    }

    pub(super) fn skip(&mut self, path: &Path, why: String) {
        if self.manifest.skipped.len() < SKIPPED_LIST {
            self.manifest.skipped.push(Skipped { path: path.display().to_string(), why });
        } else {
            self.manifest.skipped_more += 1;
        }
    }

    /// Starts a new area of the manifest's `captured` list.
    pub(super) fn area(&mut self, name: &str) {
        self.manifest.captured.push(Area { area: name.into(), files: 0, bytes: 0 });
        self.area = self.manifest.captured.len() - 1;
    }

    /// Writes `bytes` as `to` in the bundle, counted in the current area.
    pub(super) fn put(&mut self, to: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        let room = self.manifest.limits.total_bytes.saturating_sub(self.manifest.bytes);
        let keep = &bytes[..bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        if keep.len() < bytes.len() {
            self.skip(to, format!("truncated at {} of {} bytes: the capture's total size was reached", keep.len(), bytes.len()));
        }
        self.out.write_new(to, keep)?;
        self.manifest.files += 1;
        self.manifest.bytes += keep.len() as u64;
        if let Some(a) = self.manifest.captured.get_mut(self.area) {
            a.files += 1;
            a.bytes += keep.len() as u64;
        }
        Ok(())
    }

    /// Copies regular file `from` of the source to `to` in the bundle, at most `cap` bytes;
    /// what is absent is left out silently, what has no value is counted, what cannot be read
    /// (not a regular file, a loop, a link out of the tree) is listed as skipped.
    pub(super) fn copy_capped(&mut self, from: &Path, to: &Path, cap: u64) -> Result<(), WriteError> {
        if self.stopped() || self.out.has(to) {
            return Ok(());
        }
        match self.src.read_prefix(from, cap) {
            Ok((bytes, more)) => {
                if more {
                    self.skip(from, format!("larger than {cap} bytes: its first {cap} bytes are kept"));
                }
                self.put(to, &bytes)
            }
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) if e.is_no_value() => {
                self.manifest.no_value += 1;
                Ok(())
            }
            Err(e) => {
                self.skip(from, e.reason());
                Ok(())
            }
        }
    }

    fn copy(&mut self, from: &Path, to: &Path) -> Result<(), WriteError> {
        self.copy_capped(from, to, self.manifest.limits.sysfs_file_bytes)
    }

    fn copy_same(&mut self, rel: &Path) -> Result<(), WriteError> {
        self.copy(rel, rel)
    }

    /// The entry names of source folder `rel`, as text (a name that is not UTF-8 is skipped).
    pub(super) fn names(&mut self, rel: &Path) -> Vec<String> {
        match self.src.list_dir_counted(rel) {
            Ok((list, left_out)) => {
                let listed = list.len();
                let mut names: Vec<String> = list.into_iter().filter_map(|n| n.into_string().ok()).collect();
                names.sort();
                // What was not read is said, never dropped silently (issue #58).
                if left_out > 0 {
                    let max = crate::sys::beneath::MAX_ENTRIES;
                    self.skip(rel, format!("{left_out} entries beyond the first {max} of the folder were not read"));
                }
                if names.len() < listed {
                    self.skip(rel, format!("{} entries whose names are not UTF-8 were not read", listed - names.len()));
                }
                names
            }
            Err(e) => {
                self.skip(rel, e.reason());
                Vec::new()
            }
        }
    }

    /// The regular files directly inside source folder `from`, copied to `to`.
    fn copy_table(&mut self, from: &Path, to: &Path) -> Result<(), WriteError> {
        if !self.src.is_dir(from) {
            return Ok(());
        }
        for name in self.names(from) {
            let f = from.join(&name);
            if self.src.is_dir(&f) {
                continue;
            }
            self.copy(&f, &to.join(&name))?;
        }
        Ok(())
    }

    /// Every PCI function (`bus/pci/devices/BDF`, links into `devices/`): its named attributes
    /// at its place under `devices/`, its driver's name, and the link.
    fn pci(&mut self) -> Result<(), WriteError> {
        self.area("bus/pci");
        for bdf in self.names(Path::new("bus/pci/devices")) {
            let entry = p("bus/pci/devices").join(&bdf);
            let real = match self.src.resolve(&entry) {
                Ok(real) => real,
                Err(e) => {
                    self.skip(&entry, e.reason());
                    continue;
                }
            };
            if !self.src.is_dir(&real) {
                continue;
            }
            let linked = real.starts_with("devices") && real != entry;
            if !linked && real != entry {
                self.skip(&entry, format!("leads to {}, not under devices/", real.display()));
                continue;
            }
            self.function(&real)?;
            if linked && !self.out.has(&entry) {
                self.out.make_dirs(&real)?;
                self.out.link(&entry, &Path::new("../../..").join(&real))?;
                self.manifest.links += 1;
            }
        }
        Ok(())
    }

    /// PCI function `real` (a folder under `devices/`, or a plain folder of a source bundle) and
    /// the bridges above it on its path: their named attributes (AER counters and config space
    /// included) and drivers' names, each once.
    fn function(&mut self, real: &Path) -> Result<(), WriteError> {
        let mut path = PathBuf::new();
        for part in real.components() {
            path.push(part);
            let is_function = path.file_name().and_then(|n| n.to_str()).is_some_and(crate::probe::tool::valid_bdf);
            if (path == real || (is_function && real.starts_with("devices"))) && !self.out.has(&path) {
                self.out.make_dirs(&path)?;
                for a in PCI_ATTRS.iter().chain(&["config"]) {
                    self.copy_same(&path.join(a))?;
                }
                self.driver_link(&path)?;
                self.physfn_link(&path)?;
            }
        }
        Ok(())
    }

    /// `FUNCTION/physfn`: an SR-IOV virtual function's link to its physical function, kept as a
    /// link to the PF's name beside it (what marks the function a VF when the bundle is read).
    fn physfn_link(&mut self, function: &Path) -> Result<(), WriteError> {
        let rel = function.join("physfn");
        let Some(name) = self.src.link_name(&rel).and_then(|n| n.into_string().ok()) else { return Ok(()) };
        if !crate::probe::tool::valid_bdf(&name) || self.out.has(&rel) {
            return Ok(());
        }
        self.out.link(&rel, &p("..").join(name))?;
        self.manifest.links += 1;
        Ok(())
    }

    /// `FUNCTION/driver`: a link whose last name is the driver's, as sysfs has it (only the
    /// name is kept; the link leads nowhere in the bundle, and fabcheck never follows it).
    fn driver_link(&mut self, function: &Path) -> Result<(), WriteError> {
        let rel = function.join("driver");
        let Some(name) = self.src.link_name(&rel).and_then(|n| n.into_string().ok()) else { return Ok(()) };
        if name.is_empty() || name.contains('/') || name.starts_with('.') || self.out.has(&rel) {
            return Ok(());
        }
        self.out.link(&rel, &p("../../../bus/pci/drivers").join(name))?;
        self.manifest.links += 1;
        Ok(())
    }

    fn modules(&mut self) -> Result<(), WriteError> {
        self.area("module");
        for m in MODULES {
            let dir = p("module").join(m);
            if !self.src.is_dir(&dir) {
                continue;
            }
            self.out.make_dirs(&dir)?;
            for a in MODULE_ATTRS {
                self.copy_same(&dir.join(a))?;
            }
        }
        Ok(())
    }

    fn infiniband(&mut self) -> Result<(), WriteError> {
        self.area("class/infiniband");
        for dev in self.names(Path::new("class/infiniband")) {
            let dir = p("class/infiniband").join(&dev);
            if !self.src.is_dir(&dir) {
                continue;
            }
            for a in IB_ATTRS {
                self.copy_same(&dir.join(a))?;
            }
            for port in self.names(&dir.join("ports")) {
                let pdir = dir.join("ports").join(&port);
                if !self.src.is_dir(&pdir) {
                    continue;
                }
                for a in PORT_ATTRS {
                    self.copy_same(&pdir.join(a))?;
                }
                for t in PORT_TABLES {
                    self.copy_table(&pdir.join(t), &pdir.join(t))?;
                }
                // MLNX_OFED's per-port ToS override (roce.qos's DSCP source after --expect).
                let tc = dir.join("tc").join(&port).join("traffic_class");
                if self.src.exists(&tc) {
                    self.copy_same(&tc)?;
                }
            }
            self.device(&dir)?;
        }
        Ok(())
    }

    /// `class/infiniband/DEV/device`: a link to its PCI function where that was captured (as in
    /// sysfs), else a folder of the function's attributes. Software devices (rxe, siw) have none.
    fn device(&mut self, dir: &Path) -> Result<(), WriteError> {
        let link = dir.join("device");
        if !self.src.is_dir(&link) {
            return Ok(());
        }
        let real = self.src.resolve(&link).ok();
        let target = match real {
            Some(real) if real != link && real.starts_with("devices") => {
                self.function(&real)?;
                self.out.link(&link, &Path::new("../../..").join(&real))?;
                self.manifest.links += 1;
                real
            }
            _ => {
                for a in PCI_ATTRS {
                    self.copy(&link.join(a), &link.join(a))?;
                }
                link.clone()
            }
        };
        for nd in self.names(&link.join("net")) {
            self.copy(&link.join("net").join(&nd).join("dev_port"), &target.join("net").join(&nd).join("dev_port"))?;
        }
        if target == link {
            self.driver_link(&link)?;
        }
        Ok(())
    }

    fn net(&mut self) -> Result<(), WriteError> {
        self.area("class/net");
        for nd in self.names(Path::new("class/net")) {
            let dir = p("class/net").join(&nd);
            if !self.src.is_dir(&dir) {
                continue;
            }
            for a in NET_ATTRS {
                self.copy_same(&dir.join(a))?;
            }
            // MLNX_OFED mlx5's ECN/DCQCN tree (roce.qos).
            if self.src.is_dir(&dir.join("ecn")) {
                for side in ["roce_np", "roce_rp"] {
                    for prio in 0..8 {
                        self.copy_same(&dir.join("ecn").join(side).join("enable").join(prio.to_string()))?;
                    }
                }
                for a in ["cnp_dscp", "cnp_802p_prio", "min_time_between_cnps"] {
                    self.copy_same(&dir.join("ecn/roce_np").join(a))?;
                }
            }
        }
        Ok(())
    }

    /// rdma_cm's default ToS per port (roce.qos): configfs, live at `/sys/kernel/config`, in a
    /// bundle at `config/`.
    fn rdma_cm(&mut self, live: bool) -> Result<(), WriteError> {
        self.area("config/rdma_cm");
        let from = if live { p("kernel/config/rdma_cm") } else { p("config/rdma_cm") };
        // Live, a device's group exists only once made: make each missing one for the copy and
        // remove it again, as mlnx-tools' cma_roce_tos does (root only; refused otherwise).
        let mut made = Vec::new();
        if live && self.src.is_dir(&from) {
            for dev in self.names(Path::new("class/infiniband")) {
                let group = p("/sys").join(&from).join(&dev);
                if crate::model::valid_device_name(&dev) && !group.exists() && std::fs::create_dir(&group).is_ok() {
                    made.push(group);
                }
            }
        }
        let copied = self.rdma_cm_groups(&from);
        for group in made {
            let _ = std::fs::remove_dir(&group);
        }
        copied
    }

    fn rdma_cm_groups(&mut self, from: &Path) -> Result<(), WriteError> {
        for dev in self.names(from) {
            for port in self.names(&from.join(&dev).join("ports")) {
                let rel = p(&dev).join("ports").join(&port).join("default_roce_tos");
                self.copy(&from.join(&rel), &p("config/rdma_cm").join(&rel))?;
            }
        }
        Ok(())
    }

    /// The NVIDIA driver's parameters (`gpu.ibgda`): live `/proc/driver/nvidia/params`, kept at
    /// `proc/driver/nvidia/params` in the bundle; absent without the driver.
    fn nvidia_params(&mut self, live: bool) -> Result<(), WriteError> {
        let rel = p(crate::probe::pci::NVIDIA_PARAMS);
        if !live {
            if self.src.exists(&rel) {
                self.copy_same(&rel)?;
            }
            return Ok(());
        }
        let from = p("/").join(&rel);
        if !from.exists() {
            return Ok(());
        }
        self.area("proc/driver/nvidia");
        match crate::sys::fs::read_text(&from, self.manifest.limits.sysfs_file_bytes) {
            Ok(text) => self.put(&rel, text.as_bytes()),
            Err(e) => {
                self.skip(&from, e.reason());
                Ok(())
            }
        }
    }

    /// A source bundle's saved outputs, copied as they are (each capped at the report cap).
    fn saved(&mut self) -> Result<(), WriteError> {
        self.area("saved outputs");
        let cap = self.manifest.limits.report_bytes;
        for f in SAVED_FILES {
            self.copy_capped(Path::new(f), Path::new(f), cap)?;
        }
        for d in SAVED_DIRS {
            for name in self.names(Path::new(d)) {
                let rel = p(d).join(&name);
                if self.src.is_dir(&rel) {
                    for inner in self.names(&rel) {
                        let f = rel.join(inner);
                        if !self.src.is_dir(&f) {
                            self.copy_capped(&f, &f, cap)?;
                        }
                    }
                } else {
                    self.copy_capped(&rel, &rel, cap)?;
                }
            }
        }
        Ok(())
    }
}

/// This node, or the source bundle's own origin when it has one (a bundle of a bundle names the
/// node it was first captured on).
fn origin_of(plan: &Plan, secs: u64) -> Origin {
    let now = crate::sys::time::rfc3339(secs);
    let from_source = plan.from_root.as_deref().and_then(|root| super::origin(root).ok().flatten());
    let kernel = match &plan.from_root {
        None => crate::sys::fs::read_text(Path::new("/proc/sys/kernel/osrelease"), 256).ok().map(|k| k.trim().to_string()),
        Some(_) => from_source.as_ref().and_then(|o| o.kernel.clone()),
    };
    match from_source {
        Some(o) => Origin { time: now, fabcheck_version: env!("CARGO_PKG_VERSION").into(), ..o },
        None => Origin { host: crate::sys::os::hostname(), time: now, fabcheck_version: env!("CARGO_PKG_VERSION").into(), kernel },
    }
}

/// Captures the sysfs part per `plan` (and, from a tree, its saved outputs), into a new
/// directory not yet in place; [`finish`] writes the manifest and puts it there
/// (`bundle::run`, with the tools between).
pub(super) fn begin(plan: &Plan) -> Result<Capture, CaptureError> {
    let root = plan.from_root.clone().unwrap_or_else(|| p("/sys"));
    let src = Tree::new(root.clone());
    if !src.is_dir(Path::new("class/infiniband")) {
        return Err(CaptureError::NoDevices(root));
    }
    let started = Instant::now();
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let origin = origin_of(plan, secs);
    let out = NewDir::create(&plan.out)?;
    let manifest = Manifest {
        schema: SCHEMA,
        kernel: origin.kernel.clone(),
        origin,
        source: root.display().to_string(),
        tools_run: plan.from_root.is_none(),
        complete: true,
        stopped: None,
        limits: plan.limits,
        seconds: 0.0,
        files: 0,
        bytes: 0,
        links: 0,
        captured: Vec::new(),
        tools: Vec::new(),
        skipped: Vec::new(),
        skipped_more: 0,
        no_value: 0,
    };
    let mut c = Capture { src, out, manifest, started, area: 0 };
    c.pci()?;
    c.modules()?;
    c.infiniband()?;
    c.net()?;
    c.rdma_cm(plan.from_root.is_none())?;
    c.nvidia_params(plan.from_root.is_none())?;
    if plan.from_root.is_some() {
        c.saved()?;
    }
    Ok(c)
}

/// The manifest, written last, and the directory put in place; the manifest is returned.
pub(super) fn finish(mut c: Capture) -> Result<Manifest, CaptureError> {
    c.stopped();
    c.manifest.seconds = (c.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    let text = super::manifest_json(&c.manifest);
    c.out.write_complete(Path::new(MANIFEST), text.as_bytes())?;
    let Capture { out, manifest, .. } = c;
    out.finish()?;
    Ok(manifest)
}
