//! Node-wide software stack: modules, device files, installed stack, memlock (services and
//! OFED's modules: `driver_rules`).

use super::{Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::host::{HostFacts, LibraryState};
use crate::probe::Inventory;
use fabcheck_verbs::{INSTALL_HINT, LIBIBVERBS, LIBRDMACM};

/// Memory a `pair` run registers at most with default settings (buffers for the largest
/// sweep size on several QPs), so the limit below this fails real tests.
pub const MEMLOCK_NEEDED: u64 = 64 << 20;

pub(super) fn run(inventory: &Inventory, host: &HostFacts, sheet: &mut Sheet) {
    modules(inventory, &host.modules, sheet);
    libraries(host, sheet);
    stack(host, sheet);
}

/// Kernel modules: the part of the stack a `--sysfs-root` bundle with `module/` also holds.
pub(super) fn modules(inventory: &Inventory, modules: &[String], sheet: &mut Sheet) {
    let node = "node";
    let has = |m: &str| modules.iter().any(|x| x == m);

    let mut missing: Vec<String> = ["ib_core", "ib_uverbs"].into_iter().filter(|m| !has(m)).map(String::from).collect();
    for device in &inventory.devices {
        let driver = device.driver.clone().unwrap_or_else(|| default_driver(&device.name).to_string());
        if !driver.is_empty() && !has(&driver) && !missing.contains(&driver) {
            missing.push(driver);
        }
    }
    let present = modules.join(" ");
    if missing.is_empty() {
        sheet.pass(FindingId::StackModules, node, present, None);
    } else {
        sheet.fail(
            FindingId::StackModules,
            node,
            if present.is_empty() { "none".into() } else { present },
            Some(missing.join(" ")),
            Severity::Error,
            format!("RDMA kernel modules missing: {}", missing.join(", ")),
            format!("modprobe {} (or restart openibd / the rdma service); check dmesg for driver errors", missing.join(" ")),
        );
    }
    if !has("rdma_ucm") {
        sheet.note(
            FindingId::StackModules,
            node,
            Severity::Info,
            "rdma_ucm is not loaded: librdmacm connections (pair --cm, MPI/NCCL over rdma_cm) will fail",
            "modprobe rdma_ucm",
        );
    }
}

fn stack(host: &HostFacts, sheet: &mut Sheet) {
    let node = "node";

    let usable = host.uverbs.iter().filter(|u| u.accessible).count();
    let listing = host.uverbs.iter().map(|u| u.path.as_str()).collect::<Vec<_>>().join(" ");
    if host.uverbs.is_empty() {
        sheet.fail(
            FindingId::StackUverbs,
            node,
            "no /dev/infiniband/uverbs*",
            Some("one per device".into()),
            Severity::Error,
            "no verbs device files: user space cannot reach the adapters",
            "modprobe ib_uverbs; in a container, pass /dev/infiniband (--device=/dev/infiniband)",
        );
    } else if usable < host.uverbs.len() {
        sheet.fail(
            FindingId::StackUverbs,
            node,
            format!("{usable} of {} openable", host.uverbs.len()),
            Some("read/write".into()),
            Severity::Error,
            format!("this user cannot open {listing}"),
            "add the user to the group owning /dev/infiniband/uverbs* (often 'rdma'), or fix the udev rule granting 0666",
        );
    } else {
        sheet.pass(FindingId::StackUverbs, node, listing, None);
    }

    let stack = match (&host.ofed_version, &host.rdma_core_version) {
        (Some(ofed), _) => ofed.clone(),
        (None, Some(v)) => format!("rdma-core {v}"),
        (None, None) => "unknown".into(),
    };
    // OFED installed but the kernel's inbox modules loaded: the stack that runs is named.
    let observed = sheet.facts.running.clone().unwrap_or_else(|| stack.clone());
    if stack == "unknown" {
        sheet.fail(
            FindingId::StackDistribution,
            node,
            observed,
            None,
            Severity::Warning,
            "neither rdma-core's libibverbs nor MLNX_OFED/DOCA was found",
            "install rdma-core (apt install rdma-core ibverbs-providers / dnf install rdma-core libibverbs) or NVIDIA DOCA-OFED",
        );
    } else {
        sheet.pass(FindingId::StackDistribution, node, observed, None);
    }

    // The stack's units (`stack.service`) are judged in `driver_rules`, from what
    // `probe::stack` reads of them.

    let needed = MEMLOCK_NEEDED;
    match host.memlock_soft {
        None => sheet.pass(FindingId::StackMemlock, node, "unlimited", Some(format!(">= {} MiB", needed >> 20))),
        Some(limit) if limit >= needed => sheet.pass(FindingId::StackMemlock, node, human_bytes(limit), Some(format!(">= {} MiB", needed >> 20))),
        Some(limit) if host.is_root => sheet.fail(
            FindingId::StackMemlock,
            node,
            human_bytes(limit),
            Some(format!(">= {} MiB", needed >> 20)),
            Severity::Info,
            format!("RLIMIT_MEMLOCK is {}; root registers past it, other users' jobs will not", human_bytes(limit)),
            memlock_remedy(),
        ),
        Some(limit) => sheet.fail(
            FindingId::StackMemlock,
            node,
            human_bytes(limit),
            Some(format!(">= {} MiB", needed >> 20)),
            Severity::Error,
            format!("RLIMIT_MEMLOCK is {}: registering RDMA memory will fail (ENOMEM in ibv_reg_mr)", human_bytes(limit)),
            memlock_remedy(),
        ),
    }
}

pub fn memlock_remedy() -> String {
    "raise it: '* - memlock unlimited' in /etc/security/limits.d/rdma.conf (new login), LimitMEMLOCK=infinity for \
     systemd services, --ulimit memlock=-1 for containers, or `ulimit -l unlimited` in this shell"
        .into()
}

fn default_driver(device: &str) -> &'static str {
    if device.starts_with("mlx5") {
        "mlx5_ib"
    } else if device.starts_with("mlx4") {
        "mlx4_ib"
    } else if device.starts_with("rxe") {
        "rdma_rxe"
    } else if device.starts_with("siw") {
        "siw"
    } else if device.starts_with("irdma") {
        "irdma"
    } else {
        ""
    }
}

