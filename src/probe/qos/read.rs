//! Gathers a RoCE port's QoS set-up (I/O only; the parsers are pure). Live: `dcb -j` for each
//! object (iproute2 5.11 and later), and `mlnx_qos -i IF` where dcb cannot answer, each a
//! bounded child (time limit, output cap, stderr kept to tell "not supported" and "not
//! permitted" apart); the `ecn/` tree and rdma_cm's configfs attribute through the bounded
//! sysfs reader. In a bundle the same answers are files (`tools/mlnx_qos/IF.txt`, `dcb/IF.json`,
//! or a 0.3 bundle's `dcb/IF.pfc.txt`, `config/rdma_cm/DEV/ports/N/default_roce_tos`,
//! `class/net/IF/ecn/...`), read inside the bundle only (`sys::beneath`: a link out of it is
//! not followed). The `ethtool -S` report is the one `probe::phy` already read.

use super::{counters, dcb_json, ecn, mlnx_qos, pause, rdma_cm, traffic_class, Asked, PortQos, Tool, Unread};
use crate::probe::tool::{self, ToolError};
use crate::probe::tree::SysfsRoot;
use std::time::Duration;

/// A `dcb` child's limit (it answers from netlink at once).
const DCB_LIMIT: Duration = Duration::from_secs(3);
/// `mlnx_qos` is a Python program: its interpreter's start dominates.
const MLNX_QOS_LIMIT: Duration = Duration::from_secs(10);
/// Largest tool answer kept (mlnx_qos prints ~2 KiB, dcb less).
const ANSWER_CAP: u64 = 256 << 10;

/// The set-up of `netdev`, the netdev of `device` port `port`; `stats` is the port's `ethtool
/// -S` report when it was read.
pub fn port(tree: &SysfsRoot, device: &str, port: u32, netdev: &str, stats: Option<&str>) -> PortQos {
    let mut q = if tree.is_live() {
        // dcb first (a C program answering from netlink); mlnx_qos (Python) only where dcb
        // could not answer.
        let dcb = live_dcb(netdev);
        if dcb.dcb_read() {
            dcb
        } else {
            dcb.merge(mlnx(tree, netdev))
        }
    } else {
        // Both, where the bundle saved both: mlnx_qos's answer first (it reads MLNX_OFED's own
        // `qos/trust` file where dcb can only infer the state from the APP table).
        mlnx(tree, netdev).merge(bundle_dcb(tree, netdev))
    };
    let ecn_dir = format!("class/net/{netdev}/ecn");
    if tree.rel_is_dir(&ecn_dir) {
        let side = |name: &str| -> [Option<String>; 8] { std::array::from_fn(|p| tree.read_rel(&format!("{ecn_dir}/{name}/enable/{p}"), 64)) };
        q.ecn_np = ecn::enables(&side("roce_np"));
        q.ecn_rp = ecn::enables(&side("roce_rp"));
        q.cnp_802p_prio = tree.read_rel(&format!("{ecn_dir}/roce_np/cnp_802p_prio"), 64).as_deref().and_then(ecn::cnp_priority);
        q.cnp_dscp = tree.read_rel(&format!("{ecn_dir}/roce_np/cnp_dscp"), 64).as_deref().and_then(ecn::cnp_dscp);
    }
    q.default_roce_tos = if tree.is_live() {
        live_default_roce_tos(tree, device, port)
    } else {
        tree.read_rel(&rdma_cm::path(false, device, port), 64).as_deref().and_then(rdma_cm::parse_tos)
    };
    q.traffic_class = read_traffic_class(tree, device, port);
    q.counters = stats.and_then(counters::parse);
    q.global_pause = global_pause(tree, netdev).or_else(|| q.counters.as_ref().and_then(pause::from_counters));
    q
}

