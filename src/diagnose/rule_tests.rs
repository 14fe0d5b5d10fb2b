//! Unit tests of `stack_rules`, `node_rules` and `port_rules`: each rule's outcome (check id,
//! subject, status, observed, expected; finding severity) on inventories taken from the captured
//! fixtures and altered one field at a time, and host facts gathered from a fake root.

use super::{run, Check, Expectations, Finding, FindingId, Input, Report, Scope, Severity, Status, Verdict};
use crate::outcome::Family;
use crate::port::GidType;
use crate::probe::host::{self, HostFacts, UverbsFile};
use crate::probe::phy::partner::{LinkPartner, PartnerUnknown};
use crate::probe::{self, Inventory};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> Inventory {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    probe::inventory(&probe::Source::Sysfs(root), None).expect("fixture inventory")
}

fn expect(items: &[&str]) -> Expectations {
    let mut e = Expectations::default();
    for item in items {
        e.set(item).unwrap();
    }
    e
}

fn diagnose(inv: &Inventory, host: Option<&HostFacts>, expect: &Expectations) -> Report {
    run(&Input { inventory: inv, host, expect, scope: &Scope::default() })
}

/// The one check with this id and subject.
fn check<'a>(r: &'a Report, id: FindingId, subject: &str) -> &'a Check {
    let found: Vec<&Check> = r.checks.iter().filter(|c| c.id == id && c.subject == subject).collect();
    assert_eq!(found.len(), 1, "want one {id} check on {subject}, got {found:?}\nall: {:#?}", r.checks);
    found[0]
}

/// The one finding with this id and subject.
fn finding<'a>(r: &'a Report, id: FindingId, subject: &str) -> &'a Finding {
    let found: Vec<&Finding> = r.findings.iter().filter(|f| f.id == id && f.subject == subject).collect();
    assert_eq!(found.len(), 1, "want one {id} finding on {subject}, got {found:?}\nall: {:#?}", r.findings);
    found[0]
}

fn no_finding(r: &Report, id: FindingId) {
    assert!(r.findings.iter().all(|f| f.id != id), "unexpected {id}: {:#?}", r.findings);
}

fn assert_check(c: &Check, status: Status, observed: &str, expected: Option<&str>) {
    assert_eq!((c.status, c.observed.as_str(), c.expected.as_deref()), (status, observed, expected), "{c:?}");
}

// ---------------------------------------------------------------- stack_rules

