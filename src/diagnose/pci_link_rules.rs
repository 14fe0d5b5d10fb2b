//! `pci.link` (issue #44): a NIC's PCIe link trained below what **both** of its ends can do —
//! the function's `max_link_speed`/`max_link_width` and its upstream port's — is an error: a
//! seating, riser or lane fault. A slot slower than the card by design (both ends trained at
//! the slower one's maximum) passes here and is `pcie.bound`'s warning when it cannot carry the
//! port. Where the upstream port's figures are not in the source (a bundle that copied `device`
//! as a plain folder), a link below the card's own maximum is a warning that says so. A link
//! whose figures cannot be read is a skip naming the files, never a pass.

use super::unreadable::{why, Unread};
use super::{Input, Severity, Sheet};
use crate::outcome::FindingId;
use crate::probe::model::{Device, PciLink};

/// The PCIe link files a device's `pci.link` and `pcie.bound` read.
pub(super) const PCI_FILES: [&str; 4] = ["device/current_link_speed", "device/current_link_width", "device/max_link_speed", "device/max_link_width"];

/// What a link is against its two ends.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Verdict {
    /// Figures missing: the files named.
    Unknown(Vec<&'static str>),
    /// Trained at the best both ends allow (or better than the best one end says).
    AtBest { want: String },
    /// Trained below it. `both`: whether the upstream port's figures were known.
    Below { want: String, both: bool },
    /// At full width and at the speed the upstream port's Link Control 2 Target Link Speed
    /// allows, below what both ends could do: a slot capped on purpose (firmware, BIOS).
    Capped { want: String, target: f64 },
}

/// `16.0 GT/s PCIe` -> 16.0; `8 GT/s` -> 8.0; `Unknown` -> none.
pub(super) fn gts(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok().filter(|v: &f64| *v > 0.0)
}

/// The link's verdict from its figures (pure).
pub(super) fn verdict(pci: &PciLink) -> Verdict {
    let mut missing = Vec::new();
    let cur_s = pci.current_speed.as_deref().and_then(gts);
    let max_s = pci.max_speed.as_deref().and_then(gts);
    let (cur_w, max_w) = (pci.current_width.filter(|w| *w > 0), pci.max_width.filter(|w| *w > 0));
    for (known, file) in
        [(cur_s.is_some(), PCI_FILES[0]), (cur_w.is_some(), PCI_FILES[1]), (max_s.is_some(), PCI_FILES[2]), (max_w.is_some(), PCI_FILES[3])]
    {
        if !known {
            missing.push(file);
        }
    }
    let (Some(cur_s), Some(cur_w), Some(max_s), Some(max_w)) = (cur_s, cur_w, max_s, max_w) else { return Verdict::Unknown(missing) };
    let up = pci.upstream.as_ref();
    let up_s = up.and_then(|u| u.max_speed.as_deref()).and_then(gts);
    let up_w = up.and_then(|u| u.max_width).filter(|w| *w > 0);
    let both = up_s.is_some() && up_w.is_some();
    // What both ends allow: the smaller of each figure, written as that end's sysfs says it.
    let (want_s, want_s_text) = match (up_s, up.and_then(|u| u.max_speed.as_deref())) {
        (Some(s), Some(text)) if s < max_s => (s, text.to_string()),
        _ => (max_s, pci.max_speed.clone().unwrap_or_default()),
    };
    let want_w = up_w.map_or(max_w, |w| w.min(max_w));
    let want = format!("x{want_w} {want_s_text}");
    let target = up.and_then(|u| u.target_gts);
    if cur_w >= want_w && cur_s + 0.01 < want_s && both {
        if let Some(target) = target.filter(|t| *t <= cur_s + 0.01) {
            return Verdict::Capped { want, target };
        }
    }
    if cur_w < want_w || cur_s + 0.01 < want_s {
        Verdict::Below { want, both }
    } else {
        Verdict::AtBest { want }
    }
}

/// Whether the link is a fault (below what both ends can do): `pcie.bound` then says nothing,
/// `pci.link`'s error is the cause.
pub(super) fn fault(pci: &PciLink) -> bool {
    matches!(verdict(pci), Verdict::Below { both: true, .. })
}

