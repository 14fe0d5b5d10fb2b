//! The seed's driver stack and firmware configuration: firmware changes waiting for a cold
//! boot (`fw.pending`), OFED installed but the inbox modules running (`stack.ofed`), the
//! stack's units at boot (`stack.service`), IPoIB interfaces (`ipoib`). Pure: facts in
//! (`probe::stack`), checks and findings out. What was not read is said as `info`, never
//! as a failure: none of these tools is required.

use super::expect::SmPlace;
use super::facts::{cold_boot_remedy, pci_of};
use super::{Expectations, Scope, Severity, Sheet};
use crate::outcome::FindingId;
use crate::port::LinkLayer;
use crate::probe::stack::firmware::{self, LinkType};
use crate::probe::stack::fw_query;
use crate::probe::stack::ipoib::IpoibState;
use crate::probe::stack::ofed::{self, ModuleOrigin, ModuleState, OfedFacts};
use crate::probe::stack::services::{self, ActiveState, UnitFileState, UnitStatus};
use crate::probe::stack::StackFacts;
use crate::probe::{Device, Inventory};

/// The driver-stack checks and findings: pending firmware, OFED's modules, the stack's units,
/// IPoIB.
pub(super) fn run(inventory: &Inventory, facts: &StackFacts, expect: &Expectations, scope: &Scope, sheet: &mut Sheet) {
    let in_scope = |device: &str| scope.device(device);
    // A bundle without tools/ predates them: only its sysfs part (IPoIB) is judged.
    if facts.looked {
        firmware_pending(inventory, facts, &in_scope, sheet);
        ofed_modules(&facts.ofed, facts.live, sheet);
        services(facts, expect, sheet);
    }
    for state in facts.ipoib.iter().filter(|s| in_scope(s.port.split('/').next().unwrap_or(""))) {
        ipoib(state, expect, sheet);
    }
}

/// What the firmware says of a port's type, for `port.link_layer`: the state in words, and a
/// remedy when the generic one ("set LINK_TYPE_Pn") would be wrong. `None` when the firmware
/// configuration was not read.
pub(super) fn link_type_advice(device: &Device, port: u32, want: LinkLayer) -> Option<(String, Option<String>)> {
    let config = device.fw_config.as_ref()?;
    let name = firmware::link_type_param(device.pci.as_ref().and_then(|p| p.address.as_deref()), device.ports.len(), port);
    let param = config.get(&name)?;
    let wanted = match want {
        LinkLayer::Ethernet => LinkType::Eth,
        _ => LinkType::Ib,
    };
    let next = param.next_boot.as_ref().and_then(|v| v.link_type());
    let current = param.current.as_ref().and_then(|v| v.link_type());
    let pci = pci_of(device);
    Some(match (current, next) {
        (Some(c), Some(n)) if n == wanted && c != n => (
            format!("{name} is already {} for the next boot (now {}): the change is pending, not missing", n.name(), c.name()),
            Some(cold_boot_remedy(&pci)),
        ),
        (Some(c), Some(n)) if n == wanted && c == n => (
            format!("{name} is {} in firmware already", n.name()),
            Some(format!(
                "the firmware is set; the port type follows it once the driver re-reads it: restart the driver stack \
                 (`/etc/init.d/openibd restart` or `modprobe -r mlx5_ib mlx5_core && modprobe mlx5_ib`) or reboot, then check \
                 `mlxconfig -d {pci} -e query`"
            )),
        ),
        (_, Some(n)) => (format!("{name} is {} for the next boot too", n.name()), None),
        _ => return None,
    })
}