/// A fake node root for `host::gather`: these modules, these uverbs files, this libibverbs.
fn fake_root(tag: &str, modules: &[&str], uverbs: &[&str], libibverbs: Option<&str>) -> PathBuf {
    let root = std::env::temp_dir().join(format!("fabcheck-root-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for m in modules {
        std::fs::create_dir_all(root.join("sys/module").join(m)).unwrap();
    }
    std::fs::create_dir_all(root.join("dev/infiniband")).unwrap();
    for u in uverbs {
        std::fs::write(root.join("dev/infiniband").join(u), b"").unwrap();
    }
    if let Some(lib) = libibverbs {
        std::fs::create_dir_all(root.join("usr/lib/x86_64-linux-gnu")).unwrap();
        std::fs::write(root.join("usr/lib/x86_64-linux-gnu").join(lib), b"").unwrap();
    }
    root
}

fn gathered(tag: &str, modules: &[&str], uverbs: &[&str], libibverbs: Option<&str>) -> HostFacts {
    let root = fake_root(tag, modules, uverbs, libibverbs);
    let mut facts = host::gather(&root);
    std::fs::remove_dir_all(&root).ok();
    // The process's own limit and identity are not part of the fake root.
    facts.memlock_soft = None;
    facts.is_root = false;
    facts
}

const ALL_MLX5: [&str; 6] = ["ib_core", "ib_uverbs", "rdma_ucm", "rdma_cm", "mlx5_core", "mlx5_ib"];

#[test]
fn stack_healthy_node_passes_every_stack_check() {
    let facts = gathered("ok", &ALL_MLX5, &["uverbs0", "uverbs1"], Some("libibverbs.so.1.14.44.0"));
    assert_eq!(facts.rdma_core_version.as_deref(), Some("44.0"));
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_eq!(r.verdict, Verdict::Pass, "{:#?}", r.findings);
    assert_check(check(&r, FindingId::StackModules, "node"), Status::Pass, "ib_core ib_uverbs rdma_ucm rdma_cm mlx5_core mlx5_ib", None);
    let uverbs = check(&r, FindingId::StackUverbs, "node");
    assert_eq!(uverbs.status, Status::Pass);
    let files: Vec<&str> = uverbs.observed.split(' ').map(|p| p.rsplit('/').next().unwrap()).collect();
    assert_eq!(files, ["uverbs0", "uverbs1"], "{uverbs:?}");
    assert_check(check(&r, FindingId::StackDistribution, "node"), Status::Pass, "rdma-core 44.0", None);
    assert_check(check(&r, FindingId::StackMemlock, "node"), Status::Pass, "unlimited", Some(">= 64 MiB"));
    assert!(r.findings.iter().all(|f| f.id.family() != Family::Stack), "{:#?}", r.findings);
}

#[test]
fn stack_modules_missing_core_and_driver_fail() {
    // ib_uverbs and the devices' driver mlx5_ib absent.
    let facts = gathered("mods", &["ib_core", "rdma_ucm", "mlx5_core"], &["uverbs0"], Some("libibverbs.so.1.14.44.0"));
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_eq!(r.verdict, Verdict::Fail);
    assert_check(check(&r, FindingId::StackModules, "node"), Status::Fail, "ib_core rdma_ucm mlx5_core", Some("ib_uverbs mlx5_ib"));
    let f = finding(&r, FindingId::StackModules, "node");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.remedy.starts_with("modprobe ib_uverbs mlx5_ib"), "{}", f.remedy);
    // rdma_ucm missing is only an info note, not a failure.
    let facts = gathered("ucm", &["ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib"], &["uverbs0"], Some("libibverbs.so.1.14.44.0"));
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_eq!(check(&r, FindingId::StackModules, "node").status, Status::Pass);
    assert_eq!(finding(&r, FindingId::StackModules, "node").severity, Severity::Info);
    assert_eq!(r.verdict, Verdict::Pass);
}

#[test]
fn stack_uverbs_missing_or_unopenable_fails() {
    let facts = gathered("nouverbs", &ALL_MLX5, &[], Some("libibverbs.so.1.14.44.0"));
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackUverbs, "node"), Status::Fail, "no /dev/infiniband/uverbs*", Some("one per device"));
    assert_eq!(finding(&r, FindingId::StackUverbs, "node").severity, Severity::Error);
    assert_eq!(r.verdict, Verdict::Fail);

    let mut facts = gathered("locked", &ALL_MLX5, &["uverbs0"], Some("libibverbs.so.1.14.44.0"));
    facts.uverbs = vec![
        UverbsFile { path: "/dev/infiniband/uverbs0".into(), accessible: true },
        UverbsFile { path: "/dev/infiniband/uverbs1".into(), accessible: false },
    ];
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackUverbs, "node"), Status::Fail, "1 of 2 openable", Some("read/write"));
    assert_eq!(finding(&r, FindingId::StackUverbs, "node").severity, Severity::Error);
}

#[test]
fn stack_distribution_unknown_warns_and_ofed_wins_over_rdma_core() {
    let facts = gathered("nolib", &ALL_MLX5, &["uverbs0"], None);
    assert_eq!(facts.rdma_core_version, None);
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackDistribution, "node"), Status::Warn, "unknown", None);
    assert_eq!(finding(&r, FindingId::StackDistribution, "node").severity, Severity::Warning);
    assert_eq!(r.verdict, Verdict::Pass, "a warning does not fail the node");

    let root = fake_root("ofed", &ALL_MLX5, &["uverbs0"], Some("libibverbs.so.1.14.44.0"));
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::write(root.join("usr/bin/ofed_info"), "#!/bin/bash\necho MLNX_OFED_LINUX-23.10-1.1.9.0:\n").unwrap();
    let facts = host::gather(&root);
    std::fs::remove_dir_all(&root).ok();
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackDistribution, "node"), Status::Pass, "MLNX_OFED_LINUX-23.10-1.1.9.0", None);
}

