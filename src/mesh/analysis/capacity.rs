//! Endpoints that can carry less than the others (a port trained at 2X, a NIC in a narrow PCIe
//! slot): each pair is judged against its own two ends' capacity (`Criteria::expected_for`), so
//! such a port neither lowers the bar for every other pair nor makes its own pairs suspects; it
//! is said as what it is, a slow port, with a warning (pure).

use super::{Criteria, Suspect, SuspectKind};
use crate::units::sig3 as fmt;

/// A warning suspect (kind `node`) per endpoint whose capacity is below `bw_fraction` of the
/// fastest endpoint's, unless it is already a suspect of its own.
pub fn slow_ports(endpoints: &[String], c: &Criteria, already: &[Suspect]) -> Vec<Suspect> {
    let Some(best) = c.capacity_gbps.iter().flatten().copied().reduce(f64::max) else { return Vec::new() };
    let mut out = Vec::new();
    for (name, cap) in endpoints.iter().zip(&c.capacity_gbps) {
        let Some(cap) = *cap else { continue };
        if cap >= c.bw_fraction * best || already.iter().any(|s| s.subject == *name) {
            continue;
        }
        out.push(Suspect::warning(
            SuspectKind::Node,
            name.clone(),
            format!(
                "slow port: it can carry {} Gb/s (its link, or PCIe where smaller), below the {} Gb/s of the fastest endpoints; its pairs were judged against {} Gb/s: run `fabcheck check` on it (link.width, link.rate, pcie.bound say why)",
                fmt(cap),
                fmt(best),
                fmt(cap)
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2x_port_is_a_warning_and_full_speed_ones_are_not() {
        let names: Vec<String> = (1..=4).map(|i| format!("n{i}/mlx5_0")).collect();
        let c = Criteria { capacity_gbps: vec![Some(400.0), Some(200.0), Some(400.0), None], ..Criteria::default() };
        let s = slow_ports(&names, &c, &[]);
        assert_eq!(s.len(), 1, "{s:#?}");
        assert_eq!((s[0].kind, s[0].subject.as_str(), s[0].is_error()), (SuspectKind::Node, "n2/mlx5_0", false));
        assert!(s[0].reason.starts_with("slow port: it can carry 200 Gb/s"), "{}", s[0].reason);
        let named = [Suspect::new(SuspectKind::Node, "n2/mlx5_0", "x")];
        assert!(slow_ports(&names, &c, &named).is_empty(), "already a suspect");
        assert!(slow_ports(&names, &Criteria::default(), &[]).is_empty());
    }
}