/// `fw.pending`: a parameter whose Next Boot differs from Current, once per card.
fn firmware_pending(inventory: &Inventory, facts: &StackFacts, in_scope: &dyn Fn(&str) -> bool, sheet: &mut Sheet) {
    let queried: Vec<&Device> = inventory.devices.iter().filter(|d| fw_query::queried(d) && in_scope(&d.name)).collect();
    // Live without either tool: said on every node (a Soft-RoCE guest too), as info.
    if facts.live && facts.firmware.tool.is_none() {
        sheet.fail(
            FindingId::FwPending,
            "node",
            "not read",
            None,
            Severity::Info,
            "firmware configuration not read: neither mlxconfig (NVIDIA MFT) nor mstconfig (mstflint) is installed, so changes \
             of an NVIDIA/Mellanox adapter waiting for a cold boot (LINK_TYPE, SR-IOV, ATS) cannot be seen",
            "install mstflint (`apt install mstflint`, `dnf install mstflint`) or NVIDIA MFT, and run as root; nothing else needs them",
        );
        return;
    }
    if queried.is_empty() {
        return;
    }
    for (device, why) in facts.firmware.unread.iter().filter(|(d, _)| in_scope(d)) {
        sheet.fail(
            FindingId::FwPending,
            device,
            "not read",
            None,
            Severity::Info,
            format!("firmware configuration of {device} not read: {why}"),
            "run `check` as root with mstflint or NVIDIA MFT installed (a bundle: capture it with `fabcheck bundle DIR` as root)",
        );
    }
    let mut cards: Vec<String> = Vec::new();
    for device in queried {
        let Some(config) = &device.fw_config else { continue };
        let pci = pci_of(device);
        // The functions of one card share its configuration: said once, on the first.
        let card = pci.get(..10).unwrap_or(&pci).to_string();
        if pci.len() == 12 && cards.contains(&card) {
            sheet.pass(FindingId::FwPending, &device.name, "same card as above", None);
            continue;
        }
        cards.push(card);
        let pending: Vec<(&String, &firmware::FwParam)> = config.iter().filter(|(_, p)| p.pending()).collect();
        if pending.is_empty() {
            sheet.pass(FindingId::FwPending, &device.name, "none pending", None);
            continue;
        }
        let changes = pending
            .iter()
            .map(|(name, p)| {
                format!("{name} {} -> {}", p.current.as_ref().map_or("?", |v| v.label()), p.next_boot.as_ref().map_or("?", |v| v.label()))
            })
            .collect::<Vec<_>>();
        let mut why = Vec::new();
        if pending.iter().any(|(n, _)| n.starts_with("LINK_TYPE_P")) {
            why.push("the port type changes at the next cold boot");
        }
        if pending.iter().any(|(n, _)| *n == "SRIOV_EN" || *n == "NUM_OF_VFS") {
            why.push("the SR-IOV virtual functions change only then");
        }
        if pending.iter().any(|(n, _)| *n == "ATS_ENABLED") {
            why.push("ATS, which GPUDirect RDMA peer-to-peer through the PCIe switch depends on, changes only then");
        }
        let why = if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ")) };
        sheet.fail(
            FindingId::FwPending,
            &device.name,
            changes.join(", "),
            Some("next boot = current".into()),
            Severity::Warning,
            format!(
                "firmware configuration waits for a cold boot on {}: {}{why}; until then the adapter runs the current values",
                device.name,
                changes.join(", ")
            ),
            format!(
                "{}. To cancel instead: `mlxconfig -d {pci} set {}`",
                cold_boot_remedy(&pci),
                pending.iter().map(|(n, p)| format!("{n}={}", p.current.as_ref().map_or("?", |v| v.label()))).collect::<Vec<_>>().join(" ")
            ),
        );
    }
}

fn dkms_remedy(kernel: &str) -> String {
    format!(
        "build OFED's modules for the running kernel: `dkms status`, then `dkms autoinstall -k {kernel}` (MLNX_OFED without \
         DKMS: reinstall with `./mlnxofedinstall --add-kernel-support`; DOCA: install the doca-ofed kernel packages for this \
         kernel), rebuild the initramfs (`update-initramfs -u` / `dracut -f`), then `/etc/init.d/openibd restart` or reboot"
    )
}