#[test]
fn stack_service_is_no_longer_judged_from_host_facts() {
    // `stack.service` moved to `driver_rules` (systemctl show: failed, disabled at boot, not
    // installed); host facts carry no units, and the host rules make no such check.
    let facts = gathered("svc", &ALL_MLX5, &["uverbs0"], Some("libibverbs.so.1.14.44.0"));
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert!(r.checks.iter().all(|c| c.id != FindingId::StackService));
}

#[test]
fn stack_memlock_low_is_an_error_for_users_and_info_for_root() {
    let mut facts = gathered("memlock", &ALL_MLX5, &["uverbs0"], Some("libibverbs.so.1.14.44.0"));
    facts.memlock_soft = Some(64 << 10);
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackMemlock, "node"), Status::Fail, "64 KiB", Some(">= 64 MiB"));
    assert_eq!(finding(&r, FindingId::StackMemlock, "node").severity, Severity::Error);
    facts.is_root = true;
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackMemlock, "node"), Status::Pass, "64 KiB", Some(">= 64 MiB"));
    assert_eq!(finding(&r, FindingId::StackMemlock, "node").severity, Severity::Info);
    facts.memlock_soft = Some(64 << 20);
    facts.is_root = false;
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackMemlock, "node"), Status::Pass, "64 MiB", Some(">= 64 MiB"));
}

#[test]
fn stack_rules_are_skipped_for_a_captured_tree() {
    let r = diagnose(&fixture("hdr-ib-healthy"), None, &Expectations::default());
    assert!(r.checks.iter().all(|c| c.id.family() != Family::Stack), "{:#?}", r.checks);
}

// ---------------------------------------------------------------- node_rules

#[test]
fn devices_count_matches_or_fails() {
    let inv = fixture("hdr-ib-healthy");
    let r = diagnose(&inv, None, &expect(&["devices=2"]));
    assert_check(check(&r, FindingId::DevicesCount, "node"), Status::Pass, "2", Some("2"));
    let r = diagnose(&inv, None, &expect(&["devices=3"]));
    assert_check(check(&r, FindingId::DevicesCount, "node"), Status::Fail, "2", Some("3"));
    assert_eq!(finding(&r, FindingId::DevicesCount, "node").severity, Severity::Error);
    assert_eq!(r.verdict, Verdict::Fail);
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::DevicesCount, "node"), Status::Pass, "2", None);
}

#[test]
fn expected_firmware_is_checked_per_device() {
    let inv = fixture("hdr-ib-healthy");
    let r = diagnose(&inv, None, &expect(&["fw=20.39.1002"]));
    assert_check(check(&r, FindingId::DeviceFw, "mlx5_0"), Status::Pass, "20.39.1002", Some("20.39.1002"));
    assert_eq!(r.verdict, Verdict::Pass);
    let r = diagnose(&inv, None, &expect(&["fw=20.40.1000"]));
    for dev in ["mlx5_0", "mlx5_1"] {
        assert_check(check(&r, FindingId::DeviceFw, dev), Status::Fail, "20.39.1002", Some("20.40.1000"));
        assert_eq!(finding(&r, FindingId::DeviceFw, dev).severity, Severity::Error);
    }
    assert_eq!(r.verdict, Verdict::Fail);
}

#[test]
fn mixed_firmware_names_both_devices() {
    let r = diagnose(&fixture("fw-mismatch"), None, &Expectations::default());
    let c = check(&r, FindingId::DeviceFw, "mlx5_0,mlx5_1");
    assert_eq!((c.status, c.expected.as_deref()), (Status::Fail, Some("one version per adapter type")));
    assert!(c.observed.contains("mlx5_0=") && c.observed.contains("mlx5_1="), "{c:?}");
    assert_eq!(finding(&r, FindingId::DeviceFw, "mlx5_0,mlx5_1").severity, Severity::Error);
}

