//! `roce.qos` and `roce.lossless` on the healthy ConnectX-7 bundle (tests/fixtures/
//! roce-qos-healthy-cx7), each trap made by changing one figure of its read set-up.

use super::{run, Expectations, Finding, Input, Report, Scope, Severity, Status};
use crate::outcome::{Family, FindingId};
use crate::probe::qos::{Dscp, PortQos, TcSched, Tool, Tsa, Unread};
use crate::probe::{self, Inventory};
use std::path::Path;

fn healthy() -> Inventory {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roce-qos-healthy-cx7");
    probe::inventory(&probe::Source::Sysfs(root), None).unwrap()
}

fn qos(inv: &mut Inventory) -> &mut PortQos {
    inv.devices[0].ports[0].qos.as_mut().expect("the bundle's set-up was read")
}

fn judge(inv: &Inventory, expect: &Expectations) -> Report {
    run(&Input { inventory: inv, host: None, expect, scope: &Scope::default() })
}

fn expect(items: &[&str]) -> Expectations {
    let mut e = Expectations::default();
    for i in items {
        e.set(i).unwrap();
    }
    e
}

fn findings(r: &Report, id: FindingId) -> Vec<&Finding> {
    r.findings.iter().filter(|f| f.id == id).collect()
}

fn status(r: &Report, id: FindingId) -> Status {
    r.checks.iter().find(|c| c.id == id && c.subject == "mlx5_0/1").unwrap_or_else(|| panic!("no {id} row: {:#?}", r.checks)).status
}

#[test]
fn the_healthy_node_passes_on_priority_3() {
    let inv = healthy();
    let r = judge(&inv, &Expectations::default());
    assert_eq!((status(&r, FindingId::RoceQos), status(&r, FindingId::RoceLossless)), (Status::Pass, Status::Pass), "{:#?}", r.findings);
    let row = r.checks.iter().find(|c| c.id == FindingId::RoceQos).unwrap();
    assert!(row.observed.starts_with("RoCE priority 3 (DSCP 26 from rdma_cm's default_roce_tos 106, trust dscp)"), "{}", row.observed);
    assert!(r.findings.iter().all(|f| f.id.family() != Family::Roce), "{:#?}", r.findings);
}

#[test]
fn an_expected_dscp_on_a_priority_without_pfc_fails_naming_it() {
    let r = judge(&healthy(), &expect(&["roce_dscp=46"]));
    let f = findings(&r, FindingId::RoceQos);
    assert_eq!(f[0].severity, Severity::Error);
    assert!(f[0].message.contains("DSCP 46 maps to priority 5, which has no PFC (PFC is on 3)"), "{}", f[0].message);
    assert!(
        f[0].remedy.contains("mlnx_qos -i ens2np0 --pfc 0,0,0,1,0,1,0,0") && f[0].remedy.contains("dcb pfc set dev ens2np0 prio-pfc 5:on"),
        "{}",
        f[0].remedy
    );
    assert!(f[0].remedy.contains("pair --tclass 184"), "DSCP 46 << 2: {}", f[0].remedy);
    // One fault, one error: the lossless row fails naming roce.qos's cause, without a finding
    // of its own (settled again, it stays failed).
    assert_eq!(status(&r, FindingId::RoceLossless), Status::Fail);
    assert!(findings(&r, FindingId::RoceLossless).is_empty());
    let row = r.checks.iter().find(|c| c.id == FindingId::RoceLossless).unwrap();
    assert!(row.observed.starts_with("see roce.qos: ") && row.cause == Some(FindingId::RoceQos), "{row:?}");
    let mut again = r.clone();
    again.settle();
    assert_eq!(status(&again, FindingId::RoceLossless), Status::Fail);
    // rdma_cm's 106 rides lossy priority 3 while the expected DSCP's priority has PFC: a warning naming rdma_cm.
    let mut inv = healthy();
    qos(&mut inv).pfc = Some([false, false, false, false, false, true, false, false]);
    let r = judge(&inv, &expect(&["roce_dscp=46"]));
    let f = findings(&r, FindingId::RoceQos);
    assert!(f.iter().any(|f| f.severity == Severity::Warning && f.message.contains("rdma_cm's default_roce_tos 106")), "{f:#?}");
    assert!(f.iter().all(|f| f.severity != Severity::Error), "{f:#?}");
    // The traffic_class override replaces rdma_cm's value on every QP: no warning then.
    let mut inv = healthy();
    qos(&mut inv).pfc = Some([false, false, false, false, false, true, false, false]);
    qos(&mut inv).traffic_class = Some(184);
    let r = judge(&inv, &Expectations::default());
    assert_eq!(status(&r, FindingId::RoceQos), Status::Pass, "{:#?}", r.findings);
}

