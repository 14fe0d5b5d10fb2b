//! `--rails SPEC` as the user writes it: which ports of a node are its rails. Parsed here
//! (pure, typed); resolved against a node's ports and PCI tree on that node by `gpu::rails`,
//! because only the node knows which NIC serves which GPU.

use super::device::parse_device_port;
use crate::model::Unparsed;
use serde::{Deserialize, Serialize};

/// Most rails one end may have: an HGX/DGX node has 8 compute NICs; 32 leaves room for
/// dual-port and future boards while bounding what a controller asks an agent to open.
pub const MAX_RAILS: usize = 32;

/// One rail asked for by name (`DEV[:PORT]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RailName {
    pub device: String,
    /// `None`: the device's first port of the link layer in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u32>,
}

/// `--rails auto|all|N|DEV[:PORT],...` (docs/contract.md, "Whole nodes").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum RailSpec {
    /// GPU node: each GPU's own NIC, in GPU PCI order; else every port of the link layer in
    /// use, by PCI address, then device name in natural order.
    Auto,
    /// Every port of the link layer in use, by PCI address, then device name.
    All,
    /// The first N of `auto`.
    Count(u16),
    /// These ports, in this order, on both ends.
    List(Vec<RailName>),
}

impl RailSpec {
    /// Parses `--rails`. A list must name each port once (two rails on one port would measure
    /// one link twice and call it two).
    pub fn parse(text: &str) -> Result<RailSpec, Unparsed> {
        let t = text.trim();
        match t {
            "auto" => return Ok(RailSpec::Auto),
            "all" => return Ok(RailSpec::All),
            "" => return Err("--rails needs auto, all, a count or a list DEV[:PORT],...".into()),
            _ => {}
        }
        if t.bytes().all(|b| b.is_ascii_digit()) {
            return match t.parse::<u16>() {
                Ok(n) if (1..=MAX_RAILS as u16).contains(&n) => Ok(RailSpec::Count(n)),
                _ => Err(format!("--rails {t}: a count is 1 to {MAX_RAILS}").into()),
            };
        }
        let mut names: Vec<RailName> = Vec::new();
        for part in t.split(',').map(str::trim) {
            // Counted before each name is read: every name is compared with those before it, so
            // a list of thousands (one 128 KiB argument) is refused here, not compared pairwise.
            if names.len() == MAX_RAILS {
                return Err(format!("--rails: more than {MAX_RAILS} rails named, at most {MAX_RAILS}").into());
            }
            if part.is_empty() {
                return Err(format!("--rails '{t}': an empty entry (two commas, or one at an end)").into());
            }
            let (device, port) = parse_device_port(part).map_err(|e| format!("--rails: {e}"))?;
            let name = RailName { device, port };
            if names.iter().any(|n| n.same_port(&name)) {
                return Err(format!("--rails '{t}': {part} is named twice; each rail is one port").into());
            }
            names.push(name);
        }
        Ok(RailSpec::List(names))
    }

    /// The bounds [`parse`](RailSpec::parse) holds a spec to, for one that came another way: a
    /// controller's `rails` request, read from the wire by the agent. A count of 1 to
    /// [`MAX_RAILS`]; a list of 1 to [`MAX_RAILS`] ports, each named once.
    pub fn check(&self) -> Result<(), Unparsed> {
        match self {
            RailSpec::Auto | RailSpec::All => Ok(()),
            RailSpec::Count(n) if (1..=MAX_RAILS as u16).contains(n) => Ok(()),
            RailSpec::Count(n) => Err(format!("--rails {n}: a count is 1 to {MAX_RAILS}").into()),
            RailSpec::List(names) if names.is_empty() || names.len() > MAX_RAILS => {
                Err(format!("--rails: {} rails named, 1 to {MAX_RAILS}", names.len()).into())
            }
            RailSpec::List(names) => match (1..names.len()).find(|&i| names[..i].iter().any(|n| n.same_port(&names[i]))) {
                Some(i) => Err(format!("--rails: {} is named twice; each rail is one port", names[i].device).into()),
                None => Ok(()),
            },
        }
    }
}

impl RailName {
    /// Whether the two name one port: the same device, and the same port or either without one
    /// (the device's first port).
    fn same_port(&self, other: &RailName) -> bool {
        self.device == other.device && (self.port == other.port || self.port.is_none() || other.port.is_none())
    }
}

/// One rail of a node, numbered from 0, as the node resolved it (`gpu::rails`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rail {
    pub rail: usize,
    pub device: String,
    pub port: u32,
    /// Not ACTIVE: kept (numbering never shifts) and reported as `pair.rail.unreachable`.
    pub active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bdf: Option<String>,
    /// The GPU this NIC serves (`auto` on a GPU node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

/// `--rail-threshold PCT`: a rail is judged against the median of its siblings; bandwidth
/// below PCT% of the median, or latency above 100/PCT times it, is `pair.rail`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RailThreshold {
    /// Share of the sibling median a rail's bandwidth must reach (0.5 by default).
    pub bw_fraction: f64,
    /// How many times the sibling median a rail's latency may be (2 by default).
    pub lat_factor: f64,
}

impl Default for RailThreshold {
    fn default() -> Self {
        RailThreshold { bw_fraction: 0.5, lat_factor: 2.0 }
    }
}

