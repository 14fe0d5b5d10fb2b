//! The priority RoCE rides on a port (pure). The DSCP is the operator's (`--expect
//! roce_dscp=N`) when given, else MLNX_OFED's per-port override (`tc/PORT/traffic_class`,
//! `Global tclass=N`: the driver puts it on every QP of the port), else rdma_cm's
//! `default_roce_tos` >> 2 where it is read (NCCL's `NCCL_IB_TC` and perftest's `--tclass` set
//! the same ToS byte). With none of them and PFC on exactly one priority, that priority is
//! taken as RoCE's (and the finding says the applications must set the matching ToS). The port's trust state then
//! decides: `dscp` maps the DSCP through the DSCP to priority table; `pcp` takes the VLAN tag's
//! priority, and RoCE that goes out untagged (its GID on the port's own netdev) rides the
//! default priority (dcb's `default-prio` where the driver keeps one, else 0).

use super::{Dscp, PortQos, Priority, Trust};

/// Where the DSCP came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DscpFrom {
    /// `--expect roce_dscp=N`.
    Expected,
    /// MLNX_OFED's `tc/PORT/traffic_class` override (the ToS byte).
    TrafficClass(u8),
    /// rdma_cm's `default_roce_tos` (the ToS byte).
    DefaultRoceTos(u8),
}

/// Which source named RoCE's class (the contract's `tclass_source`).
pub use crate::model::TclassSource as Source;

impl DscpFrom {
    pub fn source(self) -> Source {
        match self {
            DscpFrom::Expected => Source::Expect,
            DscpFrom::TrafficClass(_) => Source::TrafficClass,
            DscpFrom::DefaultRoceTos(_) => Source::RdmaCm,
        }
    }

    /// The ToS byte to send with: the source's own byte, or the expected DSCP with ECN bits 0.
    pub fn tos(self, dscp: Dscp) -> u8 {
        match self {
            DscpFrom::Expected => dscp.get() << 2,
            DscpFrom::TrafficClass(tos) | DscpFrom::DefaultRoceTos(tos) => tos,
        }
    }
}

/// Whether RoCE on this port leaves with a VLAN tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tagging {
    /// Its routable RoCE v2 GIDs are on the port's own netdev.
    Untagged,
    /// On another netdev (a VLAN device): the tag's priority is the application's service
    /// level or the VLAN's egress map, which the port's set-up does not say.
    Tagged(String),
    Unknown,
}

/// How the priority was worked out: each step, for the finding's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    pub priority: Priority,
    pub trust: Trust,
    pub dscp: Option<(Dscp, DscpFrom)>,
    /// With trust `pcp`: untagged, so the default priority.
    pub untagged: bool,
    /// Trust `dscp`, no DSCP source: the one priority with PFC is taken as RoCE's.
    pub from_pfc: bool,
    /// The RDMA driver puts RoCE on the APP table's RoCE entry (Broadcom's bnxt_re): that
    /// priority is RoCE's, tagged by the driver even where the port trusts PCP.
    pub from_app: bool,
}

/// Why it cannot be worked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unknown {
    /// Neither mlnx_qos nor dcb said the trust state.
    Trust,
    /// Trust `dscp` and no DSCP: no `--expect roce_dscp`, no `default_roce_tos` read.
    Dscp,
    /// Trust `dscp` and the table does not say where this DSCP goes.
    Table(Dscp),
    /// Trust `pcp`, RoCE tagged: its priority is the tag's.
    Tagged(String),
    /// Trust `pcp` and where the GIDs live is not known.
    Tagging,
}

