//! Unit tests of `pcie_rules`: each rule on health built one function at a time, with the
//! kernel's own file shapes (6.x short rows, 4.19 long ones).

use super::*;
use crate::outcome::{Report, Status, Verdict};
use crate::probe::pci::health::devlink::parse_health;
use crate::probe::pci::health::mlx5::Mlx5Pcie;
use std::collections::BTreeMap;

const COR_CLEAN: &str = "RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n";
const COR_BAD: &str =
    "RxErr 12\nBadTLP 183211\nBadDLLP 4021\nRollover 0\nTimeout 37\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 187281\n";
const UNC_CLEAN: &str = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\n\
    ACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\n";

fn unc(total: &str, cmpltto: u64) -> String {
    format!("{}TOTAL_ERR_{total} {cmpltto}\n", UNC_CLEAN.replace("CmpltTO 0", &format!("CmpltTO {cmpltto}")))
}

fn function(bdf: &str, role: Role, cor: &str, nonfatal: u64) -> FunctionHealth {
    let mut files = BTreeMap::new();
    files.insert(AerSeverity::Correctable, aer::parse(cor));
    files.insert(AerSeverity::NonFatal, aer::parse(&unc("NONFATAL", nonfatal)));
    files.insert(AerSeverity::Fatal, aer::parse(&unc("FATAL", 0)));
    FunctionHealth { bdf: bdf.into(), role, aer: files, unreadable: vec![], mlx5: None }
}

fn nic(bdf: &str, name: &str, cor: &str, nonfatal: u64) -> FunctionHealth {
    function(bdf, Role::Nic { name: name.into() }, cor, nonfatal)
}

fn root_port(bdf: &str, of: &str) -> FunctionHealth {
    function(bdf, Role::Bridge { below: vec![of.into()], link_of: vec![of.into()] }, COR_CLEAN, 0)
}

fn health(functions: Vec<FunctionHealth>) -> PcieHealth {
    PcieHealth {
        functions,
        nics: vec![("mlx5_0".into(), "0000:3b:00.0".into())],
        devlink: DevlinkRead::NotLooked,
        tree: true,
        live: false,
        uptime_s: None,
    }
}

fn judged(h: &PcieHealth, soak: Option<&PcieSoak<'_>>) -> Report {
    let mut sheet = Sheet::default();
    run(h, soak, &mut sheet);
    sheet.finish()
}

fn keys(r: &Report) -> Vec<(&str, Severity, String)> {
    r.findings.iter().map(|f| (f.id.as_str(), f.severity, f.subject.to_string())).collect()
}

fn row<'a>(r: &'a Report, subject: &str) -> &'a crate::outcome::Check {
    r.checks.iter().find(|c| c.id == FindingId::PcieAer && c.subject == subject).unwrap_or_else(|| panic!("no pcie.aer {subject}: {:#?}", r.checks))
}

#[test]
fn a_clean_node_is_one_row() {
    let h = health(vec![nic("0000:3b:00.0", "mlx5_0", COR_CLEAN, 0), root_port("0000:3a:00.0", "mlx5_0 (0000:3b:00.0)")]);
    let r = judged(&h, None);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(r.checks.len(), 1);
    assert_eq!(row(&r, "node").observed, "no AER errors on 2 functions (1 NIC, 0 GPUs, 1 bridge)");
}