/// The ToS `pair` sends with on this node's `device` port `port` when no `--tclass` was
/// given: the port's RoCE DSCP from its live set-up (`priority::default_tclass`), and where it
/// came from.
pub fn default_tclass_live(device: &str, port_num: u32, netdev: Option<&str>) -> (u8, super::priority::Source) {
    let Some(netdev) = netdev.filter(|n| crate::probe::tree::valid_netdev_name(n) && crate::model::valid_device_name(device)) else {
        return (0, super::priority::Source::None);
    };
    let tree = SysfsRoot::live();
    // The two ToS sources are two small reads; the whole set-up (dcb, mlnx_qos) only where
    // neither says, for the one-PFC-priority rule.
    let cheap = PortQos {
        traffic_class: read_traffic_class(&tree, device, port_num),
        default_roce_tos: live_default_roce_tos(&tree, device, port_num),
        ..PortQos::default()
    };
    let q = if cheap.traffic_class.is_some() || cheap.default_roce_tos.is_some() { cheap } else { port(&tree, device, port_num, netdev, None) };
    super::priority::default_tclass(None, &q)
}

/// MLNX_OFED's per-port ToS override, where one is set.
fn read_traffic_class(tree: &SysfsRoot, device: &str, port: u32) -> Option<u8> {
    match tree.read_rel(&traffic_class::path(device, port), 4096).as_deref().and_then(traffic_class::parse)? {
        traffic_class::Override::Global(tos) => Some(tos),
        traffic_class::Override::None => None,
    }
}

/// `ethtool -a IF` live, or a bundle's `ethtool/IF.pause.txt`.
fn global_pause(tree: &SysfsRoot, netdev: &str) -> Option<pause::GlobalPause> {
    let text = if tree.is_live() {
        // Never a netdev that ethtool would read as an option (issue #58: ethtool takes no `--`).
        if !crate::probe::tree::valid_tool_netdev(netdev) {
            return None;
        }
        tool::run("ethtool", &["-a", netdev], DCB_LIMIT, ANSWER_CAP).ok()?
    } else {
        tree.bundle_report(&format!("{netdev}.pause.txt"))?
    };
    pause::parse(&text)
}

/// rdma_cm's default ToS, live. Its configfs group exists only while someone made it: where it
/// is missing (and configfs has rdma_cm), make it, read the value and remove the group again,
/// as mlnx-tools' `cma_roce_tos` does (`mkdir`, `echo`, `rmdir`); without root the mkdir is
/// refused and the value stays unknown.
fn live_default_roce_tos(tree: &SysfsRoot, device: &str, port: u32) -> Option<u8> {
    let rel = rdma_cm::path(true, device, port);
    if let Some(text) = tree.read_rel(&rel, 64) {
        return rdma_cm::parse_tos(&text);
    }
    let base = tree.path().join("kernel/config/rdma_cm");
    if !base.is_dir() {
        return None;
    }
    let group = base.join(device);
    if group.exists() || std::fs::create_dir(&group).is_err() {
        return None;
    }
    let value = tree.read_rel(&rel, 64).as_deref().and_then(rdma_cm::parse_tos);
    // The group was ours: leave configfs as it was.
    let _ = std::fs::remove_dir(&group);
    value
}

/// The `dcb -j` answers of a bundle (`dcb/IF.json`), else a 0.3 bundle's `dcb/IF.pfc.txt`.
fn bundle_dcb(tree: &SysfsRoot, netdev: &str) -> PortQos {
    if let Some(text) = tree.read_rel(&format!("dcb/{netdev}.json"), ANSWER_CAP) {
        return match dcb_json::parse_bundle(&text) {
            Some(q) => PortQos { asked: vec![Asked { tool: Tool::Dcb, unread: None }], ..q },
            None => asked(Tool::Dcb, Unread::Unparsed(first_words(&text))),
        };
    }
    if let Some(text) = tree.read_rel(&format!("dcb/{netdev}.pfc.txt"), ANSWER_CAP) {
        let pfc = crate::probe::capacity::dcb_pfc_priorities(&text);
        let mut q = PortQos { asked: vec![Asked { tool: Tool::DcbPfcText, unread: None }], ..PortQos::default() };
        q.pfc = pfc.map(|on| std::array::from_fn(|p| on.contains(&(p as u8))));
        if q.pfc.is_none() {
            q.asked[0].unread = Some(Unread::Unparsed(first_words(&text)));
        }
        return q;
    }
    asked(Tool::Dcb, Unread::NotInBundle)
}

