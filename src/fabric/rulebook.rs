//! Every rule `fabric` judges one read of the subnet by, in one ordered list: what `fabcheck
//! fabric` says of a fabric and what `accept`'s fabric stage says of it are the same rules, in
//! the same order, over the same read.

use crate::fabric::counters::soak::FabricWindow;
use crate::fabric::design::rails::RailMap;
use crate::fabric::design::topology::Topology;
use crate::fabric::design::{duplicate, rails, tiers};
use crate::fabric::discovery::model::{Fabric, Tables};
use crate::fabric::ibdiagnet::Capture;
use crate::fabric::routes::judge::RouteFigures;
use crate::fabric::routes::{creditloop, mcast, pkey, vl};
use crate::fabric::{counters, FabricExpect, Judgement};
use crate::outcome::{Finding, FindingId, Severity};

/// What the run was asked beyond the fabric itself: `fabric`'s flags, or none (`accept`).
pub struct Asked<'a> {
    /// `--topology` or `--plan`: the cabling as designed.
    pub expected: Option<&'a Topology>,
    pub expect: &'a FabricExpect,
    /// `--rails`: `Some(None)` reads rails from node descriptions, `Some(Some(map))` from `--rail-map`.
    pub rails: Option<Option<&'a RailMap>>,
    /// `--ibdiagnet DIR`: adaptive routing, SHARP and congestion control from a capture.
    pub capture: Option<&'a Capture>,
    /// `--soak`: the window between the two reads (the fabric given is the second read).
    pub window: Option<&'a FabricWindow>,
    /// The sample of host pairs `fabric.route` walks.
    pub seed: u64,
}

impl Asked<'_> {
    /// `fabcheck fabric` with no flags.
    pub fn nothing(expect: &FabricExpect, seed: u64) -> Asked<'_> {
        Asked { expected: None, expect, rails: None, capture: None, window: None, seed }
    }
}

/// Every rule over one read, findings sorted errors first; the routes' figures when the
/// forwarding tables were read.
pub fn judge(fabric: &Fabric, tables: &Tables, asked: &Asked) -> (Judgement, Option<RouteFigures>) {
    let mut judgement = crate::fabric::judge(fabric, asked.expected, asked.expect);
    // Fabric design (#32).
    let (design, cabling) = tiers::rules(fabric, asked.expect, asked.expected);
    judgement.extend(design);
    judgement.extend(duplicate::rules(fabric));
    if let Some(map) = asked.rails {
        judgement.extend(rails::rules(fabric, map));
    }
    if let Some(w) = asked.window {
        say_window(&mut judgement, w);
    }
    // fabric.route: the tables walked between host pairs (only when an SM routed the fabric).
    let routes = tables.read.then(|| crate::fabric::routes::judge::judge(fabric, tables, asked.seed, cabling));
    let figures = routes.map(|(figures, findings)| {
        judgement.findings.extend(findings);
        figures
    });
    // fabric.creditloop: the routes' channel dependencies, per VL; fabric.mcast: the MFTs'
    // trees; fabric.vl: SLs on VLs without arbitration weight (and tables not answered).
    if tables.read {
        // SL2VL maps read in part would put some hops on their VL and others on VL 0.
        let whole = if tables.qos.cut_short.is_none() { tables.sl2vl.clone() } else { Default::default() };
        judgement.findings.extend(creditloop::judge(fabric, tables, &whole));
        let groups = mcast::groups_from_mfts(fabric, &tables.qos.mfts);
        judgement.findings.extend(mcast::judge(fabric, &groups, &tables.qos.mfts));
        judgement.findings.extend(vl::judge(fabric, &vl::ports(tables)));
        judgement.findings.extend(vl::unanswered(fabric, tables));
    }
    // fabric.ar, fabric.sharp, fabric.cc: from an ibdiagnet capture.
    if let Some(capture) = asked.capture {
        judgement.findings.extend(crate::fabric::ibdiagnet::judge(capture));
    }
    // fabric.pkey: each host port's partitions against its switch port's.
    if tables.read {
        judgement.findings.extend(pkey::judge(fabric, tables));
        judgement.findings.extend(pkey::unread(fabric, tables));
    }
    // The InfiniBand physical layer (PortExtendedSpeedsCounters), and congestion over a window.
    judgement.findings.extend(counters::phy::judge(fabric, tables));
    if let Some(w) = asked.window {
        judgement.findings.extend(counters::phy::congestion(fabric, w.seconds, &w.sample_ticks));
    }
    judgement.findings.sort_by_key(|f| f.severity);
    (judgement, figures)
}

/// The soak window said as info: how long, and which counters it could not judge.
fn say_window(judgement: &mut Judgement, w: &FabricWindow) {
    judgement.findings.push(Finding {
        id: FindingId::SoakWindow,
        severity: Severity::Info,
        subject: "fabric".into(),
        message: format!(
            "counters read {:.0} s apart (soak window{}): what rose in the window is judged, not lifetime totals",
            w.seconds,
            if w.interrupted { ", interrupted" } else { "" }
        ),
        remedy: "a longer window (--soak 1h) catches rarer errors and flaps".into(),
        about: None,
    });
    if !w.not_judged.is_empty() {
        judgement.findings.push(Finding {
            id: FindingId::SoakCounters,
            severity: Severity::Info,
            subject: "fabric".into(),
            message: format!("not judged over the window: {}", w.not_judged.join("; ")),
            remedy: "clear the counters (`perfquery -x -R`) and soak again".into(),
            about: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::discovery::fixture::Build;

    /// With no flags (`accept`'s fabric stage) the design and identity rules run too, not only
    /// the subnet's own: a leaf without its uplink and a cloned host are named.
    #[test]
    fn no_flags_still_runs_every_rule() {
        let mut b = Build::new();
        for s in ["spine0", "spine1"] {
            b.switch(s);
        }
        for l in 0..3 {
            let leaf = format!("leaf{l}");
            b.switch(&leaf);
            for h in 0..2 {
                // leaf2's hosts both say they are host0 (a cloned image).
                let host = b.ca(&format!("host{} mlx5_0", if l == 2 { 0 } else { l * 2 + h }));
                let leaf = b.guid(&leaf);
                b.link(leaf, host);
            }
            b.cable(&leaf, "spine0");
            if l != 1 {
                b.cable(&leaf, "spine1");
            }
        }
        let expect = FabricExpect::default();
        let (judgement, routes) = judge(&b.fabric, &Tables::default(), &Asked::nothing(&expect, 7));
        assert!(routes.is_none(), "no forwarding tables read: no routes walked");
        let found: Vec<(FindingId, Severity, String)> = judgement.findings.iter().map(|f| (f.id, f.severity, f.subject.to_string())).collect();
        assert!(found.contains(&(FindingId::FabricDesign, Severity::Error, "leaf1".into())), "{found:#?}");
        assert!(found.contains(&(FindingId::FabricDuplicate, Severity::Warning, "host0 mlx5_0".into())), "{found:#?}");
        assert!(judgement.findings.windows(2).all(|w| w[0].severity <= w[1].severity), "errors first");
    }
}