#[test]
fn many_bad_tlps_are_a_warning_naming_the_row() {
    let h = health(vec![nic("0000:3b:00.0", "mlx5_0", COR_BAD, 0), root_port("0000:3a:00.0", "mlx5_0 (0000:3b:00.0)")]);
    let r = judged(&h, None);
    assert_eq!(keys(&r), vec![("pcie.aer", Severity::Warning, "0000:3b:00.0".to_string())]);
    let f = &r.findings[0];
    assert!(f.message.contains("187281 correctable errors since boot") && f.message.contains("BadTLP 183211"), "{}", f.message);
    assert!(f.message.contains("mlx5_0 (0000:3b:00.0)") && f.message.contains("link CRC"), "{}", f.message);
    assert!(f.remedy.contains("reseat") && f.remedy.contains("lspci -vvv -s 0000:3b:00.0"), "{}", f.remedy);
    let c = row(&r, "0000:3b:00.0");
    assert_eq!(c.status, Status::Warn);
    assert!(c.observed.starts_with("187281 correctable (BadTLP 183211, BadDLLP 4021); 0 non-fatal; 0 fatal"), "{}", c.observed);
    assert!(c.observed.ends_with("lifetime"));
    // A few correctable errors are said, not judged.
    let few = health(vec![nic("0000:3b:00.0", "mlx5_0", "RxErr 3\nBadTLP 0\nTOTAL_ERR_COR 3\n", 0)]);
    let r = judged(&few, None);
    assert!(r.findings.is_empty());
    assert_eq!(row(&r, "0000:3b:00.0").status, Status::Pass);
}

#[test]
fn an_uncorrectable_error_is_named_with_function_row_count_and_uptime() {
    // A lifetime count is info with the span it covers (issue #51); a rise in a window fails.
    let mut h = health(vec![nic("0000:3b:00.0", "mlx5_0", COR_CLEAN, 3)]);
    let r = judged(&h, None);
    assert_eq!(keys(&r), vec![("pcie.aer", Severity::Info, "0000:3b:00.0".to_string())]);
    assert_eq!(r.verdict, Verdict::Pass);
    let f = &r.findings[0];
    assert!(f.message.contains("3 non-fatal uncorrectable errors since boot (uptime not known): CmpltTO 3"), "{}", f.message);
    h.uptime_s = Some(3 * 86_400 + 4 * 3600);
    assert!(judged(&h, None).findings[0].message.contains("errors over 3 d 4 h of uptime: CmpltTO 3"));
    let f = &r.findings[0];
    assert!(f.message.contains("never answered"), "{}", f.message);
    assert!(f.remedy.contains("dmesg"), "{}", f.remedy);
    // The same on a 4.19 kernel's long row names.
    let long = "Undefined 0\nData Link Protocol 0\nSurprise Down Error 0\nPoisoned TLP 0\nCompletion Timeout 3\nTOTAL_ERR_NONFATAL 3\n";
    let mut old = nic("0000:3b:00.0", "mlx5_0", COR_CLEAN, 0);
    old.aer.insert(AerSeverity::NonFatal, aer::parse(long));
    let r = judged(&health(vec![old]), None);
    assert!(r.findings[0].message.contains("Completion Timeout 3"), "{}", r.findings[0].message);
}

#[test]
fn a_bridge_is_said_to_be_the_other_end_of_the_link() {
    let mut rp = root_port("0000:3a:00.0", "mlx5_0 (0000:3b:00.0)");
    rp.aer.insert(AerSeverity::Correctable, aer::parse(COR_BAD));
    let r = judged(&health(vec![nic("0000:3b:00.0", "mlx5_0", COR_CLEAN, 0), rp]), None);
    assert_eq!(keys(&r), vec![("pcie.aer", Severity::Warning, "0000:3a:00.0".to_string())]);
    assert!(r.findings[0].message.contains("other end of mlx5_0 (0000:3b:00.0)'s link"), "{}", r.findings[0].message);
    assert_eq!(row(&r, "node").observed, "no AER errors on 1 function (1 NIC, 0 GPUs, 0 bridges)");
}