/// `stack.ofed`: OFED/DOCA installed, and whether the modules that run are OFED's.
fn ofed_modules(facts: &OfedFacts, live: bool, sheet: &mut Sheet) {
    let Some(installed) = &facts.installed else { return };
    let kernel = facts.kernel.as_deref().unwrap_or("$(uname -r)");
    for module in &facts.modules {
        let Some(disk) = &module.on_disk else {
            if live && module.loaded.is_some() {
                sheet.fail(
                    FindingId::StackOfed,
                    &module.name,
                    "not read",
                    None,
                    Severity::Info,
                    format!("{installed} is installed, but `modinfo {}` could not be read: which {} runs is unknown", module.name, module.name),
                    "install kmod (modinfo) to let fabcheck tell OFED's modules from the kernel's",
                );
            }
            continue;
        };
        match judge_module(installed, kernel, module, disk) {
            Ok(observed) => sheet.pass(FindingId::StackOfed, &module.name, observed, Some(installed.clone())),
            Err((observed, severity, message, remedy)) => {
                sheet.fail(FindingId::StackOfed, &module.name, observed, Some(installed.clone()), severity, message, remedy)
            }
        }
    }
}

type Problem = (String, Severity, String, String);

fn judge_module(installed: &str, kernel: &str, module: &ModuleState, disk: &ofed::ModInfo) -> Result<String, Problem> {
    let name = &module.name;
    let file = disk.filename.as_deref().unwrap_or("?");
    let loaded = module.loaded.as_ref();
    match disk.origin() {
        ModuleOrigin::Inbox => {
            return Err((
                format!("inbox {name} ({file})"),
                Severity::Error,
                format!(
                    "{installed} is installed but the kernel's inbox {name} is what loads: OFED's modules were not built for kernel \
                     {kernel} (DKMS not rebuilt after a kernel update), so nothing OFED adds is running"
                ),
                dkms_remedy(kernel),
            ));
        }
        ModuleOrigin::Other => return Ok(format!("{name} ({file})")),
        ModuleOrigin::OutOfTree | ModuleOrigin::WeakUpdates => {}
    }
    // OFED's file is on disk: is it the one in memory?
    if let (Some(mem), Some(src)) = (loaded.and_then(|l| l.srcversion.as_deref()), disk.srcversion.as_deref()) {
        if mem != src {
            let inbox_in_memory = loaded.is_some_and(|l| l.version.is_none());
            return Err((
                format!("loaded srcversion {mem}, installed {src}"),
                Severity::Error,
                format!(
                    "the {name} in memory is not OFED's on disk ({file}){}: the old module is still loaded",
                    if inbox_in_memory { ", it has no version: the kernel's inbox module" } else { "" }
                ),
                "restart the driver stack (`/etc/init.d/openibd restart`, or `systemctl restart openibd`) or reboot".into(),
            ));
        }
    }
    if let (Some(built), Some(running)) = (disk.built_for.as_deref(), Some(kernel).filter(|k| !k.starts_with('$'))) {
        if built != running {
            let weak = disk.origin() == ModuleOrigin::WeakUpdates;
            return Err((
                format!("built for {built}, running {running}"),
                if weak { Severity::Warning } else { Severity::Error },
                format!(
                    "{name} ({file}) was built for kernel {built}, not the running {running}{}: DKMS was not rebuilt after a kernel update",
                    if weak { " (a RHEL weak-updates link: it loads if the kABI still matches)" } else { "" }
                ),
                dkms_remedy(running),
            ));
        }
    }
    let version = loaded.and_then(|l| l.version.as_deref()).or(disk.version.as_deref());
    if let Some(version) = version {
        if !ofed::same_release(installed, version) {
            return Err((
                format!("{name} version {version}"),
                Severity::Error,
                format!(
                    "{installed} is installed, but {name} is version {version}: an OFED installed over an older one left the old \
                     modules in use"
                ),
                "remove the old stack first (`/usr/sbin/ofed_uninstall.sh`, or the old mlnx-ofa_kernel DKMS module: `dkms status`), \
                 reinstall, rebuild the initramfs (`update-initramfs -u` / `dracut -f`) and reboot"
                    .into(),
            ));
        }
    }
    Ok(format!("{name} {} ({file})", version.unwrap_or("?")))
}

