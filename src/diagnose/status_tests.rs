//! A row's status follows its findings (issue #28 item 7), and the RoCE MTU the kernel derives
//! (issue #28 item 1): each test here fails on 0.2's code.

use super::{run, Check, Expectations, Finding, FindingId, Input, Report, Scope, Severity, Status, Verdict};
use crate::outcome::Family;
use crate::probe::host::HostFacts;
use crate::probe::{self, Inventory};
use std::path::Path;

fn fixture(name: &str) -> Inventory {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    probe::inventory(&probe::Source::Sysfs(root), None).expect("fixture inventory")
}

fn diagnose(inv: &Inventory, host: Option<&HostFacts>, expect: &Expectations) -> Report {
    run(&Input { inventory: inv, host, expect, scope: &Scope::default() })
}

fn row<'a>(r: &'a Report, id: FindingId, subject: &str) -> &'a Check {
    r.checks.iter().find(|c| c.id == id && c.subject == subject).unwrap_or_else(|| panic!("no {id} row on {subject}: {:#?}", r.checks))
}

#[test]
fn a_live_node_without_devices_fails_devices_count() {
    let host = HostFacts::default();
    let r = diagnose(&Inventory::default(), Some(&host), &Expectations::default());
    let c = row(&r, FindingId::DevicesCount, "node");
    assert_eq!((c.status, c.observed.as_str()), (Status::Fail, "0"), "{c:?}");
    let f: Vec<&Finding> = r.findings.iter().filter(|f| f.id == FindingId::DevicesCount).collect();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].severity, f[0].message.as_str()), (Severity::Error, "no RDMA devices found"));
    assert_eq!(r.verdict, Verdict::Fail);
    // Said first, as 0.2 did (the one-line format quotes the first error), the stack's after it.
    assert_eq!(r.findings[0].id, FindingId::DevicesCount, "{:#?}", r.findings);
    assert!(r.findings.iter().any(|f| f.id.family() == Family::Stack && f.severity == Severity::Error), "{:#?}", r.findings);
    // A bundle (no host facts) with no device is refused earlier (exit 2); the rule does not
    // invent a finding for it.
    let r = diagnose(&Inventory::default(), None, &Expectations::default());
    assert_eq!(row(&r, FindingId::DevicesCount, "node").status, Status::Pass);
}

#[test]
fn a_device_without_a_readable_port_fails_devices_count() {
    let mut inv = fixture("hdr-ib-healthy");
    inv.devices[1].ports.clear();
    let r = diagnose(&inv, None, &Expectations::default());
    let c = row(&r, FindingId::DevicesCount, "node");
    assert_eq!(c.status, Status::Fail, "{c:?}");
    let f = r.findings.iter().find(|f| f.id == FindingId::DevicesCount).expect("devices.count finding");
    assert!(f.message.contains(&inv.devices[1].name), "{f:?}");
}

#[test]
fn rows_follow_their_findings_in_one_place() {
    let check = |id: &str, status| Check {
        id: FindingId::parse(id).unwrap(),
        subject: "s".into(),
        status,
        observed: "o".into(),
        expected: None,
        cause: None,
    };
    let finding = |id: &str, severity| Finding {
        id: FindingId::parse(id).unwrap(),
        severity,
        subject: "s".into(),
        message: "m".into(),
        remedy: "r".into(),
        about: None,
    };
    let mut r = Report {
        verdict: Verdict::Pass,
        checks: vec![
            check("port.state", Status::Pass),
            check("port.lid", Status::Fail),
            check("port.sm", Status::Pass),
            check("port.mtu", Status::Skip),
            check("link.rate", Status::Fail),
        ],
        findings: vec![
            finding("port.state", Severity::Error),
            finding("port.lid", Severity::Warning),
            finding("port.sm", Severity::Info),
            finding("port.sm", Severity::Warning),
            finding("link.rate", Severity::Info),
        ],
    };
    r.settle();
    let statuses: Vec<Status> = r.checks.iter().map(|c| c.status).collect();
    assert_eq!(statuses, vec![Status::Fail, Status::Warn, Status::Warn, Status::Skip, Status::Pass]);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.findings[0].severity, Severity::Error, "errors first");
    assert_eq!(serde_json::to_value(Status::Warn).unwrap(), "warn");
}

#[test]
fn a_warning_row_is_warn_not_fail() {
    // Two ports at different MTUs: a warning, so the row is `warn` and the verdict passes.
    let r = diagnose(&fixture("roce-mtu-mismatch"), None, &Expectations::default());
    let c = row(&r, FindingId::PortMtu, "mlx5_1/1");
    assert_eq!(c.status, Status::Warn, "{c:?}");
    assert!(r.checks.iter().all(|c| c.status != Status::Fail), "{:#?}", r.checks);
}

#[test]
fn a_4184_byte_roce_mtu_fails_expect_4096() {
    let mut inv = fixture("roce-healthy-cx7");
    let port = &mut inv.devices[0].ports[0];
    port.netdev_state.as_mut().expect("netdev state").mtu = Some(4184);
    port.active_mtu = None;
    let mut expect = Expectations::default();
    expect.set("mtu=4096").unwrap();
    let r = diagnose(&inv, None, &expect);
    let c = row(&r, FindingId::RoceMtu, "mlx5_0/1");
    assert_eq!(c.status, Status::Fail, "{c:?}");
    assert!(c.observed.starts_with("2048 "), "{c:?}");
    let f = r.findings.iter().find(|f| f.id == FindingId::RoceMtu).expect("roce.mtu finding");
    assert!(f.remedy.contains("at least 4192"), "{}", f.remedy);
    // 4192 carries 4096.
    inv.devices[0].ports[0].netdev_state.as_mut().unwrap().mtu = Some(4192);
    assert_eq!(row(&diagnose(&inv, None, &expect), FindingId::RoceMtu, "mlx5_0/1").status, Status::Pass);
}

#[test]
fn rxe_keeps_its_own_header_allowance() {
    // Soft-RoCE takes 80 bytes (RXE_MAX_HDR_LENGTH): at netdev MTU 4180 its port runs 4096,
    // which is not "more than the netdev carries".
    let mut inv = fixture("rxe-veth");
    let port = &mut inv.devices[0].ports[0];
    assert_eq!(port.active_mtu, Some(1024), "rxe at netdev MTU 1500");
    port.netdev_state.as_mut().expect("netdev state").mtu = Some(4180);
    port.active_mtu = Some(4096);
    let r = diagnose(&inv, None, &Expectations::default());
    assert_eq!(row(&r, FindingId::RoceMtu, &format!("{}/1", inv.devices[0].name)).status, Status::Pass, "{:#?}", r.findings);
}

#[test]
fn an_unlistable_device_class_fails_devices_count() {
    let mut inv = fixture("hdr-ib-healthy");
    inv.unreadable.push(crate::probe::model::Unreadable {
        path: "/sys/class/infiniband".into(),
        error: "cannot read /sys/class/infiniband: permission denied".into(),
    });
    let r = diagnose(&inv, None, &Expectations::default());
    assert_eq!(row(&r, FindingId::DevicesCount, "node").status, Status::Fail);
    let f = r.findings.iter().find(|f| f.id == FindingId::DevicesCount).expect("devices.count finding");
    assert!(f.message.contains("cannot be listed") && f.message.contains("permission denied"), "{f:?}");
}