#[test]
fn pci_link_below_capability_warns() {
    let mut inv = fixture("hdr-ib-healthy");
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::PciLink, "mlx5_0"), Status::Pass, "x16 16.0 GT/s PCIe", Some("x16 16.0 GT/s PCIe"));
    let pci = inv.devices[0].pci.as_mut().expect("the fixture has a PCI link");
    pci.current_width = Some(8);
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::PciLink, "mlx5_0"), Status::Warn, "x8 16.0 GT/s PCIe", Some("x16 16.0 GT/s PCIe"));
    assert_eq!(finding(&r, FindingId::PciLink, "mlx5_0").severity, Severity::Warning);
    assert_check(check(&r, FindingId::PciLink, "mlx5_1"), Status::Pass, "x16 16.0 GT/s PCIe", Some("x16 16.0 GT/s PCIe"));
    let pci = inv.devices[0].pci.as_mut().unwrap();
    pci.current_width = Some(16);
    pci.current_speed = Some("8.0 GT/s PCIe".into());
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::PciLink, "mlx5_0"), Status::Warn, "x16 8.0 GT/s PCIe", Some("x16 16.0 GT/s PCIe"));
}

// ---------------------------------------------------------------- port_rules

#[test]
fn link_speed_below_expectation_fails() {
    let inv = fixture("hdr-ib-healthy");
    let r = diagnose(&inv, None, &expect(&["speed=HDR"]));
    assert_check(check(&r, FindingId::LinkSpeed, "mlx5_0/1"), Status::Pass, "HDR", Some("HDR"));
    let r = diagnose(&inv, None, &expect(&["speed=NDR"]));
    assert_check(check(&r, FindingId::LinkSpeed, "mlx5_0/1"), Status::Fail, "HDR", Some("NDR"));
    assert_eq!(finding(&r, FindingId::LinkSpeed, "mlx5_0/1").severity, Severity::Error);
    assert_eq!(r.verdict, Verdict::Fail);
}

#[test]
fn link_width_and_rate_on_a_lane_down_port() {
    let r = diagnose(&fixture("ib-4x-at-1x"), None, &expect(&["rate=200"]));
    assert_check(check(&r, FindingId::LinkWidth, "mlx5_0/1"), Status::Fail, "1X", Some("4X"));
    assert_eq!(finding(&r, FindingId::LinkWidth, "mlx5_0/1").severity, Severity::Error);
    let rate = check(&r, FindingId::LinkRate, "mlx5_0/1");
    assert_eq!((rate.status, rate.expected.as_deref()), (Status::Fail, Some("200 Gb/s")));
    assert!(rate.observed.starts_with("50 Gb/s"), "{rate:?}");
}

#[test]
fn infiniband_port_mtu_against_expectation() {
    let mut inv = fixture("hdr-ib-healthy");
    // sysfs does not hold an IB port's active MTU: skipped, not passed.
    let r = diagnose(&inv, None, &expect(&["mtu=4096"]));
    assert_eq!(check(&r, FindingId::PortMtu, "mlx5_0/1").status, Status::Skip);
    inv.devices[0].ports[0].active_mtu = Some(2048);
    inv.devices[1].ports[0].active_mtu = Some(4096);
    let r = diagnose(&inv, None, &expect(&["mtu=4096"]));
    assert_check(check(&r, FindingId::PortMtu, "mlx5_0/1"), Status::Fail, "2048", Some("4096"));
    assert_eq!(finding(&r, FindingId::PortMtu, "mlx5_0/1").severity, Severity::Error);
    assert_check(check(&r, FindingId::PortMtu, "mlx5_1/1"), Status::Pass, "4096", Some("4096"));
    assert_eq!(r.verdict, Verdict::Fail);
}

#[test]
fn roce_v1_only_gids_warn() {
    let mut inv = fixture("roce-healthy-cx7");
    let r = diagnose(&inv, None, &Expectations::default());
    assert_eq!(check(&r, FindingId::RoceGid, "mlx5_0/1").status, Status::Pass);
    inv.devices[0].ports[0].gids.retain(|g| g.gid_type == GidType::RoceV1);
    assert!(!inv.devices[0].ports[0].gids.is_empty());
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::RoceGid, "mlx5_0/1"), Status::Warn, "routable GIDs are RoCE v1 only", Some("routable RoCE v2 GID"));
    assert_eq!(finding(&r, FindingId::RoceGid, "mlx5_0/1").severity, Severity::Warning);
    assert_eq!(r.verdict, Verdict::Pass);
}