/// `mlnx_qos -i IF`: run live, or a bundle's `tools/mlnx_qos/IF.txt`.
fn mlnx(tree: &SysfsRoot, netdev: &str) -> PortQos {
    let text = if tree.is_live() {
        match crate::probe::tool::find_program("mlnx_qos") {
            None => Err(Unread::NotInstalled),
            Some(path) => tool::run(&path.to_string_lossy(), &["-i", netdev], MLNX_QOS_LIMIT, ANSWER_CAP).map_err(unread),
        }
    } else {
        tree.read_rel(&format!("tools/mlnx_qos/{netdev}.txt"), ANSWER_CAP).ok_or(Unread::NotInBundle)
    };
    match text {
        Err(why) => asked(Tool::MlnxQos, why),
        Ok(text) => match mlnx_qos::parse(&text) {
            Some(q) => PortQos { asked: vec![Asked { tool: Tool::MlnxQos, unread: None }], ..q },
            None => asked(Tool::MlnxQos, Unread::Unparsed(first_words(&text))),
        },
    }
}

/// Each `dcb -j OBJECT show dev IF`, live. The first answer that says the netdev has no DCB
/// ends the asking.
fn live_dcb(netdev: &str) -> PortQos {
    let Some(program) = crate::probe::tool::find_program("dcb") else { return asked(Tool::Dcb, Unread::NotInstalled) };
    let program = program.to_string_lossy().into_owned();
    let ask = |object: &str| tool::run(&program, &["-j", object, "show", "dev", netdev], DCB_LIMIT, ANSWER_CAP).map_err(unread);
    let pfc = match ask("pfc") {
        Ok(text) => dcb_json::answer(&text),
        Err(why) => return asked(Tool::Dcb, why),
    };
    let [ets, apptrust, app, buffer] = ["ets", "apptrust", "app", "buffer"].map(|o| ask(o).ok().as_deref().and_then(dcb_json::answer));
    let q = dcb_json::from_answers(pfc.as_ref(), ets.as_ref(), apptrust.as_ref(), app.as_ref(), buffer.as_ref());
    let unread = (!q.dcb_read()).then(|| Unread::Unparsed("no answer dcb reads".into()));
    PortQos { asked: vec![Asked { tool: Tool::Dcb, unread }], ..q }
}

/// Only the PFC of `netdev`, live: `dcb -j pfc show`, else `mlnx_qos -i` (what `pair.qos` needs
/// around each test).
pub fn live_pfc(netdev: &str) -> Option<[bool; 8]> {
    if !crate::probe::tree::valid_tool_netdev(netdev) {
        return None;
    }
    if let Some(program) = crate::probe::tool::find_program("dcb") {
        let text = tool::run(&program.to_string_lossy(), &["-j", "pfc", "show", "dev", netdev], DCB_LIMIT, ANSWER_CAP);
        match text.ok().as_deref().and_then(dcb_json::answer) {
            Some(pfc) => return dcb_json::from_answers(Some(&pfc), None, None, None, None).pfc,
            // No DCB on the netdev: mlnx_qos would say no more.
            None => return None,
        }
    }
    let path = crate::probe::tool::find_program("mlnx_qos")?;
    tool::run(&path.to_string_lossy(), &["-i", netdev], MLNX_QOS_LIMIT, ANSWER_CAP).ok().as_deref().and_then(mlnx_qos::parse)?.pfc
}

fn asked(tool: Tool, why: Unread) -> PortQos {
    PortQos { asked: vec![Asked { tool, unread: Some(why) }], ..PortQos::default() }
}

fn unread(e: ToolError) -> Unread {
    match e {
        ToolError::NotInstalled => Unread::NotInstalled,
        ToolError::TimedOut => Unread::TimedOut,
        ToolError::NotPermitted => Unread::NotPermitted,
        ToolError::Failed(why) if why.to_ascii_lowercase().contains("not supported") => Unread::NotSupported,
        ToolError::Failed(why) => Unread::Failed(why),
    }
}

