//! `roce.qos` and `roce.lossless`: whether RoCE's own priority is the lossless one, end to end.
//! The RoCE priority is worked out (`probe::qos::priority`: the DSCP, the trust state, the DSCP
//! table or the untagged default) and named in every finding; then its PFC, its traffic class's
//! share of the wire, its receive buffer, ECN/DCQCN on it and where CNPs go, and the pause and
//! discard counters (lifetime, or over a `--soak` window). A figure that cannot be read makes
//! the row `skip` with what to install, never `pass`. `roce.lossless` says the one question
//! (is the RoCE priority lossless?) and judges through the same derivation. Pure.

use super::{Expectations, Severity, Sheet};
use crate::outcome::FindingId;
use crate::port::{self, GidScope, GidType};
use crate::probe::catype::CaKind;
use crate::probe::qos::priority::{self, Derived, DscpFrom, Tagging};
use crate::probe::qos::{list, PortQos, Priority, Tool, Trust, Tsa, Unread};
use crate::probe::{Device, Port};

use super::qos_issue::{issue, Issue};

pub(super) fn run(device: &Device, port: &Port, expect: &Expectations, s: &str, sheet: &mut Sheet) {
    let netdev = port.tool_netdev().unwrap_or("<netdev>");
    let soft = CaKind::of(&device.ca_type).is_software() || device.driver.as_deref() == Some("rdma_rxe");
    let Some(q) = &port.qos else {
        let why = if port.netdev.is_none() { "the port has no netdev: its QoS set-up cannot be read" } else { "the QoS set-up was not read" };
        sheet.skip(FindingId::RoceQos, s, why);
        sheet.skip(FindingId::RoceLossless, s, why);
        return;
    };
    let mut issues = Vec::new();
    let legs_unread = super::bond_rules::qos_legs(port, &mut issues);
    if !q.dcb_read() {
        let why = not_read(q, netdev, soft);
        super::qos_counters::lifetime_or_window(port, q, None, netdev, &mut issues);
        emit_or_skip(sheet, s, issues, &why);
        sheet.skip(FindingId::RoceLossless, s, format!("see roce.qos: {why}"));
        return;
    }
    let derived = priority::derive(q, expect.roce_dscp, &tagging(port), app_tags(device));
    let d = match derived {
        Ok(d) => d,
        Err(unknown) => {
            let why = unknown.words();
            let row = match q.pfc_priorities() {
                Some(on) if on.is_empty() && q.global_pause.is_some_and(|g| g.on()) => {
                    issues.push(super::qos_source::global_pause_warning(q, netdev));
                    Row::Pass("PFC off, IEEE 802.3x global pause on (every priority lossless)".into(), "a lossless RoCE priority".into())
                }
                Some(on) if on.is_empty() => {
                    let (m, r) = (
                        format!("PFC is off on every priority of {netdev}: whichever priority RoCE rides is lossy (which one is not known: {why})"),
                        format!(
                            "{}; and set RoCE's DSCP: {}",
                            enable_pfc(q, Priority::new(3).expect("3 is a priority"), netdev),
                            set_dscp(&device.name, port.port)
                        ),
                    );
                    issues.push(issue(Severity::Error, m.clone(), r));
                    Row::SameCause(format!("PFC on priorities none: {m}"))
                }
                on => {
                    let on = on.map_or("unknown".into(), |on| list(&on));
                    Row::Skip(format!("PFC on priorities {on}; the RoCE priority is not known: {why}"))
                }
            };
            super::qos_counters::lifetime_or_window(port, q, None, netdev, &mut issues);
            let hint = match unknown {
                priority::Unknown::Trust => format!(
                    "; read it with `mlnx_qos -i {netdev}` or `dcb -j app show dev {netdev}` (a bundle: re-capture it with `fabcheck bundle DIR`, which saves both)"
                ),
                priority::Unknown::Dscp => format!("; say it with --expect roce_dscp=N (NCCL_IB_TC >> 2), or set it: {}", set_dscp(&device.name, port.port)),
                _ => String::new(),
            };
            emit_or_skip(sheet, s, issues, &format!("the RoCE priority is not known: {why}{hint}"));
            write_row(sheet, s, row);
            return;
        }
    };
    let p = d.priority;
    let buffers = buffers_apply(device);
    let lossless_row = lossless(q, &d, buffers, netdev, &mut issues);
    super::qos_source::notes(q, &d, &device.name, port.port, &mut issues);
    class(q, p, netdev, &mut issues);
    ecn(q, p, netdev, expect, &mut issues);
    cnp(q, &d, netdev, &mut issues);
    super::qos_counters::lifetime_or_window(port, q, Some(p), netdev, &mut issues);
    let observed = observed(q, &d, buffers);
    let mut unread = unread_figures(q, buffers);
    unread.extend(legs_unread);
    let expected = Some(
        if buffers {
            "PFC, a share of the wire and a lossless receive buffer on the RoCE priority"
        } else {
            "PFC and a share of the wire on the RoCE priority"
        }
        .to_string(),
    );
    if unread.is_empty() {
        emit(sheet, s, issues, observed, expected);
    } else {
        emit_or_skip(sheet, s, issues, &format!("{observed}; not read: {}", unread.join(", ")));
    }
    write_row(sheet, s, lossless_row);
}