#[test]
fn half_duplex_netdev_warns() {
    let mut inv = fixture("roce-healthy-cx7");
    let r = diagnose(&inv, None, &Expectations::default());
    assert_eq!(check(&r, FindingId::RoceNetdev, "mlx5_0/1").status, Status::Pass);
    inv.devices[0].ports[0].netdev_state.as_mut().expect("netdev state").duplex = Some("half".into());
    let r = diagnose(&inv, None, &Expectations::default());
    let c = check(&r, FindingId::RoceNetdev, "mlx5_0/1");
    assert_eq!((c.status, c.expected.as_deref()), (Status::Warn, Some("full duplex")), "{c:?}");
    assert!(c.observed.contains(" half "), "{c:?}");
    assert_eq!(finding(&r, FindingId::RoceNetdev, "mlx5_0/1").severity, Severity::Warning);
}

#[test]
fn roce_mtu_blames_the_port_left_at_1500() {
    let inv = fixture("roce-mtu-mismatch");
    let r = diagnose(&inv, None, &expect(&["mtu=4096"]));
    assert_check(check(&r, FindingId::RoceMtu, "mlx5_1/1"), Status::Fail, "1024 (netdev ens1f1np1 mtu 1500)", Some("4096"));
    assert_eq!(finding(&r, FindingId::RoceMtu, "mlx5_1/1").severity, Severity::Error);
    assert_check(check(&r, FindingId::RoceMtu, "mlx5_0/1"), Status::Pass, "4096 (netdev ens1f0np0 mtu 9000)", Some("4096"));
    assert_eq!(r.findings.iter().filter(|f| f.severity == Severity::Error).count(), 1, "{:#?}", r.findings);
    // Without an expectation: an active MTU above what the netdev carries is a warning.
    let mut inv = inv;
    inv.devices[1].ports[0].active_mtu = Some(4096);
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::RoceMtu, "mlx5_1/1"), Status::Warn, "4096 (netdev ens1f1np1 mtu 1500)", Some("<= 1024"));
    assert_eq!(finding(&r, FindingId::RoceMtu, "mlx5_1/1").severity, Severity::Warning);
}

/// mlx5 gives each port of a dual-port card its own PCI function and device: the second port
/// left uncabled (no carrier) fails, and its remedy names the card's other port, which is up, as
/// the one to judge alone (`--device mlx5_0:1,...`). A port on a card of its own has no such hint.
#[test]
fn an_uncabled_second_port_names_its_cabled_sibling() {
    let mut inv = fixture("roce-mtu-mismatch");
    for (d, function) in inv.devices.iter_mut().zip(["0000:3b:00.0", "0000:3b:00.1"]) {
        d.pci.as_mut().expect("the fixture reads each PCI function").address = Some(function.into());
    }
    let port = &mut inv.devices[1].ports[0];
    port.state = crate::port::PortState::Down;
    port.phys_state = crate::port::PhysState::Disabled;
    port.netdev_state.as_mut().unwrap().carrier = Some(false);
    let r = diagnose(&inv, None, &Expectations::default());
    let f = finding(&r, FindingId::PortState, "mlx5_1/1");
    assert!(f.remedy.contains("beside mlx5_0:1, which is up") && f.remedy.contains("`fabcheck check --device mlx5_0:1,...`"), "{}", f.remedy);
    inv.devices[0].pci.as_mut().unwrap().address = Some("0000:5e:00.0".into());
    let r = diagnose(&inv, None, &Expectations::default());
    assert!(!finding(&r, FindingId::PortState, "mlx5_1/1").remedy.contains("--device"), "another card: no hint");
}

#[test]
fn link_error_counters_warn_and_one_link_downed_does_not() {
    let r = diagnose(&fixture("ib-4x-at-1x"), None, &Expectations::default());
    let f = finding(&r, FindingId::LinkErrors, "mlx5_0/1");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("symbol_error=4821") && f.message.contains("link_downed=3"), "{}", f.message);
    let mut inv = fixture("ib-4x-at-1x");
    for c in &mut inv.devices[0].ports[0].counters {
        c.value = if c.name == "link_downed" { 1 } else { 0 };
    }
    let r = diagnose(&inv, None, &Expectations::default());
    no_finding(&r, FindingId::LinkErrors);
    inv.devices[0].ports[0].counters.iter_mut().find(|c| c.name == "link_downed").unwrap().value = 2;
    let r = diagnose(&inv, None, &Expectations::default());
    assert!(finding(&r, FindingId::LinkErrors, "mlx5_0/1").message.contains("link_downed=2"));
}