#[test]
fn no_counters_or_unreadable_ones_are_skips() {
    let mut gpu = function("0000:1b:00.0", Role::Gpu, COR_CLEAN, 0);
    gpu.aer.clear();
    let mut bridge = root_port("0000:1a:00.0", "GPU 0000:1b:00.0");
    bridge.aer.clear();
    let mut locked = nic("0000:3b:00.0", "mlx5_0", COR_CLEAN, 0);
    locked.aer.clear();
    locked.unreadable.push(("devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/aer_dev_fatal".into(), "permission denied".into()));
    let r = judged(&health(vec![locked, gpu, bridge]), None);
    assert!(r.findings.is_empty());
    assert_eq!(r.checks.len(), 2, "{:#?}", r.checks);
    assert_eq!(row(&r, "0000:3b:00.0").status, Status::Skip);
    assert!(row(&r, "0000:3b:00.0").observed.contains("permission denied"));
    let absent = row(&r, "0000:1b:00.0");
    assert_eq!(absent.status, Status::Skip);
    assert!(absent.observed.contains("GPU 0000:1b:00.0") && absent.observed.contains("no AER capability"), "{}", absent.observed);
    // No file anywhere: a live node's kernel keeps none (one row); a bundle predates them (none).
    let mut bare = nic("0000:3b:00.0", "mlx5_0", COR_CLEAN, 0);
    bare.aer.clear();
    let mut h = health(vec![bare]);
    assert!(judged(&h, None).checks.is_empty(), "a bundle captured before 0.4");
    h.live = true;
    let r = judged(&h, None);
    assert_eq!((r.checks.len(), row(&r, "node").status), (1, Status::Skip));
    assert!(row(&r, "node").observed.contains("4.19"), "{}", row(&r, "node").observed);
}

#[test]
fn mlx5_counters_are_named_in_pcie_aer() {
    let mut f = nic("0000:3b:00.0", "mlx5_0", COR_CLEAN, 0);
    f.mlx5 = Some((
        "ens1f0np0".into(),
        Mlx5Pcie { rx_signal_integrity: Some(2411), tx_signal_integrity: Some(3), stalled_wr_events: Some(12), ..Mlx5Pcie::default() },
    ));
    let r = judged(&health(vec![f]), None);
    assert_eq!(keys(&r), vec![("pcie.aer", Severity::Warning, "0000:3b:00.0".to_string()), ("pcie.aer", Severity::Info, "0000:3b:00.0".to_string())]);
    assert!(r.findings[0].message.contains("rx_pci_signal_integrity 2411"), "{}", r.findings[0].message);
    assert!(r.findings[0].remedy.contains("riser"), "{}", r.findings[0].remedy);
    assert!(r.findings[1].message.contains("outbound_pci_stalled_wr_events 12"), "{}", r.findings[1].message);
    assert!(row(&r, "0000:3b:00.0").observed.contains("ens1f0np0: rx_pci_signal_integrity 2411"));
}

#[test]
fn a_soak_judges_what_rose() {
    let start = health(vec![nic("0000:3b:00.0", "mlx5_0", "RxErr 0\nBadTLP 10\nTOTAL_ERR_COR 10\n", 2)]);
    let end = health(vec![nic("0000:3b:00.0", "mlx5_0", "RxErr 0\nBadTLP 52\nTOTAL_ERR_COR 52\n", 2)]);
    // At Gen1 x1 (2 Gb/s of data), 42 errors in 10 minutes are a BER of 3.5e-11: above 1e-12.
    let gen1 = tree("2.5 GT/s PCIe", 1);
    let r = judged(&end, Some(&PcieSoak { start: &start, seconds: 600.0, tree: Some(&gen1) }));
    let c = row(&r, "0000:3b:00.0");
    assert_eq!(c.status, Status::Fail);
    assert!(r.findings[0].message.contains("a bit error ratio of 3.5e-11, above the PCIe Base spec's 1e-12"), "{}", r.findings[0].message);
    assert!(c.observed.starts_with("+42 correctable in 10 min"), "{}", c.observed);
    let f = &r.findings[0];
    assert!(f.message.contains("42 correctable errors during the 10 min window: BadTLP 42"), "{}", f.message);
    assert!(f.message.contains("2 non-fatal uncorrectable errors before the window"), "{}", f.message);
    // The same 42 on a Gen4 x16 link (252 Gb/s) are 2.8e-13: a warning; over an hour at Gen5
    // x16, 2.3e-14: within the spec (info). Without the link's figures: a warning.
    let gen4 = tree("16.0 GT/s PCIe", 16);
    let r = judged(&end, Some(&PcieSoak { start: &start, seconds: 600.0, tree: Some(&gen4) }));
    let f = r.findings.iter().find(|f| f.message.contains("bit error ratio")).expect("the rate is said");
    assert!(f.message.contains("2.8e-13, within the PCIe Base spec's 1e-12 but above a tenth of it"), "{}", f.message);
    let gen5 = tree("32.0 GT/s PCIe", 16);
    let r = judged(&end, Some(&PcieSoak { start: &start, seconds: 3600.0, tree: Some(&gen5) }));
    assert!(r.findings.iter().any(|f| f.message.contains("2.3e-14, within the PCIe Base spec's 1e-12 (")), "{:?}", r.findings);
    let r = judged(&end, Some(&PcieSoak { start: &start, seconds: 600.0, tree: None }));
    assert!(r.findings.iter().any(|f| f.severity == Severity::Warning && f.message.contains("not judged as a BER")), "{:?}", r.findings);
    // Nothing rose: a lifetime total of correctable errors is not judged in a window.
    let quiet = health(vec![nic("0000:3b:00.0", "mlx5_0", COR_BAD, 0)]);
    let r = judged(&quiet, Some(&PcieSoak { start: &quiet, seconds: 10.0, tree: None }));
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert!(row(&r, "0000:3b:00.0").observed.starts_with("none rose in 10 s"), "{}", row(&r, "0000:3b:00.0").observed);
}

