//! GPU node readiness: GPUDirect RDMA's preconditions, judged over the PCI tree (pure).
//!
//! `gpu.peermem` (the kernel can hand GPU memory to the NIC), `pcie.acs` (peer-to-peer TLPs
//! between a GPU and its NIC are not redirected to the root complex), `gpu.affinity` (each
//! GPU has a near NIC, in `nvidia-smi topo -m`'s words) and `pcie.link` (each GPU's link
//! trained at what card and slot support). A node without NVIDIA GPUs gets none of them.

use super::{Severity, Sheet};
use crate::gpu::topology::{self, Pairing, Relation};
use crate::outcome::FindingId;
use crate::probe::pci::config::{self, speed_gts, PortType};
use crate::probe::pci::{nic_label, Area, ConfigRead, Function, PciTree};
use std::collections::BTreeMap;

/// The GPU rules over `tree`, for the GPU/NIC `pairings` of it (`gpu::topology::pair`).
pub(super) fn run(tree: &PciTree, pairings: &[Pairing], sheet: &mut Sheet) {
    if tree.gpus().is_empty() {
        return;
    }
    problems(tree, sheet);
    peermem(tree, sheet);
    affinity(tree, pairings, sheet);
    acs(tree, pairings, sheet);
    for gpu in tree.gpus() {
        link(tree, gpu, sheet);
    }
}

/// Files and links that could not be read: named, so nothing is silently misjudged.
fn problems(tree: &PciTree, sheet: &mut Sheet) {
    for p in &tree.problems {
        let id = match p.area {
            Area::Module => FindingId::GpuPeermem,
            Area::Link => FindingId::PcieLink,
            Area::Placement => FindingId::GpuAffinity,
        };
        let subject = p.bdf.clone().unwrap_or_else(|| p.path.clone());
        sheet.note(
            id,
            &subject,
            Severity::Warning,
            format!("cannot read {}: {}; the GPU checks go without it", p.path, p.what),
            "fix or re-capture that file (`fabcheck bundle DIR`, as root); a symlink loop or a non-regular file \
             in a bundle means it was not copied from sysfs as it is",
        );
    }
}

fn peermem(tree: &PciTree, sheet: &mut Sheet) {
    let id = FindingId::GpuPeermem;
    let Some(modules) = &tree.modules else {
        sheet.skip(id, "node", "no module/ in the tree");
        return;
    };
    if let Some(loaded) = ["nvidia_peermem", "nv_peer_mem"].into_iter().find(|m| modules.has(m)) {
        sheet.pass(id, "node", format!("{loaded} loaded"), Some("nvidia_peermem or dma-buf".into()));
        return;
    }
    let driver = modules.has("nvidia");
    // The open kernel modules export GPU memory as dma-buf (kernel 5.12+, NCCL 2.13+): they
    // carry no proprietary taint ('P').
    let open_driver = driver && modules.nvidia_taint.as_deref().is_some_and(|t| !t.contains('P'));
    // dma-buf import of GPU memory into RDMA needs kernel 5.12 (ib_umem_dmabuf_get, Linux 5.12).
    let old_kernel = modules.kernel.as_deref().filter(|k| crate::probe::pci::kernel_version(k).is_some_and(|v| v < (5, 12)));
    if let (true, Some(kernel)) = (open_driver, old_kernel) {
        sheet.fail(
            id,
            "node",
            format!("open nvidia kernel module, kernel {kernel}, no nvidia_peermem"),
            Some("nvidia_peermem or dma-buf".into()),
            Severity::Error,
            format!(
                "nvidia_peermem is not loaded and the dma-buf path is not there: the open NVIDIA kernel module exports GPU memory as \
                 dma-buf, but RDMA can import dma-buf only from Linux 5.12 (this node runs {kernel}): the NIC cannot register GPU memory"
            ),
            "`modprobe nvidia-peermem` (persistent in /etc/modules-load.d/), or run kernel 5.12 or later",
        );
        return;
    }
    if open_driver {
        sheet.fail(
            id,
            "node",
            format!("dma-buf (nvidia open kernel module, taint {})", modules.nvidia_taint.as_deref().unwrap_or("")),
            Some("nvidia_peermem or dma-buf".into()),
            Severity::Info,
            "nvidia_peermem is not loaded; GPUDirect RDMA goes through dma-buf, which the open NVIDIA kernel module provides",
            "nothing to do for NCCL 2.13+ and kernels 5.12+ (NCCL_DMABUF_ENABLE=1 is the default); software that only knows \
             the peer-memory API (older MPI/UCX builds) still needs `modprobe nvidia-peermem`",
        );
        return;
    }
    let observed = if driver { "nvidia loaded, no nvidia_peermem / nv_peer_mem".to_string() } else { "no nvidia driver loaded".to_string() };
    let message = if driver {
        "GPUs are present but neither nvidia_peermem nor nv_peer_mem is loaded, and the proprietary driver offers no \
         dma-buf path: the NIC cannot register GPU memory, so GPUDirect RDMA falls back to staging through host memory"
    } else {
        "GPUs are present but the nvidia driver is not loaded: neither nvidia_peermem nor dma-buf can give the NIC GPU memory"
    };
    sheet.fail(
        id,
        "node",
        observed,
        Some("nvidia_peermem or dma-buf".into()),
        Severity::Error,
        message,
        "`modprobe nvidia-peermem`; make it persistent with `echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf` \
         (install MLNX_OFED/DOCA before the NVIDIA driver so nvidia-peermem is built against its ib_core), or switch to the \
         open kernel module, whose dma-buf path needs no extra module",
    );
}