// ---------------------------------------------------------------- capacity (issue 13)

#[test]
fn an_hdr_card_trained_at_edr_fails_without_any_expectation() {
    // What the live probe reads from port_cap_flags2 (HDR supported) on a port that trained EDR.
    let mut inv = fixture("hdr-ib-healthy");
    let p = &mut inv.devices[0].ports[0];
    p.speed = crate::port::Speed::Edr;
    p.speed_supported = crate::probe::capacity::speed_supported(crate::probe::capacity::CAP2_SPEED_HDR);
    // Since 0.3 the ceiling is what both ends enable: the peer's PortInfo enables 4X HDR.
    p.partner = Some(LinkPartner::Enabled { width: crate::port::Width::X4, speed: crate::port::Speed::Hdr });
    let r = diagnose(&inv, None, &Expectations::default());
    assert_eq!(r.verdict, Verdict::Fail);
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Fail, "4X EDR", Some("4X HDR"));
    assert_eq!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").severity, Severity::Error);
    assert!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").message.contains("speed EDR of HDR"));
    // The other port, at its best, passes; a port that says nothing is not judged.
    inv.devices[1].ports[0].speed_supported = Some(crate::port::Speed::Hdr);
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_1/1"), Status::Pass, "4X HDR", Some("4X HDR"));
    let r = diagnose(&fixture("hdr-ib-healthy"), None, &Expectations::default());
    assert!(r.checks.iter().all(|c| c.id != FindingId::LinkTrained), "nothing known, nothing judged");
}

#[test]
fn ports_at_different_mtus_warn_without_an_expectation() {
    let mut inv = fixture("roce-mtu-mismatch");
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::PortMtu, "mlx5_1/1"), Status::Warn, "1024", Some("4096"));
    assert_eq!(finding(&r, FindingId::PortMtu, "mlx5_1/1").severity, Severity::Warning);
    assert_eq!(r.verdict, Verdict::Pass, "a warning");
    // With --expect mtu each port is judged on its own instead, once.
    let r = diagnose(&inv, None, &expect(&["mtu=4096"]));
    no_finding(&r, FindingId::PortMtu);
    // The same MTU everywhere: nothing to say.
    inv.devices[1].ports[0].active_mtu = Some(4096);
    no_finding(&diagnose(&inv, None, &Expectations::default()), FindingId::PortMtu);
}

#[test]
fn roce_qos_not_read_is_skip_and_pfc_off_everywhere_is_an_error() {
    // Nothing read: both rows skip (never pass), saying what to capture.
    let mut inv = fixture("roce-healthy-cx7");
    let r = diagnose(&inv, None, &Expectations::default());
    for id in [FindingId::RoceQos, FindingId::RoceLossless] {
        let c = check(&r, id, "mlx5_0/1");
        assert_eq!(c.status, Status::Skip, "{c:?}");
        assert!(c.observed.contains("fabcheck bundle DIR"), "{c:?}");
    }
    // PFC read and off on every priority: whatever priority RoCE rides is lossy.
    inv.devices[0].ports[0].qos = Some(crate::probe::qos::PortQos { pfc: Some([false; 8]), ..Default::default() });
    let r = diagnose(&inv, None, &Expectations::default());
    assert!(finding(&r, FindingId::RoceQos, "mlx5_0/1").message.contains("PFC is off on every priority of ens2np0"));
    // One fault, one error: roce.lossless fails naming roce.qos's cause, not a second finding.
    no_finding(&r, FindingId::RoceLossless);
    assert!(check(&r, FindingId::RoceLossless, "mlx5_0/1").observed.starts_with("see roce.qos: PFC on priorities none"));
    assert_eq!(check(&r, FindingId::RoceLossless, "mlx5_0/1").status, Status::Fail);
    assert_eq!(r.verdict, Verdict::Fail);
    // With global pause on, every priority is lossless: a warning, not "RoCE is lossy".
    let pause = crate::probe::qos::pause::GlobalPause { rx: true, tx: true, from: crate::probe::qos::pause::PauseFrom::Ethtool };
    inv.devices[0].ports[0].qos.as_mut().unwrap().global_pause = Some(pause);
    let r = diagnose(&inv, None, &Expectations::default());
    assert_eq!(finding(&r, FindingId::RoceQos, "mlx5_0/1").severity, Severity::Warning);
    assert!(finding(&r, FindingId::RoceQos, "mlx5_0/1").message.contains("global pause"));
    assert_eq!(r.verdict, Verdict::Pass);
}