#[test]
fn a_class_without_a_share_and_a_buffer_without_room_are_errors() {
    let mut inv = healthy();
    let mut tcs = qos(&mut inv).tcs.unwrap();
    tcs[3] = Some(TcSched { tsa: Tsa::Ets, bw: Some(0) });
    qos(&mut inv).tcs = Some(tcs);
    let r = judge(&inv, &Expectations::default());
    let f = findings(&r, FindingId::RoceQos);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].message.contains("traffic class 3, which has no ETS share (ets, 0%"), "{}", f[0].message);
    assert!(f[0].remedy.contains("dcb ets set dev ens2np0 tc-bw 3:"), "{}", f[0].remedy);
    assert_eq!(status(&r, FindingId::RoceLossless), Status::Pass, "PFC still holds priority 3");

    let mut inv = healthy();
    qos(&mut inv).buffer_size = Some([130_944, 0, 0, 0, 0, 0, 0, 0]);
    let r = judge(&inv, &Expectations::default());
    let f = findings(&r, FindingId::RoceQos);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(f[0].message.contains("receive buffer 1 is 0 bytes"), "{}", f[0].message);
    assert!(findings(&r, FindingId::RoceLossless).is_empty(), "one fault, one error");
}

#[test]
fn ecn_off_warns_and_is_an_error_when_expected() {
    let mut inv = healthy();
    let mut np = qos(&mut inv).ecn_np.unwrap();
    np[3] = false;
    qos(&mut inv).ecn_np = Some(np);
    let r = judge(&inv, &Expectations::default());
    let f = findings(&r, FindingId::RoceQos);
    assert_eq!((f.len(), f[0].severity), (1, Severity::Warning));
    assert!(f[0].message.contains("ECN/DCQCN is off on RoCE's priority 3 (roce_np disabled)"), "{}", f[0].message);
    assert!(f[0].remedy.contains("echo 1 > /sys/class/net/ens2np0/ecn/roce_np/enable/3"), "{}", f[0].remedy);
    let r = judge(&inv, &expect(&["ecn=on"]));
    assert_eq!(findings(&r, FindingId::RoceQos)[0].severity, Severity::Error);
    // Not read (an upstream kernel has no ecn/ tree): said with --expect ecn=on, silent without.
    qos(&mut inv).ecn_np = None;
    assert!(findings(&judge(&inv, &Expectations::default()), FindingId::RoceQos).is_empty());
    let f = judge(&inv, &expect(&["ecn=on"]));
    assert_eq!(findings(&f, FindingId::RoceQos)[0].severity, Severity::Warning);
    assert!(findings(&f, FindingId::RoceQos)[0].message.contains("not verified"));
}

#[test]
fn cnps_in_a_lossy_ets_class_warn() {
    let mut inv = healthy();
    let mut tcs = qos(&mut inv).tcs.unwrap();
    tcs[6] = Some(TcSched { tsa: Tsa::Ets, bw: Some(10) });
    qos(&mut inv).tcs = Some(tcs);
    let r = judge(&inv, &Expectations::default());
    let f = findings(&r, FindingId::RoceQos);
    assert_eq!((f.len(), f[0].severity), (1, Severity::Warning), "{f:#?}");
    assert!(f[0].message.contains("CNPs (DSCP 48, priority 6) land in traffic class 6, a lossy ETS class (10% share"), "{}", f[0].message);
    // On the RoCE priority's own (lossless) class, or a strict one, they are safe.
    qos(&mut inv).cnp_dscp = Dscp::new(26);
    assert!(findings(&judge(&inv, &Expectations::default()), FindingId::RoceQos).is_empty());
}

#[test]
fn soft_roce_and_a_netdev_without_dcb_skip_naming_why() {
    let mut inv = healthy();
    inv.devices[0].ports[0].qos =
        Some(PortQos { asked: vec![crate::probe::qos::Asked { tool: Tool::Dcb, unread: Some(Unread::NotSupported) }], ..PortQos::default() });
    let r = judge(&inv, &Expectations::default());
    let row = r.checks.iter().find(|c| c.id == FindingId::RoceQos).unwrap();
    assert_eq!(row.status, Status::Skip);
    assert!(row.observed.contains("ens2np0 has no DCB (dcb: Operation not supported)"), "{}", row.observed);
    assert_eq!(status(&r, FindingId::RoceLossless), Status::Skip);
    inv.devices[0].ca_type = "Soft-RoCE (rxe)".into();
    let r = judge(&inv, &Expectations::default());
    assert!(r.checks.iter().find(|c| c.id == FindingId::RoceQos).unwrap().observed.starts_with("Soft-RoCE (rxe) runs on a plain netdev"));
}