#[test]
fn devlink_reporters_with_errors_are_warnings_naming_them() {
    let json = r#"{"health":{"pci/0000:3b:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0},
        {"reporter":"fw_fatal","state":"healthy","error":1,"recover":1}],
        "pci/0000:3b:00.0/65535":[{"reporter":"tx","state":"healthy","error":0,"recover":0}],
        "pci/0000:5e:00.0":[{"reporter":"fw","state":"error","error":9,"recover":0}]}}"#;
    let mut h = health(vec![]);
    h.devlink = DevlinkRead::Read(parse_health(json).unwrap());
    let r = judged(&h, None);
    assert_eq!(keys(&r), vec![("devlink.health", Severity::Warning, "mlx5_0".to_string())], "0000:5e:00.0 is no RDMA NIC's");
    assert!(r.findings[0].message.contains("fw_fatal healthy now, 1 errors, 1 recovered"), "{}", r.findings[0].message);
    assert!(r.findings[0].remedy.contains("devlink health dump show pci/0000:3b:00.0 reporter fw_fatal"), "{}", r.findings[0].remedy);
    let healthy = r#"{"health":{"pci/0000:3b:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0}]}}"#;
    h.devlink = DevlinkRead::Read(parse_health(healthy).unwrap());
    let r = judged(&h, None);
    assert!(r.findings.is_empty());
    assert_eq!(r.checks[0].observed, "fw: healthy, no errors");
    h.devlink = DevlinkRead::Unread("devlink (iproute2) is not installed".into());
    let r = judged(&h, None);
    assert_eq!((r.checks[0].status, r.checks[0].subject.to_string().as_str()), (Status::Skip, "node"));
}

/// A tree holding the NIC 0000:3b:00.0 trained at `speed` x`width`.
fn tree(speed: &str, width: u32) -> crate::probe::pci::PciTree {
    use crate::probe::pci::{ConfigRead, Function, SysfsLink};
    let f = Function {
        bdf: "0000:3b:00.0".into(),
        host_bridge: "pci0000:3a".into(),
        chain: vec!["0000:3a:00.0".into()],
        vendor: Some(0x15b3),
        device: Some(0x1021),
        class: Some(0x020700),
        numa_node: Some(0),
        link: SysfsLink { current_speed: Some(speed.into()), current_width: Some(width), max_speed: Some(speed.into()), max_width: Some(width) },
        config: ConfigRead::Missing,
        config_file: "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/config".into(),
    };
    crate::probe::pci::PciTree { functions: [(f.bdf.clone(), f)].into_iter().collect(), ..Default::default() }
}
