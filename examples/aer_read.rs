//! Reads one PCI function's AER counters the way `check` does (`probe::pci::health`, over the PCI
//! tree of `ROOT`) and judges them (`diagnose::pcie_rules`), as a NIC's function, or, given the
//! device below it (`BELOW`), as the bridge at the other end of that device's link: for
//! `tests/vm/aer.sh`, where qemu raises real AER errors at a `pcie-root-port`. Prints each file's
//! rows, then each finding as `finding ID SEVERITY SUBJECT: MESSAGE`. Exit 1 when the function
//! is not in the tree.
//!
//! `cargo build --example aer_read && target/debug/examples/aer_read /sys 0000:00:02.0 [0000:01:00.0]`

use fabcheck::diagnose::pcie_rules;
use fabcheck::probe::pci::health::{DevlinkRead, PcieHealth, Role};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (root, bdf, below) = match args.as_slice() {
        [root, bdf] => (Path::new(root), bdf.as_str(), None),
        [root, bdf, below] => (Path::new(root), bdf.as_str(), Some(format!("device {below}"))),
        _ => {
            eprintln!("usage: aer_read ROOT BDF [BELOW]");
            std::process::exit(2);
        }
    };
    let Some(tree) = fabcheck::probe::pci::read(root) else {
        eprintln!("{} has no bus/pci/devices", root.display());
        std::process::exit(1);
    };
    let role = match below {
        Some(device) => Role::Bridge { below: vec![device.clone()], link_of: vec![device] },
        None => Role::Nic { name: format!("device {bdf}") },
    };
    let Some(function) = fabcheck::probe::pci::health::read::read_function(root, &tree, bdf, role) else {
        eprintln!("{bdf} is not in the PCI tree of {}", root.display());
        std::process::exit(1);
    };
    for (severity, file) in &function.aer {
        let rows: Vec<String> = file.nonzero().iter().map(|(r, n)| format!("{r} {n}")).collect();
        println!("{} {}: {} ({})", bdf, severity.file(), file.count(), if rows.is_empty() { "no row counted".into() } else { rows.join(", ") });
    }
    for (path, why) in &function.unreadable {
        println!("unreadable {path}: {why}");
    }
    let health = PcieHealth { functions: vec![function], nics: Vec::new(), devlink: DevlinkRead::NotLooked, tree: true, live: true, uptime_s: None };
    let report = pcie_rules::judge_alone(&health);
    for f in &report.findings {
        println!("finding {} {:?} {}: {}", f.id, f.severity, f.subject, f.message);
    }
    for c in &report.checks {
        println!("check {} {:?} {}: {}", c.id, c.status, c.subject, c.observed);
    }
}