fn affinity(tree: &PciTree, pairings: &[Pairing], sheet: &mut Sheet) {
    let id = FindingId::GpuAffinity;
    // The NUMA nodes where both are known (an unknown one is not printed as a value).
    let numa = |a: Option<i32>, b: Option<i32>| a.zip(b).map_or(String::new(), |(a, b)| format!(", numa {a}/{b}"));
    let mut users: BTreeMap<&str, Vec<&Pairing>> = tree.nics.iter().map(|n| (n.bdf.as_str(), Vec::new())).collect();
    for p in pairings {
        let Some(nic) = &p.nic else {
            sheet.skip(id, &p.gpu, "no RDMA NIC on PCI to pair with");
            continue;
        };
        users.entry(nic.bdf.as_str()).or_default().push(p);
        let observed = format!("{} {}{}", nic_label(&nic.name, &nic.bdf), nic.relation.name(), numa(p.gpu_numa, nic.numa));
        if nic.relation == Relation::Sys {
            sheet.fail(
                id,
                &p.gpu,
                observed,
                Some("a NIC on the GPU's NUMA node".into()),
                Severity::Warning,
                format!(
                    "GPU {}'s nearest RDMA NIC is {}, SYS: {}; every GPUDirect transfer crosses the inter-socket link, \
                     at a fraction of the NIC's bandwidth",
                    p.gpu,
                    nic_label(&nic.name, &nic.bdf),
                    Relation::Sys.meaning()
                ),
                "move a NIC into a slot of the GPU's socket (on HGX boards, the slot under the GPU's PCIe switch), or run the \
                 job's ranks only on GPUs that have a near NIC; `nvidia-smi topo -m` shows the same matrix",
            );
        } else {
            sheet.pass(id, &p.gpu, observed, None);
        }
    }
    // Two GPUs funnelled into one NIC while another NIC, reachable without the inter-socket
    // link, serves none: each of the two gets half a NIC.
    let gpus: BTreeMap<&str, &Function> = tree.gpus().into_iter().map(|g| (g.bdf.as_str(), g)).collect();
    for (nic_bdf, sharing) in &users {
        if sharing.len() < 2 {
            continue;
        }
        let idle = users.iter().filter(|(_, u)| u.is_empty()).find_map(|(idle_bdf, _)| {
            let idle_fn = tree.function(idle_bdf)?;
            sharing.iter().find_map(|p| {
                let path = topology::path(tree, gpus.get(p.gpu.as_str())?, idle_fn);
                (path.relation < Relation::Sys).then_some((*idle_bdf, path.relation))
            })
        });
        let Some((idle_bdf, relation)) = idle else { continue };
        let name_of = |bdf: &str| tree.nics.iter().find(|n| n.bdf == bdf).map_or(bdf.to_string(), |n| nic_label(&n.name, &n.bdf));
        let gpu_list = sharing.iter().map(|p| p.gpu.as_str()).collect::<Vec<_>>().join(",");
        sheet.note(
            id,
            &gpu_list,
            Severity::Warning,
            format!(
                "GPUs {gpu_list} all have {} as nearest NIC while {} serves no GPU and is {} from one \
                 of them: NCCL puts their traffic on one NIC and leaves the other idle",
                name_of(nic_bdf),
                name_of(idle_bdf),
                relation.name()
            ),
            "place the NICs so each GPU (or each pair of GPUs on a switch) has its own, or steer ranks explicitly \
             (NCCL_IB_HCA, or an NCCL_TOPO_FILE that describes the intended pairing)",
        );
    }
}

