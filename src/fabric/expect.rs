//! What the operator expects of the subnet: `fabcheck fabric --expect KEY=VALUE`.

use super::model::ERROR_COUNTERS;
use crate::probe::decode::{Speed, Width};

/// Expectations and error-counter thresholds, with sane defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct FabricExpect {
    /// At least this many standby SMs (`sm_standby=1` for HA).
    pub sm_standby: Option<usize>,
    /// Every active link at least this wide / fast.
    pub width: Option<Width>,
    pub speed: Option<Speed>,
    /// Exactly this many nodes / switches.
    pub nodes: Option<usize>,
    pub switches: Option<usize>,
    /// Counter name (as in `model::ERROR_COUNTERS`) -> the highest value that is still fine.
    pub thresholds: Vec<(&'static str, u64)>,
}

impl Default for FabricExpect {
    fn default() -> Self {
        FabricExpect { sm_standby: None, width: None, speed: None, nodes: None, switches: None, thresholds: default_thresholds() }
    }
}

/// ibqueryerrors' classic thresholds: physical-layer counters 10, the rest 100.
pub fn default_thresholds() -> Vec<(&'static str, u64)> {
    ERROR_COUNTERS
        .iter()
        .map(|&(name, _)| {
            let limit = match name {
                "rcv_remote_physical_errors" | "xmit_discards" | "vl15_dropped" => 100,
                _ => 10,
            };
            (name, limit)
        })
        .collect()
}

impl FabricExpect {
    pub fn threshold(&self, counter: &str) -> u64 {
        self.thresholds.iter().find(|(n, _)| *n == counter).map_or(u64::MAX, |&(_, v)| v)
    }

    /// Applies one `KEY=VALUE`.
    pub fn set(&mut self, text: &str) -> Result<(), String> {
        let (key, value) = text.split_once('=').ok_or_else(|| format!("'{text}' is not KEY=VALUE"))?;
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        let count = |what: &str| value.parse::<usize>().map_err(|_| format!("{key}: '{value}' is not {what}"));
        match key.as_str() {
            "sm_standby" => self.sm_standby = Some(count("a count of standby SMs")?),
            "nodes" => self.nodes = Some(count("a node count")?),
            "switches" => self.switches = Some(count("a switch count")?),
            "width" => {
                let w = Width::from_name(&value.to_ascii_uppercase()).filter(|w| !matches!(w, Width::Unknown(_)));
                self.width = Some(w.ok_or_else(|| format!("width: '{value}' is not one of 1X 2X 4X 8X 12X"))?);
            }
            "speed" => {
                let s = Speed::from_name(value).filter(|s| !matches!(s, Speed::Unknown(_)));
                self.speed = Some(s.ok_or_else(|| format!("speed: '{value}' is not one of SDR DDR QDR FDR10 FDR EDR HDR NDR XDR"))?);
            }
            other => {
                let slot = self.thresholds.iter_mut().find(|(n, _)| *n == other).ok_or_else(|| {
                    let counters: Vec<&str> = ERROR_COUNTERS.iter().map(|(n, _)| *n).collect();
                    format!(
                        "unknown key '{other}' (known: sm_standby, nodes, switches, width, speed, and counter thresholds {})",
                        counters.join(", ")
                    )
                })?;
                slot.1 = value.parse().map_err(|_| format!("{other}: '{value}' is not a whole number"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let mut e = FabricExpect::default();
        assert_eq!(e.threshold("symbol_error"), 10);
        assert_eq!(e.threshold("xmit_discards"), 100);
        e.set("symbol_error=0").unwrap();
        e.set("sm_standby=1").unwrap();
        e.set("width=4x").unwrap();
        e.set("speed=HDR").unwrap();
        assert_eq!((e.threshold("symbol_error"), e.sm_standby, e.width, e.speed), (0, Some(1), Some(Width::X4), Some(Speed::Hdr)));
        for bad in ["nope=1", "symbol_error=-1", "sm_standby=x", "width=3X", "speed=ZDR", "novalue"] {
            assert!(e.set(bad).is_err(), "{bad}");
        }
    }
}
