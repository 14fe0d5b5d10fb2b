//! What `roce.qos` adds about where RoCE's class came from (pure): the warning that no source
//! names the DSCP when the one PFC priority was taken as RoCE's, rdma_cm's default ToS on a
//! lossy priority while another source puts RoCE on a lossless one (rdma_cm's value then judges
//! only rdma_cm-connected traffic), and global pause standing in for PFC.

use super::qos_issue::{issue, Issue};
use super::Severity;
use crate::probe::qos::pause::PauseFrom;
use crate::probe::qos::priority::{Derived, DscpFrom};
use crate::probe::qos::{Dscp, PortQos};

/// The notes about the DSCP's source, pushed onto `issues`.
pub(super) fn notes(q: &PortQos, d: &Derived, device: &str, port: u32, issues: &mut Vec<Issue>) {
    let p = d.priority;
    if d.from_pfc {
        let tos = u16::from(p.get()) << 5;
        issues.push(issue(
            Severity::Warning,
            format!(
                "no source names RoCE's DSCP (no --expect roce_dscp, no MLNX_OFED traffic_class, no rdma_cm default_roce_tos): priority {p}, the one with PFC, is judged as RoCE's; applications must set a ToS that maps to it themselves (NCCL's NCCL_IB_TC, perftest's --tclass)"
            ),
            format!(
                "set the port's ToS so every QP carries it: `echo {tos} > /sys/class/infiniband/{device}/tc/{port}/traffic_class` (MLNX_OFED), or set NCCL_IB_TC={tos} for NCCL and rdma_cm's default ToS (`mkdir -p /sys/kernel/config/rdma_cm/{device} && echo {tos} > /sys/kernel/config/rdma_cm/{device}/ports/{port}/default_roce_tos`)"
            ),
        ));
    }
    // rdma_cm's value matters only where no traffic_class override replaces it.
    let other_source = matches!(d.dscp, Some((_, DscpFrom::Expected)));
    if let (true, None, Some(tos)) = (other_source, q.traffic_class, q.default_roce_tos) {
        let cm = Dscp::of_tos(tos);
        let Some(cm_priority) = q.dscp_priority(cm) else { return };
        if q.pfc_on(p) == Some(true) && q.pfc_on(cm_priority) == Some(false) {
            let want = d.dscp.map_or(106, |(dscp, from)| from.tos(dscp));
            issues.push(issue(
                Severity::Warning,
                format!(
                    "rdma_cm's default_roce_tos {tos} (DSCP {cm}) maps to priority {cm_priority}, which has no PFC: connections made through rdma_cm that set no ToS of their own ride a lossy priority, while RoCE's DSCP {} rides lossless priority {p}",
                    d.dscp.map_or(0, |(dscp, _)| dscp.get())
                ),
                format!(
                    "`mkdir -p /sys/kernel/config/rdma_cm/{device} && echo {want} > /sys/kernel/config/rdma_cm/{device}/ports/{port}/default_roce_tos` (or `cma_roce_tos -d {device} -t {want}`)"
                ),
            ));
        }
    }
}

/// Global pause on with PFC off: lossless on every priority, with pause spreading over the port.
pub(super) fn global_pause_warning(q: &PortQos, netdev: &str) -> Issue {
    let from = match q.global_pause.map(|g| g.from) {
        Some(PauseFrom::Counters) => "the rx_global_pause/tx_global_pause counters",
        _ => "`ethtool -a`",
    };
    issue(
        Severity::Warning,
        format!(
            "PFC is off and IEEE 802.3x global pause is on ({from}): {netdev} is lossless on every priority, RoCE's included, but a pause stops the whole port, so congestion in one class (and any pause storm) spreads to all traffic"
        ),
        format!(
            "prefer PFC on RoCE's priority only: `ethtool -A {netdev} rx off tx off`, then `mlnx_qos -i {netdev} --pfc 0,0,0,1,0,0,0,0` (or `dcb pfc set dev {netdev} prio-pfc 3:on`) with the same on the switch ports"
        ),
    )
}