fn write_row(sheet: &mut Sheet, s: &str, row: Row) {
    match row {
        Row::Skip(why) => sheet.skip(FindingId::RoceLossless, s, why),
        Row::Pass(observed, expected) => sheet.pass(FindingId::RoceLossless, s, observed, Some(expected)),
        Row::SameCause(why) => sheet.fail_by(FindingId::RoceLossless, s, format!("see roce.qos: {why}"), FindingId::RoceQos),
    }
}

/// `roce.lossless`'s row, written after `roce.qos`'s.
enum Row {
    Skip(String),
    Pass(String, String),
    /// roce.qos's error is this row's cause: named here, not counted twice.
    SameCause(String),
}

/// Writes the issues as the row and its notes (the worst first), or a pass.
fn emit(sheet: &mut Sheet, s: &str, mut issues: Vec<Issue>, observed: String, expected: Option<String>) {
    issues.sort_by_key(|i| i.severity);
    let mut it = issues.into_iter();
    match it.next() {
        None => sheet.pass(FindingId::RoceQos, s, observed, expected),
        Some(first) => {
            sheet.fail(FindingId::RoceQos, s, observed, expected, first.severity, first.message, first.remedy);
            for i in it {
                sheet.note(FindingId::RoceQos, s, i.severity, i.message, i.remedy);
            }
        }
    }
}

/// A skip (its notes beside it), unless something worse than an info was found even so.
fn emit_or_skip(sheet: &mut Sheet, s: &str, issues: Vec<Issue>, why: &str) {
    if issues.iter().all(|i| i.severity == Severity::Info) {
        sheet.skip(FindingId::RoceQos, s, why);
        for i in issues {
            sheet.note(FindingId::RoceQos, s, i.severity, i.message, i.remedy);
        }
    } else {
        emit(sheet, s, issues, why.to_string(), None);
    }
}

/// Why the DCB part was not read, and what to install.
fn not_read(q: &PortQos, netdev: &str, soft: bool) -> String {
    let said: Vec<String> = q
        .asked
        .iter()
        .filter_map(|a| {
            let why = match a.unread.as_ref()? {
                Unread::NotInstalled => "not installed".to_string(),
                Unread::NotSupported => "Operation not supported".into(),
                Unread::NotPermitted => "refused (run as root)".into(),
                Unread::TimedOut => "did not answer in time".into(),
                Unread::NotInBundle => "not in the bundle".into(),
                Unread::Unparsed(w) => format!("answered with nothing it reads ('{}')", crate::sanitise::printable(w)),
                Unread::Failed(w) => format!("failed ('{}')", crate::sanitise::printable(w)),
            };
            Some(format!("{}: {why}", a.tool.name()))
        })
        .collect();
    let said = said.join("; ");
    let soft_words = if soft { "Soft-RoCE (rxe) runs on a plain netdev: " } else { "" };
    if q.asked.iter().any(|a| a.unread == Some(Unread::NotSupported)) {
        return format!("{soft_words}{netdev} has no DCB ({said}): no PFC, ETS or trust state to read, and RoCE's lossless set-up is not judged");
    }
    if soft {
        return format!("Soft-RoCE (rxe) on {netdev}: no DCB set-up was read ({said}): its lossless set-up is not judged");
    }
    let bundle = q.asked.iter().any(|a| a.unread == Some(Unread::NotInBundle));
    let install = if bundle {
        format!("capture the node with `fabcheck bundle DIR` (it saves dcb/{netdev}.json and tools/mlnx_qos/{netdev}.txt)")
    } else {
        "install iproute2 5.11 or later (`dcb`) or NVIDIA's mlnx-tools (`mlnx_qos`, with MLNX_OFED/DOCA), and run as root".into()
    };
    format!("the QoS set-up of {netdev} was not read ({said}): {install}")
}