#[test]
fn an_unknown_priority_is_skip_with_what_would_tell_it() {
    let mut inv = healthy();
    qos(&mut inv).default_roce_tos = None;
    // No DSCP source, PFC on exactly one priority: that one is judged, with a warning.
    let r = judge(&inv, &Expectations::default());
    assert_eq!(status(&r, FindingId::RoceQos), Status::Warn);
    let f = findings(&r, FindingId::RoceQos);
    assert!(f[0].message.contains("priority 3, the one with PFC") && f[0].message.contains("NCCL_IB_TC"), "{}", f[0].message);
    // PFC on two: which one is RoCE's is not known.
    qos(&mut inv).pfc = Some([false, false, false, true, true, false, false, false]);
    let r = judge(&inv, &Expectations::default());
    let row = r.checks.iter().find(|c| c.id == FindingId::RoceQos).unwrap();
    assert_eq!(row.status, Status::Skip);
    assert!(row.observed.contains("--expect roce_dscp=N") && row.observed.contains("default_roce_tos"), "{}", row.observed);
    let lossless = r.checks.iter().find(|c| c.id == FindingId::RoceLossless).unwrap();
    assert_eq!((lossless.status, lossless.observed.starts_with("PFC on priorities 3,4;")), (Status::Skip, true), "{lossless:?}");
    // The expectation alone is enough.
    assert_eq!(status(&judge(&inv, &expect(&["roce_dscp=26"])), FindingId::RoceQos), Status::Pass);
    // Tagged RoCE on a PCP port: the tag's priority is not the port's to say.
    let mut inv = healthy();
    qos(&mut inv).trust = Some(crate::probe::qos::Trust::Pcp);
    for g in inv.devices[0].ports[0].gids.iter_mut() {
        g.netdev = Some("ens2np0.100".into());
    }
    let row = judge(&inv, &Expectations::default()).checks.into_iter().find(|c| c.id == FindingId::RoceQos).unwrap();
    assert!(row.observed.contains("RoCE runs tagged on ens2np0.100"), "{}", row.observed);
}

/// A window's reads: the healthy node's counters at its start, `change` applied at its end.
fn soaked(change: impl Fn(&mut crate::probe::qos::PrioCounters)) -> Inventory {
    let start = healthy();
    let mut end = start.clone();
    change(qos(&mut end).counters.as_mut().unwrap());
    crate::probe::soak::apply(&start, &mut end, 10.0, false);
    end
}

#[test]
fn a_soak_window_judges_pauses_storms_and_discards_on_the_roce_priority() {
    let quiet = soaked(|_| {});
    assert_eq!(status(&judge(&quiet, &Expectations::default()), FindingId::RoceQos), Status::Pass);

    let storm = soaked(|c| c.pause_storm_error_events = c.pause_storm_error_events.map(|v| v + 1));
    let f = judge(&storm, &Expectations::default());
    assert_eq!(findings(&f, FindingId::RoceQos)[0].severity, Severity::Error);
    assert!(findings(&f, FindingId::RoceQos)[0].message.contains("during the 10 s window (tx_pause_storm_error_events +1)"));

    let dropped = soaked(|c| c.rx_buf_discard[3] = c.rx_buf_discard[3].map(|v| v + 40));
    let f = judge(&dropped, &Expectations::default());
    assert!(findings(&f, FindingId::RoceQos)
        .iter()
        .any(|f| f.severity == Severity::Error && f.message.contains("40 packets of RoCE's lossless priority 3")));

    // 6 s of a 10 s window paused: an error; 1 s: a warning; 1 ms: said.
    for (us, want) in [(6_000_000, Severity::Error), (1_000_000, Severity::Warning), (1_000, Severity::Info)] {
        let paused = soaked(|c| {
            c.rx_pause_duration_us[3] = c.rx_pause_duration_us[3].map(|v| v + us);
            c.rx_pause[3] = c.rx_pause[3].map(|v| v + 7);
        });
        let f = judge(&paused, &Expectations::default());
        let f = findings(&f, FindingId::RoceQos);
        assert_eq!(f[0].severity, want, "{us} us: {f:#?}");
        assert!(f[0].message.contains("RoCE's priority 3 was paused for") && f[0].message.contains("7 pause frames"), "{}", f[0].message);
    }
}

#[test]
fn lifetime_discards_are_info_with_the_uptime_they_cover() {
    let mut inv = healthy();
    let c = qos(&mut inv).counters.as_mut().expect("the bundle's ethtool -S was read");
    (c.rx_buf_discard[3], c.rx_discards_phy) = (Some(7), Some(9));
    // A bundle: no uptime, "since boot".
    let r = judge(&inv, &Expectations::default());
    let f = findings(&r, FindingId::RoceQos);
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(f.iter().all(|f| f.severity == Severity::Info && f.message.contains("lifetime figures, since boot")), "{f:#?}");
    assert_eq!(status(&r, FindingId::RoceQos), Status::Pass);
    // Live: the uptime the node was read with (/proc/uptime).
    qos(&mut inv).uptime_s = Some(3 * 86_400 + 4 * 3600);
    let r = judge(&inv, &Expectations::default());
    let f = findings(&r, FindingId::RoceQos);
    assert!(f.iter().any(|f| f.message.starts_with("7 packets of RoCE's priority 3")), "{f:#?}");
    assert!(f.iter().all(|f| f.message.contains("lifetime figures, over 3 d 4 h of uptime: since the driver loaded")), "{f:#?}");
}
