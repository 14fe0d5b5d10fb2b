//! Unit tests of `driver_rules`: each rule's outcome on facts built one field at a time, and
//! `port.link_layer` on a captured fixture with and without its firmware configuration.

use super::run;
use crate::diagnose::facts::Facts;
use crate::diagnose::{inventory_rules, Expectations, Input, Scope, Sheet};
use crate::outcome::FindingId;
use crate::outcome::{Check, Finding, Report, Severity, Status, Verdict};
use crate::probe::host::HostFacts;
use crate::probe::stack::fw_query::FwSummary;
use crate::probe::stack::ipoib::{IpoibMode, IpoibState};
use crate::probe::stack::ofed::{self, LoadedModule, ModuleState, OfedFacts};
use crate::probe::stack::services::parse_show;
use crate::probe::stack::StackFacts;
use crate::probe::{self, Inventory, Source};
use std::path::Path;

fn fixture(name: &str) -> (Inventory, StackFacts) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let source = Source::Sysfs(root);
    let mut inventory = probe::inventory(&source, None).expect("fixture inventory");
    let facts = probe::stack::gather(&mut inventory, &source);
    (inventory, facts)
}

fn expect(items: &[&str]) -> Expectations {
    let mut e = Expectations::default();
    for item in items {
        e.set(item).unwrap();
    }
    e
}

/// The whole check: the ordinary rules, then the driver-stack ones, over the facts that word them.
fn diagnose(inventory: &Inventory, facts: &StackFacts, expect: &Expectations) -> Report {
    let mut sheet = Sheet::over(Facts::of(inventory, &facts.ofed));
    inventory_rules(&Input { inventory, host: None, expect, scope: &Scope::default() }, &mut sheet);
    run(inventory, facts, expect, &Scope::default(), &mut sheet);
    sheet.finish()
}

fn only_driver(facts: &StackFacts, expect: &Expectations) -> Report {
    let inventory = Inventory::default();
    let mut sheet = Sheet::over(Facts::of(&inventory, &facts.ofed));
    run(&inventory, facts, expect, &Scope::default(), &mut sheet);
    sheet.finish()
}

fn check<'a>(r: &'a Report, id: FindingId, subject: &str) -> &'a Check {
    let found: Vec<&Check> = r.checks.iter().filter(|c| c.id == id && c.subject == subject).collect();
    assert_eq!(found.len(), 1, "want one {id} check on {subject}, got {found:?}\nall: {:#?}", r.checks);
    found[0]
}

fn finding<'a>(r: &'a Report, id: FindingId, subject: &str) -> &'a Finding {
    let found: Vec<&Finding> = r.findings.iter().filter(|f| f.id == id && f.subject == subject).collect();
    assert_eq!(found.len(), 1, "want one {id} finding on {subject}, got {found:?}\nall: {:#?}", r.findings);
    found[0]
}

fn none_of(r: &Report, id: FindingId) {
    assert!(r.findings.iter().all(|f| f.id != id), "unexpected {id}: {:#?}", r.findings);
}

// ---------------------------------------------------------------- firmware

#[test]
fn link_layer_mismatch_with_the_change_pending_says_power_cycle_not_set() {
    let (inv, facts) = fixture("cx7-link-type-pending");
    let r = diagnose(&inv, &facts, &expect(&["link_layer=ethernet"]));
    let f = finding(&r, FindingId::PortLinkLayer, "mlx5_0/1");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("LINK_TYPE_P1 is already ETH for the next boot"), "{}", f.message);
    assert!(f.remedy.contains("power cycle") && f.remedy.contains("mlxfwreset -d 0000:17:00.0 reset"), "{}", f.remedy);
    assert!(!f.remedy.contains("set LINK_TYPE_P1"), "the setting is there already: {}", f.remedy);
    // The same node without its firmware configuration gets the generic advice.
    let mut unread = inv.clone();
    unread.devices[0].fw_config = None;
    let r = diagnose(&unread, &StackFacts::default(), &expect(&["link_layer=ethernet"]));
    assert!(finding(&r, FindingId::PortLinkLayer, "mlx5_0/1").remedy.contains("set LINK_TYPE_P1=2"));
}