/// Whether the port's RDMA driver puts RoCE on the APP table's RoCE entry (Broadcom's).
fn app_tags(device: &Device) -> bool {
    crate::probe::catype::roce_on_app_entry(&device.name, device.vendor_id, device.driver.as_deref())
}

/// Whether RoCE leaves this port tagged: its routable RoCE v2 GIDs are on the port's own
/// netdev (untagged) or on another (a VLAN device).
fn tagging(port: &Port) -> Tagging {
    let Some(own) = port.netdev.as_deref() else { return Tagging::Unknown };
    let routable: Vec<Option<&str>> =
        port.gids_of_type(GidType::RoceV2).filter(|g| port::gid_scope(&g.gid.octets()) != GidScope::LinkLocal).map(|g| g.netdev.as_deref()).collect();
    if routable.contains(&Some(own)) {
        return Tagging::Untagged;
    }
    match routable.iter().flatten().next() {
        Some(other) => Tagging::Tagged(crate::sanitise::printable(other).into_owned()),
        None if port.gids.iter().any(|g| g.netdev.as_deref() == Some(own)) => Tagging::Untagged,
        None => Tagging::Unknown,
    }
}

/// Whether the adapter has receive buffers to judge (mlx5's alone: `catype::has_dcb_buffers`);
/// elsewhere a priority with PFC is lossless (the firmware keeps its headroom), and no buffer is
/// asked for (nor can be: `dcb buffer show` has nothing to say).
fn buffers_apply(device: &Device) -> bool {
    crate::probe::catype::has_dcb_buffers(&device.ca_type, device.driver.as_deref())
}

/// PFC on the RoCE priority (and its buffer, where the driver has them): `roce.lossless`'s row
/// and `roce.qos`'s error.
fn lossless(q: &PortQos, d: &Derived, buffers: bool, netdev: &str, issues: &mut Vec<Issue>) -> Row {
    let p = d.priority;
    let expected = format!("PFC on priority {p} (RoCE's)");
    let on = q.pfc_priorities().unwrap_or_default();
    match q.pfc_on(p) {
        None => Row::Skip(format!("RoCE rides {}; PFC was not read", d.words())),
        Some(false) if on.is_empty() && q.global_pause.is_some_and(|g| g.on()) => {
            issues.push(super::qos_source::global_pause_warning(q, netdev));
            Row::Pass(format!("priority {p}: PFC off, IEEE 802.3x global pause on (every priority lossless)"), expected)
        }
        Some(false) => {
            let (message, remedy) = pfc_off(q, d, netdev, &on);
            issues.push(issue(Severity::Error, message.clone(), remedy));
            // One fault, one error: roce.qos carries it; this row names the same cause.
            Row::SameCause(format!("PFC on priorities {}: {message} (the error is roce.qos's)", list(&on)))
        }
        Some(true) => match (q.buffer_lossless(p), q.buffer_of(p)) {
            (Some(false), Some((buffer, size))) => {
                let message = format!(
                    "RoCE rides {}, which has PFC, but its receive buffer {buffer} is {} bytes: PFC cannot hold its traffic and it is dropped when the buffer fills",
                    d.words(),
                    size.unwrap_or(0)
                );
                let remedy = format!(
                    "give buffer {buffer} room above its xoff threshold (`mlnx_qos -i {netdev} --buffer_size S0,...,S7`, or `dcb buffer set dev {netdev} buffer-size {buffer}:SIZE`), or map priority {p} to a lossless buffer (`mlnx_qos -i {netdev} --prio2buffer ...`, `dcb buffer set dev {netdev} prio-buffer {p}:B`)"
                );
                issues.push(issue(Severity::Error, message.clone(), remedy));
                Row::SameCause(format!("PFC on priority {p}; buffer {buffer} lossy: {message}"))
            }
            (Some(true), Some((buffer, _))) => Row::Pass(format!("priority {p}: PFC on, receive buffer {buffer} lossless"), expected),
            _ if !buffers => {
                Row::Pass(format!("priority {p}: PFC on (the adapter keeps its PFC headroom itself: no receive buffers to set)"), expected)
            }
            _ => Row::Skip(format!("priority {p}: PFC on; whether its receive buffer is lossless is not known (receive buffers not read)")),
        },
    }
}