/// What a unit does for the node, for the words of a finding.
fn unit_role(unit: &str) -> &'static str {
    match unit {
        "openibd" => "it loads MLNX_OFED's modules",
        "rdma-ndd" => "it sets the node descriptions that `fabric --rails` and `mesh --topology` read",
        _ if services::is_sm_unit(unit) => "it is this fabric's subnet manager",
        _ => "it sets up the RDMA stack",
    }
}

/// `stack.service`: failed is an error, not started at boot a warning, not installed silent.
fn services(facts: &StackFacts, expect: &Expectations, sheet: &mut Sheet) {
    let local_sm = expect.sm == Some(SmPlace::Local);
    let sm_units: Vec<&UnitStatus> = facts.services.iter().filter(|u| services::is_sm_unit(&u.unit)).collect();
    if local_sm && facts.services_read && sm_units.is_empty() {
        sheet.fail(
            FindingId::StackService,
            "opensm",
            "not installed",
            Some("active, enabled".into()),
            Severity::Error,
            "the subnet manager is expected on this node (--expect sm=local) but no opensm, opensmd (MLNX_OFED) or opensm@ unit is \
             installed",
            "install OpenSM (`apt install opensm` / `dnf install opensm`, or MLNX_OFED's opensm package), then `systemctl enable \
             --now opensm` (MLNX_OFED: `opensmd`)",
        );
    }
    // Any of OpenSM's units running satisfies `--expect sm=local`: the others (Debian's plain
    // `opensm` beside a running `opensm@PORT` instance) are not judged.
    let running: Vec<&str> = sm_units.iter().filter(|u| runs(u)).map(|u| u.unit.as_str()).collect();
    for unit in &facts.services {
        if services::is_sm_unit(&unit.unit) && (!local_sm || (!running.is_empty() && !running.contains(&unit.unit.as_str()))) {
            continue;
        }
        service(unit, sheet);
    }
}

fn runs(status: &UnitStatus) -> bool {
    matches!(status.active, ActiveState::Active | ActiveState::Reloading | ActiveState::Activating) && !sm_exited(status)
}

/// An SM unit that systemd calls active while its daemon is gone: `active (exited)` (a SysV
/// script's generated unit, or `RemainAfterExit=yes`, whose process ended). An SM is a daemon:
/// only `running` is one (systemd.service(5), "SubState").
fn sm_exited(status: &UnitStatus) -> bool {
    services::is_sm_unit(&status.unit) && status.active == ActiveState::Active && status.sub != "running"
}

fn service(status: &UnitStatus, sheet: &mut Sheet) {
    let unit = status.unit.as_str();
    let observed = format!("{} ({}), {}", status.active.name(), status.sub, if status.file.name().is_empty() { "?" } else { status.file.name() });
    let expected = Some("active, enabled".to_string());
    if status.active == ActiveState::Failed {
        sheet.fail(
            FindingId::StackService,
            unit,
            observed,
            expected,
            Severity::Error,
            format!("the {unit} service failed ({})", unit_role(unit)),
            format!("systemctl status {unit}; journalctl -u {unit} -b"),
        );
        return;
    }
    if sm_exited(status) {
        sheet.fail(
            FindingId::StackService,
            unit,
            observed,
            Some("active (running), enabled".into()),
            Severity::Error,
            format!(
                "{unit} is active ({}) but its daemon is not running: this node's fabric has no subnet manager from it (--expect sm=local)",
                status.sub
            ),
            format!("systemctl restart {unit}; journalctl -u {unit} -b (and /var/log/opensm.log) for why OpenSM exited"),
        );
        return;
    }
    if !status.file.starts_at_boot() {
        let remedy = if status.file == UnitFileState::Masked {
            format!("systemctl unmask {unit} && systemctl enable {unit}")
        } else {
            format!("systemctl enable {unit}")
        };
        sheet.fail(
            FindingId::StackService,
            unit,
            observed,
            expected,
            Severity::Warning,
            format!(
                "{unit} is {} now but {} at boot ({}): after the next reboot it does not start",
                status.active.name(),
                status.file.name(),
                unit_role(unit)
            ),
            remedy,
        );
        return;
    }
    match status.active {
        ActiveState::Active | ActiveState::Reloading | ActiveState::Activating => sheet.pass(FindingId::StackService, unit, observed, expected),
        _ if services::is_sm_unit(unit) => sheet.fail(
            FindingId::StackService,
            unit,
            observed,
            expected,
            Severity::Error,
            format!("{unit} starts at boot but is not running: this node's fabric has no subnet manager from it"),
            format!("systemctl start {unit}; journalctl -u {unit} -b"),
        ),
        // Started on demand (rdma-ndd by udev when a device appears), or a one-shot not yet run.
        _ => sheet.skip(FindingId::StackService, unit, observed),
    }
}