#[test]
fn the_pending_parameter_is_named_with_or_without_an_expectation() {
    let (inv, facts) = fixture("cx7-link-type-pending");
    for e in [expect(&[]), expect(&["link_layer=ethernet"])] {
        let r = diagnose(&inv, &facts, &e);
        let f = finding(&r, FindingId::FwPending, "mlx5_0");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.contains("LINK_TYPE_P1 IB -> ETH"), "{}", f.message);
        assert!(f.remedy.contains("a warm reboot does not apply"), "{}", f.remedy);
        // SRIOV_EN's `*` row differs from the default only: set on purpose, not pending.
        assert!(!f.message.contains("SRIOV_EN"), "{}", f.message);
    }
    assert_eq!(diagnose(&inv, &facts, &expect(&[])).verdict, Verdict::Pass, "pending alone is a warning");
}

#[test]
fn link_type_already_current_or_not_set() {
    let (mut inv, facts) = fixture("cx7-link-type-pending");
    let config = inv.devices[0].fw_config.as_mut().unwrap();
    let p1 = config.get_mut("LINK_TYPE_P1").unwrap();
    // Next boot IB like now: the generic "set it" stays, with the state named.
    p1.next_boot = p1.current.clone();
    let r = diagnose(&inv, &facts, &expect(&["link_layer=ethernet"]));
    let f = finding(&r, FindingId::PortLinkLayer, "mlx5_0/1");
    assert!(f.message.contains("LINK_TYPE_P1 is IB for the next boot too"), "{}", f.message);
    assert!(f.remedy.contains("set LINK_TYPE_P1=2"), "{}", f.remedy);
    none_of(&r, FindingId::FwPending);
    assert_eq!(check(&r, FindingId::FwPending, "mlx5_0").observed, "none pending");
}

#[test]
fn firmware_not_read_is_info_never_a_failure() {
    let (inv, _) = fixture("cx7-link-type-pending");
    let mut bare = inv.clone();
    bare.devices[0].fw_config = None;
    let live_without_tools =
        StackFacts { looked: true, live: true, firmware: FwSummary { looked: true, tool: None, unread: vec![] }, ..Default::default() };
    let r = diagnose(&bare, &live_without_tools, &expect(&[]));
    let f = finding(&r, FindingId::FwPending, "node");
    assert_eq!(f.severity, Severity::Info);
    assert!(f.message.contains("not read"), "{}", f.message);
    assert_eq!(check(&r, FindingId::FwPending, "node").status, Status::Pass);
    assert_eq!(r.verdict, Verdict::Pass);
    let unread = StackFacts {
        looked: true,
        firmware: FwSummary {
            looked: true,
            tool: None,
            unread: vec![("mlx5_0".into(), crate::probe::stack::fw_query::FwUnread::NotInBundle("0000:17:00.0.txt".into()))],
        },
        ..Default::default()
    };
    let r = diagnose(&bare, &unread, &expect(&[]));
    assert_eq!(finding(&r, FindingId::FwPending, "mlx5_0").severity, Severity::Info);
    // A bundle from before tools/: silent.
    let r = diagnose(&bare, &StackFacts::default(), &expect(&[]));
    assert!(r.checks.iter().all(|c| c.id != FindingId::FwPending));
}

// ---------------------------------------------------------------- OFED

const OFED: &str = "MLNX_OFED_LINUX-23.10-1.1.9.0";
const RUNNING: &str = "5.15.0-91-generic";

fn ofed_module(file: &str, version: Option<&str>, src: &str, built_for: &str, loaded: Option<(Option<&str>, &str)>) -> ModuleState {
    ModuleState {
        name: "mlx5_core".into(),
        on_disk: Some(ofed::ModInfo {
            filename: Some(file.into()),
            version: version.map(Into::into),
            srcversion: Some(src.into()),
            built_for: Some(built_for.into()),
        }),
        loaded: loaded.map(|(v, s)| LoadedModule { version: v.map(Into::into), srcversion: Some(s.into()) }),
    }
}

fn ofed_facts(module: ModuleState) -> StackFacts {
    StackFacts {
        looked: true,
        ofed: OfedFacts { installed: Some(OFED.into()), kernel: Some(RUNNING.into()), modules: vec![module] },
        ..Default::default()
    }
}

const DKMS: &str = "/lib/modules/5.15.0-91-generic/updates/dkms/mlx5_core.ko";