/// Why the ACS state of a bridge is not known.
/// Why the ACS state of a bridge is not known.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum AcsUnknown {
    /// Only the first `len` bytes of config were readable (a non-root read gives 64).
    Partial { len: usize },
    /// No usable config file; names the file and what is wrong with it.
    Unusable(String),
}

impl AcsUnknown {
    fn of(f: Option<&Function>) -> Option<AcsUnknown> {
        let Some(f) = f else { return Some(AcsUnknown::Unusable("the bridge is not in the tree".into())) };
        match &f.config {
            ConfigRead::Missing => Some(AcsUnknown::Unusable(format!("{}: missing", f.config_file))),
            ConfigRead::NotRead => Some(AcsUnknown::Unusable(format!("{}: not read", f.config_file))),
            ConfigRead::Bad(why) => Some(AcsUnknown::Unusable(why.clone())),
            ConfigRead::Parsed(c) if !c.defects.is_empty() => Some(AcsUnknown::Unusable(format!("{}: {}", f.config_file, defects(c)))),
            ConfigRead::Parsed(c) if !c.extended_read => Some(AcsUnknown::Partial { len: c.len }),
            ConfigRead::Parsed(_) => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            AcsUnknown::Partial { len } => {
                format!("only {len} bytes of config were readable, and the ACS capability lies past the first 256")
            }
            AcsUnknown::Unusable(why) => why.clone(),
        }
    }

    fn remedy(&self) -> &'static str {
        match self {
            AcsUnknown::Partial { .. } => {
                "run `fabcheck check` as root (config space past 64 bytes is root-only), or capture the bundle as root; \
                 `lspci -vvv -s <bdf>` shows ACSCtl"
            }
            AcsUnknown::Unusable(_) => {
                "the config file is damaged or was not copied as sysfs gives it: re-capture it as root \
                 (`fabcheck bundle DIR`), or read ACSCtl on the node with `lspci -vvv -s <bdf>`"
            }
        }
    }
}

fn defects(c: &config::ConfigSpace) -> String {
    c.defects.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("; ")
}