#[test]
fn an_sm_that_is_not_master_or_silent_fails_port_sm() {
    // What `check` learns over MADs (fabric::local) on a live InfiniBand port.
    let mut inv = fixture("hdr-ib-healthy");
    inv.devices[0].ports[0].sm_state = Some("MASTER".into());
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::PortSm, "mlx5_0/1"), Status::Pass, "0x1 MASTER", None);
    for state in ["NO ANSWER", "STANDBY"] {
        inv.devices[0].ports[0].sm_state = Some(state.into());
        let r = diagnose(&inv, None, &Expectations::default());
        assert_check(check(&r, FindingId::PortSm, "mlx5_0/1"), Status::Fail, &format!("0x1 {state}"), Some("MASTER"));
        assert_eq!(finding(&r, FindingId::PortSm, "mlx5_0/1").severity, Severity::Error);
        assert_eq!(r.verdict, Verdict::Fail);
    }
}

#[test]
fn portinfo_width_below_what_the_port_supports_fails_link_trained() {
    // A 4X port trained at 1X, as PortInfo shows it (LinkWidthSupported/Enabled 4X).
    let mut inv = fixture("hdr-ib-healthy");
    let p = &mut inv.devices[0].ports[0];
    p.width = crate::port::Width::X1;
    p.width_supported = Some(crate::port::Width::X4);
    p.speed_supported = Some(crate::port::Speed::Hdr);
    p.partner = Some(LinkPartner::Enabled { width: crate::port::Width::X4, speed: crate::port::Speed::Hdr });
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Fail, "1X HDR", Some("4X HDR"));
    assert!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").message.contains("width 1X of 4X"));
}

#[test]
fn stack_rdma_core_fails_without_libibverbs_warns_without_librdmacm_and_says_nothing_for_a_bundle() {
    use crate::probe::host::LibraryState;
    let mut facts = gathered("libs", &ALL_MLX5, &["uverbs0"], Some("libibverbs.so.1.14.44.0"));
    assert_eq!(facts.libibverbs, LibraryState::NotChecked, "a fake root (like a bundle) is not this process");
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert!(r.checks.iter().all(|c| c.id != FindingId::StackRdmaCore));

    facts.libibverbs = LibraryState::Missing("libibverbs.so.1 cannot be loaded (no such file)".into());
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackRdmaCore, "node"), Status::Fail, "libibverbs missing", Some("libibverbs.so.1 and librdmacm.so.1"));
    let f = finding(&r, FindingId::StackRdmaCore, "node");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.starts_with("rdma-core (libibverbs) is not installed: libibverbs.so.1 cannot be loaded"), "{}", f.message);
    assert!(f.remedy.contains("apt install rdma-core") && f.remedy.contains("dnf install") && f.remedy.contains("DOCA"), "{}", f.remedy);
    assert_eq!(r.verdict, Verdict::Fail);

    facts.libibverbs = LibraryState::Loaded;
    facts.librdmacm = LibraryState::Missing("librdmacm.so.1 cannot be loaded (no such file)".into());
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_eq!(finding(&r, FindingId::StackRdmaCore, "node").severity, Severity::Warning);
    assert_eq!(r.verdict, Verdict::Pass, "verbs work; only rdma_cm connections do not");

    facts.librdmacm = LibraryState::Loaded;
    let r = diagnose(&fixture("hdr-ib-healthy"), Some(&facts), &Expectations::default());
    assert_check(check(&r, FindingId::StackRdmaCore, "node"), Status::Pass, "libibverbs.so.1, librdmacm.so.1 load", None);
}

// ---------------------------------------------------------------- link partner (issue 30)