#[test]
fn ofed_installed_with_the_inbox_module_names_the_dkms_remedy() {
    let inbox = ofed_module(
        "/lib/modules/5.15.0-91-generic/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko",
        None,
        "AAA",
        RUNNING,
        Some((None, "AAA")),
    );
    let r = only_driver(&ofed_facts(inbox), &expect(&[]));
    let f = finding(&r, FindingId::StackOfed, "mlx5_core");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("inbox mlx5_core"), "{}", f.message);
    assert!(f.remedy.contains("dkms autoinstall -k 5.15.0-91-generic"), "{}", f.remedy);
    assert_eq!(r.verdict, Verdict::Fail);
    // stack.distribution names what runs, not what is installed.
    // The stack rules of a live node with OFED installed: the running stack is a fact they word.
    let host = HostFacts { ofed_version: Some(OFED.into()), ..HostFacts::default() };
    let inbox = ofed_module("/lib/modules/5.15.0-91-generic/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko", None, "AAA", RUNNING, None);
    let (inventory, facts) = (Inventory::default(), ofed_facts(inbox));
    let mut sheet = Sheet::over(Facts::of(&inventory, &facts.ofed));
    inventory_rules(&Input { inventory: &inventory, host: Some(&host), expect: &expect(&[]), scope: &Scope::default() }, &mut sheet);
    run(&inventory, &facts, &expect(&[]), &Scope::default(), &mut sheet);
    let report = sheet.finish();
    assert_eq!(
        check(&report, FindingId::StackDistribution, "node").observed,
        format!("the kernel's inbox mlx5_core ({OFED} installed, not running)")
    );
}

#[test]
fn ofed_on_disk_but_the_old_module_in_memory() {
    let stale = ofed_module(DKMS, Some("23.10-1.1.9"), "NEW", RUNNING, Some((None, "OLD")));
    let r = only_driver(&ofed_facts(stale), &expect(&[]));
    let f = finding(&r, FindingId::StackOfed, "mlx5_core");
    assert!(f.message.contains("still loaded") && f.message.contains("inbox"), "{}", f.message);
    assert!(f.remedy.contains("openibd restart"), "{}", f.remedy);
    assert_eq!(check(&r, FindingId::StackOfed, "mlx5_core").observed, "loaded srcversion OLD, installed NEW");
}

#[test]
fn modules_built_for_another_kernel() {
    let other = ofed_module(
        "/lib/modules/5.15.0-91-generic/updates/dkms/mlx5_core.ko",
        Some("23.10-1.1.9"),
        "S",
        "5.15.0-88-generic",
        Some((Some("23.10-1.1.9"), "S")),
    );
    let r = only_driver(&ofed_facts(other), &expect(&[]));
    assert_eq!(finding(&r, FindingId::StackOfed, "mlx5_core").severity, Severity::Error);
    assert_eq!(check(&r, FindingId::StackOfed, "mlx5_core").observed, "built for 5.15.0-88-generic, running 5.15.0-91-generic");
    let weak = ofed_module(
        "/lib/modules/5.15.0-91-generic/weak-updates/mlnx-ofa_kernel/mlx5_core.ko",
        Some("23.10-1.1.9"),
        "S",
        "5.15.0-88-generic",
        Some((Some("23.10-1.1.9"), "S")),
    );
    let r = only_driver(&ofed_facts(weak), &expect(&[]));
    assert_eq!(finding(&r, FindingId::StackOfed, "mlx5_core").severity, Severity::Warning);
}

#[test]
fn ofed_installed_over_an_older_one() {
    let old = ofed_module(DKMS, Some("5.8-3.0.7"), "S", RUNNING, Some((Some("5.8-3.0.7"), "S")));
    let r = only_driver(&ofed_facts(old), &expect(&[]));
    let f = finding(&r, FindingId::StackOfed, "mlx5_core");
    assert!(f.message.contains("version 5.8-3.0.7") && f.message.contains("over an older one"), "{}", f.message);
}