fn acs(tree: &PciTree, pairings: &[Pairing], sheet: &mut Sheet) {
    let id = FindingId::PcieAcs;
    // bridge -> the GPU/NIC pairs whose path crosses it.
    let mut crossing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for p in pairings {
        let Some(nic) = &p.nic else { continue };
        // A path through the host bridge (PHB, NODE, SYS) goes through the root complex anyway:
        // ACS can only reroute what would otherwise turn around inside a switch.
        if nic.relation > Relation::Pxb {
            continue;
        }
        for bridge in &nic.bridges {
            let pair = if nic.name == nic.bdf {
                format!("GPU {} <-> {} ({})", p.gpu, nic.bdf, nic.relation.name())
            } else {
                format!("GPU {} <-> {} ({}, {})", p.gpu, nic.name, nic.bdf, nic.relation.name())
            };
            crossing.entry(bridge.as_str()).or_default().push(pair);
        }
    }
    if crossing.is_empty() {
        return;
    }
    let mut unknown: BTreeMap<AcsUnknown, Vec<&str>> = BTreeMap::new();
    let mut blocking = 0;
    for (bridge, pairs) in &crossing {
        let f = tree.function(bridge);
        if let Some(why) = AcsUnknown::of(f) {
            // "only 64 bytes" repeats for every bridge of a non-root run: one finding for all.
            unknown.entry(why).or_default().push(bridge);
            continue;
        }
        let Some(acs) = f.and_then(|f| f.config.parsed()).and_then(|c| c.acs) else { continue };
        if acs.redirecting() == 0 {
            continue;
        }
        blocking += 1;
        let kind = f.and_then(|f| f.config.parsed()).and_then(|c| c.pcie).map_or(PortType::Other(0xff), |p| p.port_type);
        let redirected = config::describe(acs.redirecting());
        sheet.fail(
            id,
            *bridge,
            format!("ACS control {}", acs.describe_control()),
            Some("RR CR EC off".into()),
            Severity::Error,
            sheet.facts.pcie_acs(format!(
                "ACS P2P redirect ({redirected}) is enabled on {bridge} ({}), on the path of {}: peer-to-peer TLPs between \
                 GPU and NIC go up through the root complex (and the IOMMU) instead of across the switch, so GPUDirect RDMA \
                 runs at a fraction of its bandwidth, or fails",
                kind.name(),
                pairs.join("; ")
            )),
            format!(
                "disable ACS redirect on that port: in the BIOS (PCIe ACS / P2P settings, often tied to VT-d/IOMMU), at boot \
                 with `setpci -s {bridge} ECAP_ACS+0x6.w=0000` (a unit that runs before the GPU driver loads), or with the \
                 kernel parameter `pci=disable_acs_redir={bridge}`; ACS on ports no GPU<->NIC path crosses can stay"
            ),
        );
    }
    for (why, bridges) in &unknown {
        let subject = bridges.join(",");
        sheet.fail(
            id,
            &subject,
            "unknown".to_string(),
            Some("RR CR EC off".into()),
            Severity::Warning,
            sheet.facts.pcie_acs(format!("cannot tell whether ACS redirects GPU<->NIC peer-to-peer traffic on {subject}: {}", why.describe())),
            why.remedy(),
        );
    }
    if blocking == 0 && unknown.is_empty() {
        sheet.pass(id, "node", format!("{} bridges on GPU<->NIC paths, none redirects P2P", crossing.len()), Some("RR CR EC off".into()));
    }
}

/// (width, GT/s) of a link from sysfs, else from config space.
fn link_of(f: &Function, current: bool) -> (Option<u32>, Option<f64>) {
    let gts = |s: &Option<String>| s.as_deref().and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok());
    let (width, speed) = if current { (f.link.current_width, gts(&f.link.current_speed)) } else { (f.link.max_width, gts(&f.link.max_speed)) };
    let from_config = f.config.parsed().and_then(|c| c.pcie).and_then(|p| if current { p.link_status } else { p.link_cap });
    (width.or(from_config.map(|l| u32::from(l.width))), speed.or(from_config.and_then(|l| speed_gts(l.speed))))
}

fn describe_link(width: Option<u32>, speed: Option<f64>) -> String {
    format!("x{} {}", width.map_or("?".into(), |w| w.to_string()), speed.map_or("?".into(), |s| format!("{s:.1} GT/s")))
}