/// Why RoCE's priority has no PFC, in the words of the trap it is: untagged on a PCP port, a
/// DSCP mapped by hand, or PFC on another priority.
fn pfc_off(q: &PortQos, d: &Derived, netdev: &str, on: &[Priority]) -> (String, String) {
    let p = d.priority;
    let pfc_words = if on.is_empty() { "PFC is off on every priority".to_string() } else { format!("PFC is on {}", list(on)) };
    // The ToS to test with: rdma_cm's own (106: DSCP 26 with ECT(0), as NCCL_IB_TC), else the DSCP's.
    let tclass = d.dscp.map_or(106, |(dscp, from)| from.tos(dscp));
    let class_note = format!("; then run tests in that class with `fabcheck pair --tclass {tclass}`");
    if d.from_app {
        let target = on.first().copied().unwrap_or(p);
        return (
            format!("RoCE rides {}, which has no PFC ({pfc_words}): RoCE is lossy", d.words()),
            if on.is_empty() {
                enable_pfc(q, p, netdev)
            } else {
                format!(
                    "{}; or put RoCE's APP entry on priority {target}: `dcb app replace dev {netdev} dgram-port-prio 4791:{target}` (Broadcom's `bnxt_setupcc.sh -r {target}` does both)",
                    enable_pfc(q, p, netdev)
                )
            },
        );
    }
    match (d.trust, d.dscp) {
        (Trust::Pcp, dscp) => {
            let wasted = dscp
                .and_then(|(dscp, _)| Some((dscp, q.dscp_priority(dscp)?)))
                .filter(|(_, mapped)| q.pfc_on(*mapped) == Some(true))
                .map(|(dscp, mapped)| format!("; DSCP {dscp} maps to priority {mapped}, but the table is used only while the port trusts DSCP"))
                .unwrap_or_default();
            let target = on.first().copied().or_else(|| d.dscp.map(|(dscp, _)| dscp.default_priority())).unwrap_or(Priority::new(3).expect("3"));
            let dscp_text = d.dscp.map_or("D".to_string(), |(dscp, _)| dscp.to_string());
            (
                format!("RoCE goes out untagged on {netdev}, which trusts PCP: it rides priority {p}, which has no PFC ({pfc_words}): RoCE is lossy{wasted}"),
                format!(
                    "trust DSCP, so RoCE's DSCP picks its priority: `mlnx_qos -i {netdev} --trust dscp` (or `dcb app add dev {netdev} dscp-prio {dscp_text}:{target}`: mlx5 trusts DSCP from its first DSCP entry){}; or tag RoCE on a VLAN with priority {target}{class_note}",
                    if on.is_empty() { format!(", and {}", enable_pfc(q, target, netdev)) } else { String::new() }
                ),
            )
        }
        (Trust::Dscp, Some((dscp, from))) => {
            let from_words = match from {
                DscpFrom::Expected => String::new(),
                DscpFrom::TrafficClass(tos) => format!(" (MLNX_OFED's traffic_class, Global tclass={tos})"),
                DscpFrom::DefaultRoceTos(tos) => format!(" (rdma_cm's default_roce_tos {tos})"),
            };
            let default = dscp.default_priority();
            if p != default {
                let back = if q.pfc_on(default) == Some(true) { default } else { on.first().copied().unwrap_or(default) };
                (
                    format!(
                        "DSCP {dscp}{from_words} is mapped by hand to priority {p} (the default is {default}, DSCP >> 3), which has no PFC ({pfc_words}): RoCE rides {p} and is lossy"
                    ),
                    format!(
                        "map DSCP {dscp} to a priority with PFC: `mlnx_qos -i {netdev} --dscp2prio set,{dscp},{back}` (or `dcb app replace dev {netdev} dscp-prio {dscp}:{back}`){}{class_note}",
                        if on.is_empty() { format!(", and {}", enable_pfc(q, back, netdev)) } else { String::new() }
                    ),
                )
            } else if on.is_empty() {
                (
                    format!("DSCP {dscp}{from_words} maps to priority {p}, and {pfc_words}: RoCE is lossy"),
                    format!("{}{class_note}", enable_pfc(q, p, netdev)),
                )
            } else {
                let other = on[0];
                (
                    format!("DSCP {dscp}{from_words} maps to priority {p}, which has no PFC ({pfc_words}): RoCE rides {p} and is lossy"),
                    format!(
                        "{}; or map DSCP {dscp} to priority {other}: `mlnx_qos -i {netdev} --dscp2prio set,{dscp},{other}` (or `dcb app replace dev {netdev} dscp-prio {dscp}:{other}`){class_note}",
                        enable_pfc(q, p, netdev)
                    ),
                )
            }
        }
        (Trust::Dscp, None) => (format!("RoCE rides priority {p}, which has no PFC ({pfc_words})"), enable_pfc(q, p, netdev)),
    }
}