#[test]
fn an_ib_port_below_its_own_best_is_a_warning_when_the_peer_is_unknown_and_passes_at_what_the_peer_enables() {
    use crate::port::{Speed, Width};
    // An NDR HCA (4X-capable) on a 2X split cable: NDR200, 2X NDR.
    let mut inv = fixture("hdr-ib-healthy");
    let p = &mut inv.devices[0].ports[0];
    (p.width, p.speed) = (Width::X2, Speed::Ndr);
    (p.width_supported, p.speed_supported) = (Some(Width::X4), Some(Speed::Ndr));
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Warn, "2X NDR", Some("4X NDR"));
    let f = finding(&r, FindingId::LinkTrained, "mlx5_0/1");
    assert_eq!(f.severity, Severity::Warning, "no peer PortInfo: never an error");
    assert!(f.message.contains("PortInfo") && f.remedy.contains("--expect rate="), "{f:?}");
    assert_eq!(r.verdict, Verdict::Pass);
    // The switch port enables 2X: the split cable is the design.
    inv.devices[0].ports[0].partner = Some(LinkPartner::Enabled { width: Width::X2, speed: Speed::Ndr });
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Pass, "2X NDR", Some("2X NDR"));
    // The switch port enables 4X NDR and the link runs 2X: a lane fault.
    inv.devices[0].ports[0].partner = Some(LinkPartner::Enabled { width: Width::X4, speed: Speed::Ndr });
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Fail, "2X NDR", Some("4X NDR"));
    assert_eq!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").severity, Severity::Error);
    assert!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").message.contains("both ends enable"));
}

#[test]
fn a_roce_port_is_judged_against_the_fastest_mode_both_ends_advertise() {
    // roce-trained-low: a 400G port at 200G whose partner advertises only 200G.
    let inv = fixture("roce-trained-low");
    assert_eq!(inv.devices[0].ports[0].partner, Some(LinkPartner::Common { gbps: 200.0 }));
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Pass, "200 Gb/s", Some("200 Gb/s"));
    no_finding(&r, FindingId::LinkTrained);
    // --expect rate= still fails a link slower than the operator expects.
    let r = diagnose(&inv, None, &expect(&["rate=400"]));
    assert_eq!(check(&r, FindingId::LinkRate, "mlx5_0/1").status, Status::Fail);
    assert_eq!(r.verdict, Verdict::Fail);
    // A partner that offers 400G too: the link is below both ends.
    let mut inv = fixture("roce-trained-low");
    inv.devices[0].ports[0].partner = Some(LinkPartner::Common { gbps: 400.0 });
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Fail, "200 Gb/s", Some("400 Gb/s"));
    assert_eq!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").severity, Severity::Error);
    // Partner not readable: a warning.
    for why in [PartnerUnknown::NotReported, PartnerUnknown::AutonegOff, PartnerUnknown::NoLine] {
        inv.devices[0].ports[0].partner = Some(LinkPartner::Unknown { why });
        let r = diagnose(&inv, None, &Expectations::default());
        assert_eq!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").severity, Severity::Warning, "{why:?}");
        assert!(finding(&r, FindingId::LinkTrained, "mlx5_0/1").message.contains(why.words()));
    }
}

#[test]
fn a_2x_split_port_passes_when_the_bundles_peer_portinfo_enables_2x() {
    use crate::port::{Speed, Width};
    // ndr-ib-2x: a ConnectX-7 at 2X NDR; its bundle holds the switch port's PortInfo one hop
    // out (tools/peer_portinfo/mlx5_0-1.txt): enabled 1X or 2X, NDR.
    let mut inv = fixture("ndr-ib-2x");
    assert_eq!(inv.devices[0].ports[0].partner, Some(LinkPartner::Enabled { width: Width::X2, speed: Speed::Ndr }));
    // What this 4X-capable HCA's own PortInfo says live.
    let p = &mut inv.devices[0].ports[0];
    (p.width_supported, p.speed_supported) = (Some(Width::X4), Some(Speed::Ndr));
    let r = diagnose(&inv, None, &Expectations::default());
    assert_check(check(&r, FindingId::LinkTrained, "mlx5_0/1"), Status::Pass, "2X NDR", Some("2X NDR"));
    no_finding(&r, FindingId::LinkTrained);
}