/// The first printable words of a text that did not parse, for the finding.
fn first_words(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("(empty)");
    line.chars().filter(|c| !c.is_control()).take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch bundle, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("fabcheck-qos-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn bundle(tag: &str, files: &[(&str, &str)]) -> (Scratch, SysfsRoot) {
        let dir = scratch(tag);
        for (path, text) in files {
            let p = dir.0.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let tree = SysfsRoot::at(&dir.0);
        (dir, tree)
    }

    #[test]
    fn a_bundle_without_qos_files_says_so() {
        let (_d, tree) = bundle("none", &[("class/net/ens2np0/mtu", "9000\n")]);
        let q = port(&tree, "mlx5_0", 1, "ens2np0", None);
        assert!(!q.dcb_read());
        assert_eq!(
            q.asked.iter().map(|a| (a.tool, a.unread.clone())).collect::<Vec<_>>(),
            vec![(Tool::MlnxQos, Some(Unread::NotInBundle)), (Tool::Dcb, Some(Unread::NotInBundle))]
        );
        assert_eq!((q.ecn_np, q.default_roce_tos, q.counters), (None, None, None));
    }

    #[test]
    fn mlnx_qos_wins_the_trust_state_and_dcb_fills_the_rest() {
        let (_d, tree) = bundle("both", &[
            ("dcb/ens2np0.json", "{\"pfc\":{\"prio_pfc\":[false,false,false,true,false,false,false,false]},\"app\":{}}"),
            ("tools/mlnx_qos/ens2np0.txt", "Priority trust state: dscp\ndscp2prio mapping:\n\tprio:3 dscp:26,\nPFC configuration:\n\tenabled     0   0   0   1   0   0   0   0\n"),
            ("config/rdma_cm/mlx5_0/ports/1/default_roce_tos", "106\n"),
            ("class/net/ens2np0/ecn/roce_np/cnp_dscp", "48\n"),
        ]);
        let q = port(&tree, "mlx5_0", 1, "ens2np0", Some("     rx_prio3_bytes: 5\n"));
        assert_eq!(q.trust, Some(super::super::Trust::Dscp), "dcb's inference (no DSCP entries: pcp) loses to mlnx_qos's own line");
        assert_eq!(q.default_roce_tos, Some(106));
        assert_eq!(q.cnp_dscp.map(|d| d.get()), Some(48));
        assert_eq!(q.ecn_np, None, "no enable/ files: unknown");
        assert_eq!(q.counters.map(|c| c.rx_bytes[3]), Some(Some(5)));
    }

    #[test]
    fn a_link_out_of_the_bundle_is_not_followed() {
        let outside = scratch("outside");
        std::fs::write(outside.0.join("secret.json"), "{\"pfc\":{\"prio_pfc\":[true,true,true,true,true,true,true,true]}}").unwrap();
        let (d, tree) = bundle("link", &[("class/net/ens2np0/mtu", "9000\n")]);
        std::fs::create_dir_all(d.0.join("dcb")).unwrap();
        std::os::unix::fs::symlink(outside.0.join("secret.json"), d.0.join("dcb/ens2np0.json")).unwrap();
        let q = port(&tree, "mlx5_0", 1, "ens2np0", None);
        assert_eq!(q.pfc, None, "the linked file was read: {q:?}");
        assert!(tree.take_unreadable().iter().any(|u| u.path.ends_with("dcb/ens2np0.json")), "the refusal is named");
    }

    #[test]
    fn a_fifo_or_a_huge_answer_is_unreadable_not_a_hang() {
        let (d, tree) = bundle("hostile", &[("tools/mlnx_qos/ens2np0.txt", &"x".repeat(300 << 10))]);
        std::fs::create_dir_all(d.0.join("dcb")).unwrap();
        let fifo = d.0.join("dcb/ens2np0.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let started = std::time::Instant::now();
        let q = port(&tree, "mlx5_0", 1, "ens2np0", None);
        assert!(started.elapsed() < Duration::from_secs(5), "a FIFO must not block the read");
        assert!(!q.dcb_read(), "{q:?}");
        let unread: Vec<String> = tree.take_unreadable().into_iter().map(|u| u.path).collect();
        assert!(unread.iter().any(|p| p.ends_with("dcb/ens2np0.json")) && unread.iter().any(|p| p.ends_with("mlnx_qos/ens2np0.txt")), "{unread:?}");
    }

    #[test]
    fn old_bundles_give_pfc_only() {
        let (_d, tree) = bundle("old", &[("dcb/ens2np0.pfc.txt", "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n")]);
        let q = port(&tree, "mlx5_0", 1, "ens2np0", None);
        assert_eq!(q.pfc_priorities().map(|p| p.len()), Some(1));
        assert_eq!(q.trust, None);
        assert_eq!(q.asked[1].tool, Tool::DcbPfcText);
    }
}