impl Unknown {
    pub fn words(&self) -> String {
        match self {
            Unknown::Trust => "the port's trust state (pcp or dscp) was not read".into(),
            Unknown::Dscp => "the port trusts DSCP and the DSCP RoCE uses is not known: no MLNX_OFED traffic_class override, rdma_cm's \
                              default_roce_tos is not set (configfs), no --expect roce_dscp=N was given, and PFC is not on exactly one priority"
                .into(),
            Unknown::Table(d) => format!("the port trusts DSCP and its DSCP to priority table does not say where DSCP {d} goes"),
            Unknown::Tagged(netdev) => {
                format!("the port trusts PCP and RoCE runs tagged on {netdev}: its priority is the VLAN tag's (the application's service level or the VLAN's egress-qos-map)")
            }
            Unknown::Tagging => "the port trusts PCP and whether RoCE goes out tagged is not known".into(),
        }
    }
}

/// The DSCP RoCE uses: the expectation, else MLNX_OFED's traffic_class override, else
/// rdma_cm's default ToS.
pub fn roce_dscp(expected: Option<Dscp>, qos: &PortQos) -> Option<(Dscp, DscpFrom)> {
    expected
        .map(|d| (d, DscpFrom::Expected))
        .or_else(|| qos.traffic_class.map(|tos| (Dscp::of_tos(tos), DscpFrom::TrafficClass(tos))))
        .or_else(|| qos.default_roce_tos.map(|tos| (Dscp::of_tos(tos), DscpFrom::DefaultRoceTos(tos))))
}

/// The ToS `pair` sends with when no `--tclass` is given, and where it came from: the RoCE
/// DSCP's source's ToS; with no source and PFC on one priority, a DSCP the table maps to it
/// (the class selector `p << 3` first); else 0.
pub fn default_tclass(expected: Option<Dscp>, qos: &PortQos) -> (u8, Source) {
    if let Some((dscp, from)) = roce_dscp(expected, qos) {
        return (from.tos(dscp), from.source());
    }
    match only_pfc(qos) {
        Some(p) => {
            let selector = Dscp::new(p.get() << 3).expect("a class selector is a DSCP");
            let dscp = if qos.dscp_priority(selector).is_none_or(|q| q == p) {
                selector
            } else {
                (0..64).filter_map(Dscp::new).find(|d| qos.dscp_priority(*d) == Some(p)).unwrap_or(selector)
            };
            (dscp.get() << 2, Source::Pfc)
        }
        None => (0, Source::None),
    }
}

/// The priority PFC is on, when it is on exactly one.
pub fn only_pfc(qos: &PortQos) -> Option<Priority> {
    match qos.pfc_priorities()?.as_slice() {
        [p] => Some(*p),
        _ => None,
    }
}

/// The RoCE priority of a port. `app_tags`: the port's RDMA driver puts RoCE on the APP
/// table's RoCE entry ([`PortQos::roce_app`]; Broadcom's bnxt_re, which tags RoCE with that
/// priority unless its DSCP decides): then that entry is RoCE's priority where the port trusts
/// PCP, or trusts DSCP with no DSCP source.
pub fn derive(qos: &PortQos, expected: Option<Dscp>, tagging: &Tagging, app_tags: bool) -> Result<Derived, Unknown> {
    let trust = qos.trust.ok_or(Unknown::Trust)?;
    let dscp = roce_dscp(expected, qos);
    let base = Derived { priority: Priority(0), trust, dscp, untagged: false, from_pfc: false, from_app: false };
    let by_app = qos.roce_app.filter(|_| app_tags).map(|priority| Derived { priority, from_app: true, ..base.clone() });
    match trust {
        Trust::Dscp => {
            let Some((d, _)) = dscp else {
                if let Some(by_app) = by_app {
                    return Ok(by_app);
                }
                let priority = only_pfc(qos).ok_or(Unknown::Dscp)?;
                return Ok(Derived { priority, from_pfc: true, ..base });
            };
            let priority = qos.dscp_priority(d).ok_or(Unknown::Table(d))?;
            Ok(Derived { priority, ..base })
        }
        Trust::Pcp => match (by_app, tagging) {
            (Some(by_app), _) => Ok(by_app),
            (None, Tagging::Untagged) => Ok(Derived { priority: qos.default_prio.unwrap_or(Priority(0)), untagged: true, ..base }),
            (None, Tagging::Tagged(netdev)) => Err(Unknown::Tagged(netdev.clone())),
            (None, Tagging::Unknown) => Err(Unknown::Tagging),
        },
    }
}