/// How to set RoCE's DSCP on a port: MLNX_OFED's per-port override, or rdma_cm's default ToS
/// (its configfs group made first: it exists only once made).
fn set_dscp(device: &str, port: u32) -> String {
    format!(
        "`echo 106 > /sys/class/infiniband/{device}/tc/{port}/traffic_class` (MLNX_OFED: every QP of the port), or rdma_cm's default ToS: `mkdir -p /sys/kernel/config/rdma_cm/{device} && echo 106 > /sys/kernel/config/rdma_cm/{device}/ports/{port}/default_roce_tos` (or `cma_roce_tos -d {device} -t 106`)"
    )
}

/// The commands that turn PFC on for `p`, keeping the priorities already on.
fn enable_pfc(q: &PortQos, p: Priority, netdev: &str) -> String {
    let mut pfc = q.pfc.unwrap_or([false; 8]);
    pfc[p.index()] = true;
    let csv: Vec<&str> = pfc.iter().map(|&on| if on { "1" } else { "0" }).collect();
    format!(
        "enable PFC on priority {p}: `mlnx_qos -i {netdev} --pfc {}` (or `dcb pfc set dev {netdev} prio-pfc {p}:on`), and PFC on {p} on the switch ports",
        csv.join(",")
    )
}

/// The RoCE priority's traffic class must get a share of the wire (ETS above 0%, or strict).
fn class(q: &PortQos, p: Priority, netdev: &str, issues: &mut Vec<Issue>) {
    if let Some((tc, Some(sched))) = q.class_of(p) {
        if sched.tsa == Tsa::Ets && sched.bw == Some(0) {
            issues.push(issue(
                Severity::Error,
                format!("RoCE's priority {p} is in traffic class {tc}, which has no ETS share (ets, 0%, not strict): under load from the other classes it gets nothing"),
                format!(
                    "give TC {tc} a share: `dcb ets set dev {netdev} tc-bw {tc}:50 ...` (the ets classes' shares sum to 100), or with mlnx_qos `-s/--tsa` and `-t/--tcbw` lists with TC {tc} above 0 (`mlnx_qos -i {netdev} --tcbw ...`)"
                ),
            ));
        }
    }
}

/// ECN/DCQCN on the RoCE priority: both the notification and the reaction point.
fn ecn(q: &PortQos, p: Priority, netdev: &str, expect: &Expectations, issues: &mut Vec<Issue>) {
    let want = expect.ecn == Some(true);
    let severity = if want { Severity::Error } else { Severity::Warning };
    match (q.ecn_np, q.ecn_rp) {
        (Some(np), Some(rp)) if !(np[p.index()] && rp[p.index()]) => {
            let off: Vec<&str> = [("roce_np", np), ("roce_rp", rp)].iter().filter(|(_, e)| !e[p.index()]).map(|(n, _)| *n).collect();
            let tail = if want { " (--expect ecn=on)" } else { ": PFC alone carries RoCE, and congestion then spreads as pauses" };
            issues.push(issue(
                severity,
                format!("ECN/DCQCN is off on RoCE's priority {p} ({} disabled){tail}", off.join(" and ")),
                format!(
                    "`echo 1 > /sys/class/net/{netdev}/ecn/roce_np/enable/{p}; echo 1 > /sys/class/net/{netdev}/ecn/roce_rp/enable/{p}` (MLNX_OFED), and ECN marking for that class on the switches"
                ),
            ));
        }
        (Some(_), Some(_)) => {}
        _ if want => issues.push(issue(
            Severity::Warning,
            format!("ECN/DCQCN on priority {p} could not be read, so --expect ecn=on is not verified (no ecn/ tree: it is MLNX_OFED's mlx5 driver's)"),
            format!("read /sys/class/net/{netdev}/ecn/roce_np/enable/{p} and roce_rp/enable/{p} with MLNX_OFED's driver loaded, or check DCQCN with `mlxreg`/the NIC's documentation"),
        )),
        _ => {}
    }
}