impl RailThreshold {
    /// `PCT` from 1 to 99: bandwidth must reach PCT% of the sibling median, latency may be at
    /// most 100/PCT times it (50 gives the defaults, 50% and 2x).
    pub fn parse(text: &str) -> Result<RailThreshold, Unparsed> {
        let pct = text.trim().trim_end_matches('%').parse::<f64>().map_err(|_| format!("--rail-threshold '{text}': a percentage, as in 50"))?;
        if !(1.0..=99.0).contains(&pct) {
            return Err(format!("--rail-threshold {pct}: from 1 to 99 (percent of the sibling median)").into());
        }
        Ok(RailThreshold { bw_fraction: pct / 100.0, lat_factor: 100.0 / pct })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(device: &str, port: Option<u32>) -> RailName {
        RailName { device: device.into(), port }
    }

    #[test]
    fn every_form_of_the_contract() {
        assert_eq!(RailSpec::parse("auto").unwrap(), RailSpec::Auto);
        assert_eq!(RailSpec::parse(" all ").unwrap(), RailSpec::All);
        assert_eq!(RailSpec::parse("4").unwrap(), RailSpec::Count(4));
        assert_eq!(RailSpec::parse("32").unwrap(), RailSpec::Count(32));
        assert_eq!(
            RailSpec::parse("mlx5_0,mlx5_3:1, rxe1").unwrap(),
            RailSpec::List(vec![name("mlx5_0", None), name("mlx5_3", Some(1)), name("rxe1", None)])
        );
        assert_eq!(RailSpec::parse("mlx5_0:1,mlx5_0:2").unwrap(), RailSpec::List(vec![name("mlx5_0", Some(1)), name("mlx5_0", Some(2))]));
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        assert!(RailSpec::parse("0").unwrap_err().contains("1 to 32"));
        assert!(RailSpec::parse("33").unwrap_err().contains("1 to 32"));
        assert!(RailSpec::parse("99999999").is_err());
        assert!(RailSpec::parse("").is_err());
        assert!(RailSpec::parse("mlx5_0,,mlx5_1").unwrap_err().contains("empty entry"));
        assert!(RailSpec::parse("mlx5_0,").unwrap_err().contains("empty entry"));
        assert!(RailSpec::parse("mlx5_0,mlx5_0").unwrap_err().contains("named twice"));
        assert!(RailSpec::parse("mlx5_0,mlx5_0:1").unwrap_err().contains("named twice"));
        assert!(RailSpec::parse("mlx5_0:x").is_err());
        assert!(RailSpec::parse("a;b").is_err());
        let many: Vec<String> = (0..33).map(|i| format!("mlx5_{i}")).collect();
        assert!(RailSpec::parse(&many.join(",")).unwrap_err().contains("at most 32"));
    }

    /// A list is refused at its 33rd name, before that name is read: the duplicate check
    /// compares each name with those before it, so a 128 KiB argument of 20,000 names took
    /// 200 million comparisons before the count was looked at.
    #[test]
    fn a_long_list_is_refused_at_the_name_past_the_bound() {
        let many: Vec<String> = (0..20_000).map(|i| format!("d{i}")).collect();
        assert!(RailSpec::parse(&many.join(",")).unwrap_err().contains("at most 32"));
        // Nothing after the 33rd name is read: a bad entry there is not the error.
        let past = format!("{},mlx5_0:x,,", many[..33].join(","));
        assert!(RailSpec::parse(&past).unwrap_err().contains("at most 32"), "{past}");
        assert!(matches!(RailSpec::parse(&many[..32].join(",")), Ok(RailSpec::List(l)) if l.len() == 32));
    }

    /// A spec from the wire is held to the bounds of one from the command line.
    #[test]
    fn a_spec_from_the_wire_is_checked_as_parse_checks() {
        for ok in ["auto", "all", "1", "32", "mlx5_0,mlx5_1:1", "mlx5_0:1,mlx5_0:2"] {
            assert_eq!(RailSpec::parse(ok).unwrap().check(), Ok(()), "{ok}");
        }
        let list = |n: usize| RailSpec::List((0..n).map(|i| name(&format!("d{i}"), None)).collect());
        assert!(list(33).check().unwrap_err().0.contains("1 to 32"));
        assert!(list(0).check().is_err());
        assert!(RailSpec::Count(0).check().is_err());
        assert!(RailSpec::Count(33).check().is_err());
        let twice = RailSpec::List(vec![name("mlx5_0", Some(1)), name("mlx5_1", None), name("mlx5_0", None)]);
        assert!(twice.check().unwrap_err().0.contains("mlx5_0 is named twice"));
    }

    #[test]
    fn travels_as_json() {
        for spec in [RailSpec::Auto, RailSpec::All, RailSpec::Count(8), RailSpec::List(vec![name("mlx5_4", Some(1))])] {
            let text = serde_json::to_string(&spec).unwrap();
            assert_eq!(serde_json::from_str::<RailSpec>(&text).unwrap(), spec, "{text}");
        }
    }

    #[test]
    fn thresholds() {
        assert_eq!(RailThreshold::parse("50").unwrap(), RailThreshold::default());
        let t = RailThreshold::parse("80%").unwrap();
        assert!((t.bw_fraction - 0.8).abs() < 1e-12 && (t.lat_factor - 1.25).abs() < 1e-12);
        for bad in ["0", "100", "x", "-5", ""] {
            assert!(RailThreshold::parse(bad).is_err(), "{bad}");
        }
    }
}