pub(super) fn run(input: &Input<'_>, unread: &Unread, sheet: &mut Sheet) {
    let physical = input.inventory.has_physical_function();
    for d in &input.inventory.devices {
        let Some(pci) = &d.pci else { continue };
        if !input.scope.device(&d.name) {
            continue;
        }
        if d.virtual_function {
            let why = if physical {
                "SR-IOV virtual function: no PCIe link of its own (its physical function's is judged)"
            } else {
                "SR-IOV virtual function: no PCIe link of its own (its physical function's is judged on the host that holds it)"
            };
            sheet.skip(FindingId::PciLink, &d.name, why);
            continue;
        }
        if let Some(file) = unread.device(&d.name, &PCI_FILES) {
            sheet.skip(FindingId::PciLink, &d.name, why(file));
            continue;
        }
        link(d, pci, sheet);
    }
}

fn link(d: &Device, pci: &PciLink, sheet: &mut Sheet) {
    let observed = format!("x{} {}", pci.current_width.unwrap_or(0), pci.current_speed.as_deref().unwrap_or(""));
    let card = format!("x{} {}", pci.max_width.unwrap_or(0), pci.max_speed.as_deref().unwrap_or(""));
    let bdf = pci.address.as_deref().unwrap_or("<pci>");
    match verdict(pci) {
        Verdict::Unknown(missing) => {
            sheet.skip(FindingId::PciLink, &d.name, format!("the PCIe link's figures are not readable: {} absent", missing.join(", ")));
        }
        Verdict::AtBest { want } => sheet.pass(FindingId::PciLink, &d.name, observed, Some(want)),
        Verdict::Capped { want, target } => {
            let up = pci.upstream.as_ref().map_or("<port>", |u| u.address.as_str());
            sheet.pass(FindingId::PciLink, &d.name, observed.clone(), Some(format!("{want}, or the {target:.1} GT/s {up}'s Link Control 2 allows")));
            sheet.note(
                FindingId::PcieBound,
                &d.name,
                Severity::Info,
                format!(
                    "{}'s PCIe link runs at {observed}, below {want} both ends can do, because the port above it ({up}) is capped on \
                     purpose: its Link Control 2 Target Link Speed is {target:.1} GT/s (set by the firmware or BIOS), not a seating fault",
                    d.name
                ),
                format!(
                    "if the cap is not wanted, raise the slot's link speed in the BIOS/firmware setup; `lspci -vv -s {up}` shows LnkCtl2 \
                     'Target Link Speed'"
                ),
            );
        }
        Verdict::Below { want, both: true } => {
            let up = pci.upstream.as_ref().map_or("<port>", |u| u.address.as_str());
            let upstream =
                pci.upstream.as_ref().map_or(String::new(), |u| format!("x{} {}", u.max_width.unwrap_or(0), u.max_speed.as_deref().unwrap_or("")));
            let carries = match (pci.usable_gbps, d.ports.iter().filter_map(|p| p.rate_gbps).reduce(f64::max)) {
                (Some(usable), Some(rate)) if usable < rate => format!(
                    "; it carries about {} Gb/s, short of the port's {} Gb/s",
                    crate::units::rate(crate::units::round(usable, 0)),
                    crate::units::rate(rate)
                ),
                _ => String::new(),
            };
            sheet.fail(
                FindingId::PciLink,
                &d.name,
                observed.clone(),
                Some(want.clone()),
                Severity::Error,
                format!(
                    "{}'s PCIe link trained at {observed}, below {want}, what both the card ({card}) and the port above it ({up}: \
                     {upstream}) can do: a seating, riser or lane fault, not the slot's design{carries}",
                    d.name
                ),
                format!(
                    "power off and reseat the card, clean its edge connector, try another slot or riser (and its cable); check the BIOS \
                     slot settings (link speed, bifurcation); `lspci -vv -s {bdf}` shows LnkSta against LnkCap; to retrain without a \
                     reboot, `setpci -s {up} CAP_EXP+0x10.w=0x20:0x20` (Retrain Link on the upstream port), then look again"
                ),
            );
        }
        Verdict::Below { want, both: false } => sheet.fail(
            FindingId::PciLink,
            &d.name,
            observed.clone(),
            Some(want),
            Severity::Warning,
            format!(
                "{}'s PCIe link trained at {observed}, below what the card supports ({card}); the port above it is not in this source, \
                 so a slot slower by design cannot be told from a fault",
                d.name
            ),
            format!(
                "reseat the card in a full-width slot of the right generation, check BIOS slot bifurcation/speed settings; `lspci -vv -s \
                 {bdf}` LnkSta shows the same, and the slot's LnkCap says whether it is the slot"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::model::UpstreamPort;

    fn pci(cur: (u32, &str), max: (u32, &str), up: Option<(u32, &str)>) -> PciLink {
        PciLink {
            address: Some("0000:3b:00.0".into()),
            numa_node: Some(0),
            current_speed: Some(cur.1.into()),
            current_width: Some(cur.0),
            max_speed: Some(max.1.into()),
            max_width: Some(max.0),
            usable_gbps: None,
            upstream: up.map(|(w, s)| UpstreamPort {
                address: "0000:3a:00.0".into(),
                max_speed: Some(s.into()),
                max_width: Some(w),
                target_gts: None,
            }),
        }
    }

    const GEN4: &str = "16.0 GT/s PCIe";
    const GEN3: &str = "8.0 GT/s PCIe";
    const GEN5: &str = "32.0 GT/s PCIe";

    #[test]
    fn below_both_ends_is_a_fault() {
        let low = pci((8, GEN3), (16, GEN4), Some((16, GEN4)));
        assert_eq!(verdict(&low), Verdict::Below { want: "x16 16.0 GT/s PCIe".into(), both: true });
        assert!(fault(&low));
        // Only the width, or only the speed, is enough.
        assert!(fault(&pci((8, GEN4), (16, GEN4), Some((16, GEN4)))));
        assert!(fault(&pci((16, GEN3), (16, GEN4), Some((16, GEN4)))));
    }

    #[test]
    fn a_slower_slot_by_design_is_not_a_fault() {
        // A Gen5 x16 card in a Gen4 x16 slot, trained Gen4 x16: the slot's best.
        let design = pci((16, GEN4), (16, GEN5), Some((16, GEN4)));
        assert_eq!(verdict(&design), Verdict::AtBest { want: "x16 16.0 GT/s PCIe".into() });
        // A x16 card in a x8 slot at x8.
        assert_eq!(verdict(&pci((8, GEN4), (16, GEN4), Some((8, GEN4)))), Verdict::AtBest { want: "x8 16.0 GT/s PCIe".into() });
        // Older kernels write `8 GT/s`.
        assert_eq!(verdict(&pci((16, "8 GT/s"), (16, "8 GT/s"), None)), Verdict::AtBest { want: "x16 8 GT/s".into() });
    }

    #[test]
    fn a_firmware_cap_on_the_upstream_port_is_not_a_fault() {
        // A Gen5 card in a Gen5 slot whose Link Control 2 targets Gen4, trained Gen4 x16.
        let mut capped = pci((16, GEN4), (16, GEN5), Some((16, GEN5)));
        assert!(fault(&capped), "without the target speed it reads as a fault");
        capped.upstream.as_mut().unwrap().target_gts = Some(16.0);
        assert_eq!(verdict(&capped), Verdict::Capped { want: "x16 32.0 GT/s PCIe".into(), target: 16.0 });
        assert!(!fault(&capped));
        // The cap explains the speed, never a lost lane; nor a link below the cap.
        let mut narrow = pci((8, GEN4), (16, GEN5), Some((16, GEN5)));
        narrow.upstream.as_mut().unwrap().target_gts = Some(16.0);
        assert!(fault(&narrow));
        let mut below = pci((16, GEN3), (16, GEN5), Some((16, GEN5)));
        below.upstream.as_mut().unwrap().target_gts = Some(16.0);
        assert!(fault(&below));
    }

    #[test]
    fn without_the_upstream_port_it_is_a_warning_and_without_figures_a_skip() {
        let low = pci((8, GEN3), (16, GEN4), None);
        assert_eq!(verdict(&low), Verdict::Below { want: "x16 16.0 GT/s PCIe".into(), both: false });
        assert!(!fault(&low));
        let mut none = low.clone();
        none.current_speed = None;
        none.max_width = None;
        assert_eq!(verdict(&none), Verdict::Unknown(vec!["device/current_link_speed", "device/max_link_width"]));
        let mut unknown = pci((16, "Unknown"), (16, GEN4), None);
        assert!(matches!(verdict(&unknown), Verdict::Unknown(_)), "the kernel's `Unknown` speed is not a figure");
        unknown.current_speed = Some(GEN4.into());
        unknown.current_width = Some(0);
        assert!(matches!(verdict(&unknown), Verdict::Unknown(_)), "width 0 is not a trained link");
    }
}