/// CNPs marked into a class that is neither lossless nor strict are dropped when it is busy,
/// and DCQCN then never slows the sender.
fn cnp(q: &PortQos, d: &Derived, netdev: &str, issues: &mut Vec<Issue>) {
    let cnp_priority = match d.trust {
        Trust::Dscp => q.cnp_dscp.and_then(|c| q.dscp_priority(c)),
        Trust::Pcp if d.untagged => q.cnp_dscp.map(|_| q.default_prio.unwrap_or(d.priority)),
        Trust::Pcp => q.cnp_802p_prio,
    };
    let Some(cp) = cnp_priority else { return };
    let lossy = q.pfc_on(cp) == Some(false);
    let shared = matches!(q.class_of(cp), Some((_, Some(sched))) if sched.tsa == Tsa::Ets);
    if lossy && shared {
        let (tc, bw) = q.class_of(cp).map_or((0, None), |(tc, s)| (tc, s.and_then(|s| s.bw)));
        let how = q.cnp_dscp.map_or(String::new(), |c| format!("DSCP {c}, "));
        issues.push(issue(
            Severity::Warning,
            format!(
                "CNPs ({how}priority {cp}) land in traffic class {tc}, a lossy ETS class ({}% share, no PFC on {cp}): under load they are dropped and DCQCN does not slow the senders",
                bw.unwrap_or(0)
            ),
            format!(
                "mark CNPs into a strict-priority or lossless class: `echo 48 > /sys/class/net/{netdev}/ecn/roce_np/cnp_dscp` with DSCP 48 on a priority whose class is strict (`mlnx_qos -i {netdev} --tsa ...`), as NVIDIA's RoCE set-up does (CNP DSCP 48, priority 6)"
            ),
        ));
    }
}

/// The row's observed text: the priority and what its path holds.
fn observed(q: &PortQos, d: &Derived, buffers_apply: bool) -> String {
    let p = d.priority;
    let pfc = q.pfc_priorities().map_or("PFC not read".into(), |on| format!("PFC on {}", list(&on)));
    let class = match q.class_of(p) {
        Some((tc, Some(s))) => format!("TC {tc} {}{}", s.tsa, s.bw.filter(|_| s.tsa == Tsa::Ets).map_or(String::new(), |b| format!(" {b}%"))),
        Some((tc, None)) => format!("TC {tc}"),
        None => "TC not read".into(),
    };
    let buffer = match (q.buffer_of(p), q.buffer_lossless(p)) {
        (Some((b, _)), Some(true)) => format!("buffer {b} lossless"),
        (Some((b, _)), Some(false)) => format!("buffer {b} lossy"),
        _ if !buffers_apply => "headroom the adapter's own".into(),
        _ => "buffers not read".into(),
    };
    let ecn = match q.ecn_priorities() {
        Some(on) if on.contains(&p) => "ECN on".to_string(),
        Some(_) => "ECN off".into(),
        None => "ECN not read".into(),
    };
    format!("RoCE {}: {pfc}; {class}; {buffer}; {ecn}", d.words())
}

/// The figures a pass needs that no source gave (the receive buffers only where the driver has
/// them).
fn unread_figures(q: &PortQos, buffers_apply: bool) -> Vec<String> {
    let has = |tool: Tool| q.asked.iter().any(|a| a.tool == tool && a.unread.is_none());
    let mut out = Vec::new();
    if q.pfc.is_none() {
        out.push("PFC".to_string());
    }
    if q.prio2tc.is_none() || q.tcs.is_none() {
        out.push("the traffic classes (`dcb -j ets show`, or mlnx_qos's tc lines)".to_string());
    }
    if buffers_apply && (q.prio2buffer.is_none() || q.buffer_size.is_none()) {
        let tool = if has(Tool::MlnxQos) { "mlnx_qos prints them from MLNX_OFED 4.6 on" } else { "`dcb -j buffer show`" };
        out.push(format!("the receive buffers ({tool})"));
    }
    out
}
