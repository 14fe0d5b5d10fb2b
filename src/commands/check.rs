use crate::cli::CheckArgs;
use crate::diagnose::{self, Input, Scope};
use crate::error::{Outcome, Stop};
use crate::model::parse_device_port;
use crate::probe::{self, host, ProbeError, Source};
use crate::report;

pub fn run(args: &CheckArgs) -> Result<Outcome, Stop> {
    let expect = super::flags::read_expectations(args.profile.as_deref(), &args.expect)?;
    let scope = match &args.device {
        Some(text) => {
            let (device, port) = parse_device_port(text).map_err(crate::error::Failure::usage)?;
            Scope { device: Some(device), port }
        }
        None => Scope::default(),
    };
    let source = args.sysfs_root.clone().map_or(Source::Live, Source::Sysfs);
    let live = matches!(source, Source::Live);
    let soak = super::soak::window(args.soak.as_deref(), live)?;
    let inventory = match probe::inventory(&source, scope.device.as_deref()) {
        Ok(inv) => inv,
        // On a live node "no devices" is itself the finding the checklist should explain,
        // but the contract makes "no such device" a could-not-run (exit 2).
        // Without rdma-core at all, `stack.rdma_core` (from the host facts) is that finding.
        Err(ProbeError::NoDevices) | Err(ProbeError::NoVerbs(_)) | Err(ProbeError::NoRdmaCore { .. }) if live && scope.device.is_none() => {
            probe::Inventory::default()
        }
        Err(err) => return Err(crate::error::Failure::from(err).into()),
    };
    if let (Some(dev), Some(port)) = (&scope.device, scope.port) {
        if let Some(d) = inventory.device(dev) {
            if !d.ports.iter().any(|p| p.port == port) {
                let missing = ProbeError::NoSuchPort { device: dev.clone(), port, present: d.ports.iter().map(|p| p.port).collect() };
                return Err(crate::error::Failure::from(missing).into());
            }
        }
    }
    let mut inventory = inventory;
    if live {
        // InfiniBand ports: what they support (PortInfo), whether their SM answers (SMInfo),
        // their partner and FEC counters.
        crate::probe::local_mads::enrich(&mut inventory);
    }
    // NVIDIA ports: the BERs mlxlink computes, where it is installed (or the bundle saved it).
    probe::phy::mlxlink::attach(&mut inventory, &source);
    // The PCI tree (GPU readiness, PCIe health): the bundle's, or the live /sys.
    let tree = crate::probe::pci::read(args.sysfs_root.as_deref().unwrap_or(std::path::Path::new("/sys")));
    // A soak window's PCIe counters: read at its start, here, and again at its end.
    let pcie_start = soak.map(|_| crate::probe::pci::health::read::read(&source, &inventory, tree.as_ref()));
    let soaked = match soak {
        // Nothing to soak on a node without devices: the checklist says why at once.
        Some(duration) if !inventory.devices.is_empty() => {
            Some(super::soak::run(&mut inventory, duration, || probe::inventory(&source, scope.device.as_deref()))?)
        }
        _ => None,
    };
    let pcie = crate::probe::pci::health::read::read(&source, &inventory, tree.as_ref());
    let host_facts = if live { Some(host::gather(&host::live_root())) } else { None };
    // Firmware configuration (into the inventory, which `port.link_layer` reads), OFED, units, IPoIB.
    let stack_facts = probe::stack::gather(&mut inventory, &source);
    let mut report = diagnose::run(&Input { inventory: &inventory, host: host_facts.as_ref(), expect: &expect, scope: &scope });
    if let Some(window) = &soaked {
        super::soak::say_window(&mut report, window);
    }
    // A bundle's module/ (captured with the PCI tree) gets the stack's module checks.
    if let Some(bundle_modules) = args.sysfs_root.as_ref().map(|r| r.join("module")).filter(|m| m.is_dir()) {
        let present: Vec<String> = host::MODULES.iter().filter(|m| bundle_modules.join(m).exists()).map(|m| m.to_string()).collect();
        diagnose::gpu_rules::apply_bundle_modules(&mut report, &inventory, &present);
    }
    // GPU node readiness, from the same tree: the bundle, or the live /sys.
    let gpus = match &tree {
        Some(tree) => diagnose::gpu_rules::apply(&mut report, tree),
        None => Vec::new(),
    };
    // PCIe health: AER, mlx5's PCIe counters, devlink health; over the window when soaked.
    let window = pcie_start.as_ref().zip(soaked.as_ref()).map(|(start, s)| diagnose::pcie_rules::PcieSoak { start, seconds: s.seconds });
    diagnose::pcie_rules::apply(&mut report, &pcie, window.as_ref());
    // Last: it also says where a pending firmware change explains the findings above.
    diagnose::driver_rules::apply(&mut report, &inventory, &stack_facts, &expect, &scope);
    // A live node with no device: `devices.count` fails (diagnose's node rules), after the
    // stack checks that explain why.
    let outcome = emit(args.json, &report, &gpus)?;
    // A soak window cut short by SIGINT: the report above judged what it saw; the run is exit 2.
    if let Some(interrupted) = soaked.as_ref().and_then(super::soak::interrupted) {
        return Err(interrupted.into());
    }
    Ok(outcome)
}

fn emit(json: bool, report: &crate::outcome::Report, gpus: &[crate::gpu::topology::Pairing]) -> Result<Outcome, Stop> {
    Ok(report::output::deliver(&report::check::CheckDoc { schema: report::check::SCHEMA, report, gpus }, json)?)
}