#[test]
fn a_consistent_node_raises_none() {
    let good = ofed_module(DKMS, Some("23.10-1.1.9"), "S", RUNNING, Some((Some("23.10-1.1.9"), "S")));
    let mut facts = ofed_facts(good);
    facts.services_read = true;
    facts.services = vec![
        parse_show("openibd", "LoadState=loaded\nActiveState=active\nSubState=exited\nUnitFileState=enabled\n").unwrap(),
        parse_show("rdma-ndd", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=static\n").unwrap(),
    ];
    let r = only_driver(&facts, &expect(&[]));
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(check(&r, FindingId::StackOfed, "mlx5_core").status, Status::Pass);
    assert_eq!(check(&r, FindingId::StackService, "rdma-ndd").status, Status::Pass);
    // Without OFED nothing is claimed about the modules.
    facts.ofed.installed = None;
    assert!(only_driver(&facts, &expect(&[])).checks.iter().all(|c| c.id != FindingId::StackOfed));
}

// ---------------------------------------------------------------- services

fn units(list: &[(&str, &str)]) -> StackFacts {
    StackFacts {
        looked: true,
        services_read: true,
        services: list.iter().filter_map(|(u, text)| parse_show(u, text)).collect(),
        ..Default::default()
    }
}

#[test]
fn units_failed_disabled_static_and_missing() {
    let facts = units(&[
        ("openibd", "LoadState=loaded\nActiveState=active\nSubState=exited\nUnitFileState=disabled\n"),
        ("rdma-ndd", "LoadState=loaded\nActiveState=failed\nSubState=failed\nUnitFileState=static\n"),
        ("rdma", "LoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\n"),
    ]);
    let r = only_driver(&facts, &expect(&[]));
    let disabled = finding(&r, FindingId::StackService, "openibd");
    assert_eq!(disabled.severity, Severity::Warning);
    assert!(disabled.message.contains("disabled at boot"), "{}", disabled.message);
    assert_eq!(disabled.remedy, "systemctl enable openibd");
    let failed = finding(&r, FindingId::StackService, "rdma-ndd");
    assert_eq!(failed.severity, Severity::Error);
    assert!(failed.remedy.contains("journalctl -u rdma-ndd"), "{}", failed.remedy);
    assert!(r.checks.iter().all(|c| c.subject != "rdma"), "a unit that is not installed is silent");
}

#[test]
fn opensm_only_where_the_sm_is_local() {
    let facts = units(&[("opensm", "LoadState=loaded\nActiveState=inactive\nSubState=dead\nUnitFileState=disabled\n")]);
    assert!(only_driver(&facts, &expect(&[])).checks.is_empty());
    let r = only_driver(&facts, &expect(&["sm=local"]));
    assert_eq!(finding(&r, FindingId::StackService, "opensm").severity, Severity::Warning);
    let missing = units(&[]);
    let r = only_driver(&missing, &expect(&["sm=local"]));
    assert_eq!(finding(&r, FindingId::StackService, "opensm").severity, Severity::Error);
    assert!(only_driver(&missing, &expect(&["sm=remote"])).checks.is_empty());
}

#[test]
fn any_running_opensm_unit_is_the_local_sm() {
    // MLNX_OFED: `opensmd`, a SysV script systemd runs as a generated unit; no `opensm` unit.
    let mlnx = units(&[
        ("opensm", "LoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\n"),
        ("opensmd", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=generated\n"),
    ]);
    let r = only_driver(&mlnx, &expect(&["sm=local"]));
    none_of(&r, FindingId::StackService);
    assert_eq!(check(&r, FindingId::StackService, "opensmd").status, Status::Pass);
    // `active (exited)`: the unit is up and the daemon is gone: no SM (issue #51).
    let exited = units(&[("opensmd", "LoadState=loaded\nActiveState=active\nSubState=exited\nUnitFileState=generated\n")]);
    let r = only_driver(&exited, &expect(&["sm=local"]));
    let f = finding(&r, FindingId::StackService, "opensmd");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("active (exited)") && f.remedy.contains("systemctl restart opensmd"), "{f:?}");
    // Debian: the plain unit stopped, one per-port instance of opensm@.service running.
    let debian = units(&[
        ("opensm", "LoadState=loaded\nActiveState=inactive\nSubState=dead\nUnitFileState=disabled\n"),
        ("opensm@0x248a0703002d3a1c", "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n"),
    ]);
    let r = only_driver(&debian, &expect(&["sm=local"]));
    none_of(&r, FindingId::StackService);
    assert!(r.checks.iter().all(|c| c.subject != "opensm"), "the stopped plain unit is not judged: {:?}", r.checks);
    // None of them running: each installed one is judged as before.
    let stopped = units(&[("opensmd", "LoadState=loaded\nActiveState=inactive\nSubState=dead\nUnitFileState=generated\n")]);
    let r = only_driver(&stopped, &expect(&["sm=local"]));
    assert_eq!(finding(&r, FindingId::StackService, "opensmd").severity, Severity::Error);
    assert!(finding(&r, FindingId::StackService, "opensmd").remedy.contains("systemctl start opensmd"));
    // Without sm=local none of them is looked at.
    assert!(only_driver(&mlnx, &expect(&[])).checks.is_empty());
}

// ---------------------------------------------------------------- IPoIB

fn ipoib_facts(up: bool, addresses: Option<Vec<&str>>, mode: Option<IpoibMode>) -> StackFacts {
    StackFacts {
        ipoib: vec![IpoibState {
            port: "mlx5_0/1".into(),
            netdev: "ib0".into(),
            up,
            operstate: if up { "up" } else { "down" }.into(),
            mode,
            addresses: addresses.map(|a| a.into_iter().map(String::from).collect()),
        }],
        ..Default::default()
    }
}

#[test]
fn ipoib_down_unaddressed_or_in_another_mode() {
    let r = only_driver(&ipoib_facts(false, None, None), &expect(&[]));
    assert_eq!(finding(&r, FindingId::Ipoib, "mlx5_0/1").severity, Severity::Warning);
    assert!(finding(&r, FindingId::Ipoib, "mlx5_0/1").remedy.contains("ip link set ib0 up"));
    let r = only_driver(&ipoib_facts(true, Some(vec![]), None), &expect(&[]));
    assert!(finding(&r, FindingId::Ipoib, "mlx5_0/1").message.contains("no IP address"));
    let r = only_driver(&ipoib_facts(true, Some(vec!["10.12.0.5/16"]), Some(IpoibMode::Datagram)), &expect(&["ipoib_mode=connected"]));
    let f = finding(&r, FindingId::Ipoib, "mlx5_0/1");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.message.contains("datagram mode but connected was expected"), "{}", f.message);
    let r = only_driver(&ipoib_facts(true, Some(vec!["10.12.0.5/16"]), Some(IpoibMode::Connected)), &expect(&["ipoib_mode=connected"]));
    assert!(r.findings.is_empty());
    let c = check(&r, FindingId::Ipoib, "mlx5_0/1");
    assert_eq!((c.status, c.observed.as_str(), c.expected.as_deref()), (Status::Pass, "ib0 up, 10.12.0.5/16, connected", Some("connected")));
}