impl Derived {
    /// `priority 3 (DSCP 26 from rdma_cm's default_roce_tos 106, trust dscp)`.
    pub fn words(&self) -> String {
        let dscp = |(d, from): (Dscp, DscpFrom)| match from {
            DscpFrom::Expected => format!("DSCP {d} (--expect roce_dscp)"),
            DscpFrom::TrafficClass(tos) => format!("DSCP {d} from MLNX_OFED's traffic_class (Global tclass={tos})"),
            DscpFrom::DefaultRoceTos(tos) => format!("DSCP {d} from rdma_cm's default_roce_tos {tos}"),
        };
        match (self.trust, self.dscp) {
            _ if self.from_app => {
                format!("priority {} (the APP table's RoCE entry, UDP port 4791, which bnxt_re tags RoCE with; trust {})", self.priority, self.trust)
            }
            (Trust::Dscp, Some(d)) => format!("priority {} ({}, trust dscp)", self.priority, dscp(d)),
            (Trust::Dscp, None) if self.from_pfc => {
                format!("priority {} (no DSCP source: the one priority with PFC, trust dscp)", self.priority)
            }
            (Trust::Pcp, _) if self.untagged => format!("priority {} (untagged on a port that trusts pcp)", self.priority),
            _ => format!("priority {} (trust {})", self.priority, self.trust),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Vec<Option<Priority>> {
        (0..64u8).map(|d| Priority::new(d >> 3)).collect()
    }

    #[test]
    fn dscp_trust_maps_the_tos() {
        let q = PortQos { trust: Some(Trust::Dscp), dscp2prio: Some(table()), default_roce_tos: Some(106), ..PortQos::default() };
        let d = derive(&q, None, &Tagging::Untagged, false).unwrap();
        assert_eq!(d.priority, Priority(3));
        assert_eq!(d.words(), "priority 3 (DSCP 26 from rdma_cm's default_roce_tos 106, trust dscp)");
        let e = derive(&q, Dscp::new(46), &Tagging::Untagged, false).unwrap();
        assert_eq!((e.priority, e.words().contains("--expect roce_dscp")), (Priority(5), true), "the expectation wins");
        let no_tos = PortQos { default_roce_tos: None, ..q.clone() };
        assert_eq!(derive(&no_tos, None, &Tagging::Untagged, false), Err(Unknown::Dscp));
        let partial = PortQos { dscp2prio: Some(vec![None; 64]), ..q };
        assert_eq!(derive(&partial, None, &Tagging::Untagged, false), Err(Unknown::Table(Dscp(26))));
    }

    #[test]
    fn the_traffic_class_override_wins_over_rdma_cm() {
        let q = PortQos {
            trust: Some(Trust::Dscp),
            dscp2prio: Some(table()),
            default_roce_tos: Some(0),
            traffic_class: Some(162),
            pfc: Some([false, false, false, false, false, true, false, false]),
            ..PortQos::default()
        };
        let d = derive(&q, None, &Tagging::Untagged, false).unwrap();
        assert_eq!(d.priority, Priority(5), "162 >> 2 is DSCP 40, priority 5 by the default table");
        assert!(d.words().contains("traffic_class (Global tclass=162)"), "{}", d.words());
        assert_eq!(default_tclass(None, &q), (162, Source::TrafficClass));
        assert_eq!(default_tclass(Dscp::new(26), &q), (104, Source::Expect));
        let cm = PortQos { traffic_class: None, default_roce_tos: Some(106), ..q.clone() };
        assert_eq!(default_tclass(None, &cm), (106, Source::RdmaCm));
    }

    #[test]
    fn no_source_and_one_pfc_priority_is_taken_as_roce_s() {
        let q = PortQos {
            trust: Some(Trust::Dscp),
            dscp2prio: Some(table()),
            pfc: Some([false, false, false, false, true, false, false, false]),
            ..PortQos::default()
        };
        let d = derive(&q, None, &Tagging::Untagged, false).unwrap();
        assert_eq!((d.priority, d.from_pfc), (Priority(4), true));
        assert_eq!(default_tclass(None, &q), (128, Source::Pfc), "DSCP 32 (class selector 4)");
        let two = PortQos { pfc: Some([false, false, false, true, true, false, false, false]), ..q.clone() };
        assert_eq!(derive(&two, None, &Tagging::Untagged, false), Err(Unknown::Dscp));
        assert_eq!(default_tclass(None, &two), (0, Source::None));
        let mut moved = table();
        moved[32] = Priority::new(0);
        moved[34] = Priority::new(4);
        let remapped = PortQos { dscp2prio: Some(moved), ..q };
        assert_eq!(default_tclass(None, &remapped), (132, Source::Pfc), "the first DSCP the table maps to 4: 33");
    }

    #[test]
    fn pcp_trust_untagged_rides_the_default_priority() {
        let q = PortQos { trust: Some(Trust::Pcp), dscp2prio: Some(table()), default_roce_tos: Some(106), ..PortQos::default() };
        let d = derive(&q, None, &Tagging::Untagged, false).unwrap();
        assert_eq!((d.priority, d.untagged), (Priority(0), true), "the DSCP is not what a pcp port looks at");
        assert_eq!(derive(&q, None, &Tagging::Tagged("ens2np0.100".into()), false), Err(Unknown::Tagged("ens2np0.100".into())));
        assert_eq!(derive(&PortQos::default(), None, &Tagging::Untagged, false), Err(Unknown::Trust));
        let with_default = PortQos { default_prio: Priority::new(3), ..q };
        assert_eq!(derive(&with_default, None, &Tagging::Untagged, false).map(|d| d.priority), Ok(Priority(3)));
    }

    /// The APP table's RoCE entry is RoCE's priority only where the driver tags RoCE with it
    /// (bnxt_re): under trust pcp, and under trust dscp with no DSCP source; a DSCP source still
    /// decides under trust dscp, and mlx5 (app_tags false) ignores the entry.
    #[test]
    fn the_app_tables_roce_entry_where_the_driver_tags_with_it() {
        let pcp = PortQos { trust: Some(Trust::Pcp), roce_app: Priority::new(3), ..PortQos::default() };
        let d = derive(&pcp, None, &Tagging::Untagged, true).unwrap();
        assert_eq!((d.priority, d.from_app, d.untagged), (Priority(3), true, false));
        assert!(d.words().contains("APP table's RoCE entry"), "{}", d.words());
        assert_eq!(derive(&pcp, None, &Tagging::Untagged, false).map(|d| d.priority), Ok(Priority(0)), "mlx5: untagged, the default");
        let dscp = PortQos {
            trust: Some(Trust::Dscp),
            dscp2prio: Some(table()),
            roce_app: Priority::new(5),
            pfc: Some([false, false, false, true, false, false, false, false]),
            ..PortQos::default()
        };
        assert_eq!(derive(&dscp, None, &Tagging::Untagged, true).map(|d| (d.priority, d.from_app)), Ok((Priority(5), true)));
        assert_eq!(derive(&dscp, None, &Tagging::Untagged, false).map(|d| (d.priority, d.from_pfc)), Ok((Priority(3), true)));
        let with_tos = PortQos { default_roce_tos: Some(106), ..dscp };
        assert_eq!(derive(&with_tos, None, &Tagging::Untagged, true).map(|d| (d.priority, d.from_app)), Ok((Priority(3), false)), "the DSCP decides");
    }
}