pub(crate) fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// `stack.rdma_core`: whether rdma-core's libraries load in this process (live only). Without
/// libibverbs nothing RDMA runs here (every verbs application links it): an error. Without
/// librdmacm, connections through the RDMA connection manager (`pair --cm`, MPI/UCX's rdmacm,
/// NVMe-oF) fail: a warning.
fn libraries(host: &HostFacts, sheet: &mut Sheet) {
    let node = "node";
    match (&host.libibverbs, &host.librdmacm) {
        (LibraryState::NotChecked, _) => {}
        (LibraryState::Missing(why), _) => sheet.fail(
            FindingId::StackRdmaCore,
            node,
            "libibverbs missing",
            Some(format!("{LIBIBVERBS} and {LIBRDMACM}")),
            Severity::Error,
            format!("rdma-core (libibverbs) is not installed: {why}"),
            INSTALL_HINT,
        ),
        (LibraryState::Loaded, LibraryState::Missing(why)) => sheet.fail(
            FindingId::StackRdmaCore,
            node,
            "librdmacm missing",
            Some(LIBRDMACM.to_string()),
            Severity::Warning,
            format!("librdmacm is not installed ({why}): rdma_cm connections (pair --cm, MPI/UCX rdmacm, NVMe-oF) cannot be made"),
            INSTALL_HINT,
        ),
        (LibraryState::Loaded, _) => sheet.pass(FindingId::StackRdmaCore, node, format!("{LIBIBVERBS}, {LIBRDMACM} load"), None),
    }
}