#[test]
fn ipoib_of_the_fixtures() {
    let (inv, facts) = fixture("ipoib-down");
    let r = diagnose(&inv, &facts, &expect(&[]));
    assert_eq!(check(&r, FindingId::Ipoib, "mlx5_0/1").observed, "ib0 down, no address, datagram");
    let (inv, facts) = fixture("ofed-consistent");
    let r = diagnose(&inv, &facts, &expect(&["ipoib_mode=datagram"]));
    assert_eq!(check(&r, FindingId::Ipoib, "mlx5_0/1").observed, "ib0 up, 10.12.4.32/16, datagram");
    // No IPoIB interface: silent, unless a mode is expected.
    let mut none = ipoib_facts(false, None, None);
    none.ipoib[0].netdev.clear();
    assert!(only_driver(&none, &expect(&[])).checks.is_empty());
    assert_eq!(finding(&only_driver(&none, &expect(&["ipoib_mode=datagram"])), FindingId::Ipoib, "mlx5_0/1").severity, Severity::Error);
    // A port that is not ACTIVE has its own finding; its interface is not judged.
    let (inv, facts) = fixture("ib-init-no-sm");
    assert!(facts.ipoib.is_empty());
    assert!(diagnose(&inv, &facts, &expect(&[])).checks.iter().all(|c| c.id != FindingId::Ipoib));
}

#[test]
fn fewer_devices_while_sriov_waits_for_a_cold_boot_says_so() {
    let (inv, facts) = fixture("mstconfig-sriov-pending");
    let r = diagnose(&inv, &facts, &expect(&["devices=17"]));
    let f = finding(&r, FindingId::DevicesCount, "node");
    assert!(f.message.contains("NUM_OF_VFS 0 -> 16") && f.message.contains("appear only then"), "{}", f.message);
    assert!(f.remedy.contains("power cycle"), "{}", f.remedy);
    // Without the pending change, the generic words stay.
    let (inv, facts) = fixture("ofed-consistent");
    let r = diagnose(&inv, &facts, &expect(&["devices=17"]));
    assert!(!finding(&r, FindingId::DevicesCount, "node").message.contains("cold boot"));
}