/// `ipoib`: an ACTIVE InfiniBand port's IPoIB interface down, without an address, or in
/// another mode than expected.
fn ipoib(state: &IpoibState, expect: &Expectations, sheet: &mut Sheet) {
    let netdev = state.netdev.as_str();
    if netdev.is_empty() {
        // Not every site runs IPoIB; one that expects a mode does.
        if let Some(want) = expect.ipoib_mode {
            sheet.fail(
                FindingId::Ipoib,
                &state.port,
                "no IPoIB interface",
                Some(want.name().to_string()),
                Severity::Error,
                format!("{} has no IPoIB interface, but IPoIB in {} mode was expected", state.port, want.name()),
                "`modprobe ib_ipoib` (persistent in /etc/modules-load.d/), then configure the interface (netplan, NetworkManager, ifcfg-ibN)",
            );
        }
        return;
    }
    let mut observed = format!("{netdev} {}", state.operstate);
    match &state.addresses {
        Some(list) if list.is_empty() => observed.push_str(", no address"),
        Some(list) => observed.push_str(&format!(", {}", list.join(" "))),
        None => {}
    }
    if let Some(mode) = state.mode {
        observed.push_str(&format!(", {}", mode.name()));
    }
    let expected = expect.ipoib_mode.map(|m| m.name().to_string());
    let uses = "`pair --cm` on InfiniBand and many NCCL/MPI bootstraps need it";
    if let (Some(want), Some(mode)) = (expect.ipoib_mode, state.mode) {
        if want != mode {
            sheet.fail(
                FindingId::Ipoib,
                &state.port,
                observed,
                expected,
                Severity::Error,
                format!("{netdev} runs IPoIB in {} mode but {} was expected", mode.name(), want.name()),
                format!(
                    "`echo {w} > /sys/class/net/{netdev}/mode` (interface down first), and set it for the next boot in the \
                     interface's configuration (CONNECTED_MODE=yes/no in ifcfg-{netdev}, `infiniband.transport-mode {w}` in \
                     NetworkManager); with MLNX_OFED on ConnectX-4 and later, connected mode needs `ipoib_enhanced=0`",
                    w = want.name()
                ),
            );
            return;
        }
    }
    if !state.up {
        sheet.fail(
            FindingId::Ipoib,
            &state.port,
            observed,
            expected,
            Severity::Warning,
            format!("the IPoIB interface {netdev} of {} is {} while the port is ACTIVE: {uses}", state.port, state.operstate),
            format!("`ip link set {netdev} up`, and configure it to come up at boot (netplan, NetworkManager, ifcfg-{netdev})"),
        );
        return;
    }
    if state.addresses.as_ref().is_some_and(Vec::is_empty) {
        sheet.fail(
            FindingId::Ipoib,
            &state.port,
            observed,
            expected,
            Severity::Warning,
            format!("the IPoIB interface {netdev} of {} has no IP address (nor has a P_Key child of it, or a bond over it): {uses}", state.port),
            format!("assign one in the node's network configuration (e.g. `nmcli connection add type infiniband ifname {netdev} ipv4.method manual ipv4.addresses ADDR/PREFIX`)"),
        );
        return;
    }
    sheet.pass(FindingId::Ipoib, &state.port, observed, expected);
}

#[cfg(test)]
#[path = "driver_rule_tests.rs"]
mod tests;