fn link(tree: &PciTree, gpu: &Function, sheet: &mut Sheet) {
    let id = FindingId::PcieLink;
    if let Some(why) = match &gpu.config {
        ConfigRead::Bad(why) => Some(why.clone()),
        ConfigRead::Parsed(c) if !c.defects.is_empty() => Some(format!("{}: {}", gpu.config_file, defects(c))),
        _ => None,
    } {
        sheet.note(
            id,
            &gpu.bdf,
            Severity::Warning,
            format!("GPU {}'s config space cannot be read as PCI defines it ({why}); its link is judged from sysfs alone", gpu.bdf),
            "re-capture the bundle as root; on a live node, a config space that reads wrong points at a device that fell off \
             the bus (dmesg: AER, 'GPU has fallen off the bus')",
        );
    }
    let (cur_w, cur_s) = link_of(gpu, true);
    let (max_w, max_s) = link_of(gpu, false);
    // The slot: the port above the GPU. The link trains to what both ends support.
    let slot = gpu.chain.last().and_then(|b| tree.function(b)).map(|b| link_of(b, false)).unwrap_or((None, None));
    let min_opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    let want_w = min_opt(max_w.map(f64::from), slot.0.map(f64::from)).map(|w| w as u32);
    let want_s = min_opt(max_s, slot.1);
    // Unknown is not a pass: a figure neither sysfs nor config space gives is a skip.
    let missing: Vec<&str> = [
        (cur_w.is_none(), "current_link_width"),
        (cur_s.is_none(), "current_link_speed"),
        (want_w.is_none(), "max_link_width"),
        (want_s.is_none(), "max_link_speed"),
    ]
    .into_iter()
    .filter_map(|(absent, file)| absent.then_some(file))
    .collect();
    if !missing.is_empty() {
        sheet.skip(id, &gpu.bdf, format!("GPU {}'s link is not readable: {} absent (and not in config space)", gpu.bdf, missing.join(", ")));
        return;
    }
    let observed = describe_link(cur_w, cur_s);
    let expected = describe_link(want_w, want_s);
    let numa = gpu.numa_node.map_or(String::new(), |n| format!(" (numa {n})"));
    if let (Some(c), Some(w)) = (cur_w, want_w) {
        if c < w {
            // Below what both ends support is a fault (0.4); with the slot's figures unknown it
            // may be the slot, and stays a warning.
            let (severity, both) = if slot.0.is_some() {
                (Severity::Error, "both the card and the slot support")
            } else {
                (Severity::Warning, "the card supports (the slot's figures are not readable)")
            };
            sheet.fail(
                id,
                &gpu.bdf,
                observed.clone(),
                Some(expected),
                severity,
                format!("GPU {}'s PCIe link trained at {observed}, narrower than {both}: a seating, riser or lane fault{numa}", gpu.bdf),
                "reseat the GPU (or its baseboard cable), check BIOS bifurcation for the slot; `lspci -vv -s <bdf>` LnkSta and \
                 `nvidia-smi -q -d PCI` show the same; a lane-degraded link halves host<->GPU and GPUDirect bandwidth",
            );
            return;
        }
    }
    if let (Some(c), Some(w)) = (cur_s, want_s) {
        if c < w {
            sheet.fail(
                id,
                &gpu.bdf,
                observed.clone(),
                Some(expected),
                Severity::Info,
                format!("GPU {}'s PCIe link runs at {observed}, below the {w:.1} GT/s card and slot support", gpu.bdf),
                "GPUs lower their link speed when idle: check again under load (`nvidia-smi -q -d PCI`, Link Gen Current); if \
                 it stays low, check the BIOS slot speed setting and the riser/cable",
            );
            return;
        }
    }
    sheet.pass(id, &gpu.bdf, observed, Some(expected));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Report, Verdict};
    use crate::probe::pci::{Modules, Nic, SysfsLink};

    fn gpu(bdf: &str, cur: (u32, &str), max: (u32, &str)) -> Function {
        Function {
            bdf: bdf.into(),
            host_bridge: "pci0000:00".into(),
            chain: vec!["0000:00:01.0".into()],
            vendor: Some(0x10de),
            device: Some(0x2330),
            class: Some(0x030200),
            numa_node: Some(0),
            link: SysfsLink { current_width: Some(cur.0), current_speed: Some(cur.1.into()), max_width: Some(max.0), max_speed: Some(max.1.into()) },
            config: ConfigRead::Missing,
            config_file: format!("devices/pci0000:00/0000:00:01.0/{bdf}/config"),
        }
    }

    fn judge(tree: &PciTree) -> Report {
        let mut sheet = Sheet::default();
        run(tree, &topology::pair(tree), &mut sheet);
        sheet.finish()
    }

    fn ids(report: &Report) -> Vec<(&str, Severity, String)> {
        report.findings.iter().map(|f| (f.id.as_str(), f.severity, f.subject.to_string())).collect()
    }

    fn node(functions: Vec<Function>, modules: &[&str], taint: Option<&str>) -> PciTree {
        PciTree {
            functions: functions.into_iter().map(|f| (f.bdf.clone(), f)).collect(),
            nics: Vec::new(),
            modules: Some(Modules {
                present: modules.iter().map(|m| m.to_string()).collect(),
                nvidia_taint: taint.map(String::from),
                nvidia_params: None,
                kernel: None,
            }),
            problems: Vec::new(),
        }
    }

    #[test]
    fn no_gpu_no_checks() {
        let mut t = node(vec![], &[], None);
        t.nics.push(Nic { name: "mlx5_0".into(), bdf: "0000:18:00.0".into() });
        let report = judge(&t);
        assert!(report.checks.is_empty() && report.findings.is_empty());
    }

    #[test]
    fn peermem_variants() {
        let g = || gpu("0000:1b:00.0", (16, "32.0 GT/s PCIe"), (16, "32.0 GT/s PCIe"));
        let missing_driver = judge(&node(vec![g()], &[], None));
        assert_eq!(ids(&missing_driver), vec![("gpu.peermem", Severity::Error, "node".to_string())]);
        assert!(missing_driver.findings[0].message.contains("nvidia driver is not loaded"));
        assert_eq!(missing_driver.verdict, Verdict::Fail);
        let legacy = judge(&node(vec![g()], &["nvidia", "nv_peer_mem"], Some("PO")));
        assert!(legacy.findings.is_empty());
        assert!(legacy.checks.iter().any(|c| c.id == FindingId::GpuPeermem && c.observed == "nv_peer_mem loaded"));
        let open = judge(&node(vec![g()], &["nvidia"], Some("OE")));
        assert_eq!(ids(&open), vec![("gpu.peermem", Severity::Info, "node".to_string())]);
        // dma-buf needs kernel 5.12 as well as the open modules.
        let mut old = node(vec![g()], &["nvidia"], Some("OE"));
        old.modules.as_mut().unwrap().kernel = Some("5.4.0-150-generic".into());
        let report = judge(&old);
        assert_eq!(ids(&report), vec![("gpu.peermem", Severity::Error, "node".to_string())]);
        assert!(report.findings[0].message.contains("5.12") && report.findings[0].message.contains("5.4.0-150-generic"));
        old.modules.as_mut().unwrap().kernel = Some("5.15.0-105-generic".into());
        assert_eq!(ids(&judge(&old)), vec![("gpu.peermem", Severity::Info, "node".to_string())]);
        let mut no_modules = node(vec![g()], &[], None);
        no_modules.modules = None;
        let report = judge(&no_modules);
        assert!(report.findings.is_empty());
        assert!(report.checks.iter().any(|c| c.id == FindingId::GpuPeermem && c.status == crate::outcome::Status::Skip));
    }

    #[test]
    fn gpu_link_width_warns_speed_informs() {
        let narrow = gpu("0000:1b:00.0", (8, "32.0 GT/s PCIe"), (16, "32.0 GT/s PCIe"));
        let idle = gpu("0000:43:00.0", (16, "2.5 GT/s PCIe"), (16, "32.0 GT/s PCIe"));
        let report = judge(&node(vec![narrow, idle], &["nvidia", "nvidia_peermem"], Some("PO")));
        assert_eq!(
            ids(&report),
            vec![("pcie.link", Severity::Warning, "0000:1b:00.0".to_string()), ("pcie.link", Severity::Info, "0000:43:00.0".to_string())]
        );
        assert!(report.checks.iter().any(|c| c.id == FindingId::GpuAffinity && c.status == crate::outcome::Status::Skip), "no NIC to pair");
    }

    #[test]
    fn the_slot_caps_what_the_gpu_can_train_at() {
        // A Gen5 card in a Gen4 x8 slot, trained at Gen4 x8: what the slot allows, no finding.
        let card = gpu("0000:1b:00.0", (8, "16.0 GT/s PCIe"), (16, "32.0 GT/s PCIe"));
        let mut slot = gpu("0000:00:01.0", (8, "16.0 GT/s PCIe"), (8, "16.0 GT/s PCIe"));
        slot.vendor = Some(0x8086);
        slot.class = Some(0x060400);
        slot.chain.clear();
        let report = judge(&node(vec![card, slot], &["nvidia", "nvidia_peermem"], Some("PO")));
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        let link = report.checks.iter().find(|c| c.id == FindingId::PcieLink).unwrap();
        assert_eq!(link.expected.as_deref(), Some("x8 16.0 GT/s"));
    }
}
