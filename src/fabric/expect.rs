//! What the operator expects of the subnet: `fabcheck fabric --expect KEY=VALUE`.

use crate::mad::attributes::ErrorCounter;
use crate::model::Unparsed;
use crate::port::{Speed, Width};

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
    /// Per error counter, the highest value that is still fine.
    pub thresholds: Vec<(ErrorCounter, u64)>,
    /// Fabric design (#32): the highest leaf oversubscription (host-facing over spine-facing
    /// bandwidth) that is still fine; `oversubscription=2` or `2:1`.
    pub oversubscription: Option<f64>,
}

impl Default for FabricExpect {
    fn default() -> Self {
        FabricExpect {
            sm_standby: None,
            width: None,
            speed: None,
            nodes: None,
            switches: None,
            thresholds: default_thresholds(),
            oversubscription: None,
        }
    }
}

pub fn default_thresholds() -> Vec<(ErrorCounter, u64)> {
    ErrorCounter::ALL.iter().map(|&c| (c, c.default_threshold())).collect()
}

impl FabricExpect {
    pub fn threshold(&self, counter: ErrorCounter) -> u64 {
        self.thresholds.iter().find(|(c, _)| *c == counter).map_or(counter.default_threshold(), |&(_, v)| v)
    }

    /// The keys [`FabricExpect::set`] takes besides the error counters' (`ErrorCounter::key`).
    pub const KEYS: &'static [&'static str] = &["sm_standby", "nodes", "switches", "width", "speed", "oversubscription"];

    /// Every key `set` takes: [`FabricExpect::KEYS`], then each error counter's threshold.
    pub fn all_keys() -> Vec<&'static str> {
        Self::KEYS.iter().copied().chain(ErrorCounter::ALL.iter().map(|c| c.key())).collect()
    }

    /// Applies one `KEY=VALUE`.
    pub fn set(&mut self, text: &str) -> Result<(), Unparsed> {
        let (key, value) = text.split_once('=').ok_or_else(|| format!("'{text}' is not KEY=VALUE"))?;
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        let count = |what: &str| value.parse::<usize>().map_err(|_| format!("{key}: '{value}' is not {what}"));
        match key.as_str() {
            "sm_standby" => self.sm_standby = Some(count("a count of standby SMs")?),
            "nodes" => self.nodes = Some(count("a node count")?),
            "switches" => self.switches = Some(count("a switch count")?),
            "oversubscription" => self.oversubscription = Some(ratio(value)?),
            "width" => {
                let w = Width::from_name(&value.to_ascii_uppercase()).filter(|w| !matches!(w, Width::Unknown(_)));
                self.width = Some(w.ok_or_else(|| format!("width: '{value}' is not one of 1X 2X 4X 8X 12X"))?);
            }
            "speed" => {
                let s = Speed::from_name(value).filter(|s| !matches!(s, Speed::Unknown(_)));
                self.speed = Some(s.ok_or_else(|| format!("speed: '{value}' is not one of SDR DDR QDR FDR10 FDR EDR HDR NDR XDR"))?);
            }
            other => {
                let counter = ErrorCounter::from_key(other).ok_or_else(|| {
                    let counters: Vec<&str> = ErrorCounter::ALL.iter().map(|c| c.key()).collect();
                    format!(
                        "unknown key '{other}' (known: sm_standby, nodes, switches, width, speed, oversubscription, and counter thresholds {})",
                        counters.join(", ")
                    )
                })?;
                let value = value.parse().map_err(|_| format!("{other}: '{value}' is not a whole number"))?;
                match self.thresholds.iter_mut().find(|(c, _)| *c == counter) {
                    Some(slot) => slot.1 = value,
                    None => self.thresholds.push((counter, value)),
                }
            }
        }
        Ok(())
    }
}

/// `2`, `2.5` or `2:1`: a ratio above zero.
fn ratio(value: &str) -> Result<f64, Unparsed> {
    let (num, den) = value.split_once(':').unwrap_or((value, "1"));
    let parse = |t: &str| t.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0);
    match (parse(num), parse(den)) {
        (Some(n), Some(d)) => Ok(n / d),
        _ => Err(format!("oversubscription: '{value}' is not a ratio above 0 (2, 2.5 or 2:1)").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let mut e = FabricExpect::default();
        assert_eq!(e.threshold(ErrorCounter::SymbolError), 10);
        assert_eq!(e.threshold(ErrorCounter::XmitDiscards), 100);
        e.set("symbol_error=0").unwrap();
        e.set("sm_standby=1").unwrap();
        e.set("width=4x").unwrap();
        e.set("speed=HDR").unwrap();
        assert_eq!((e.threshold(ErrorCounter::SymbolError), e.sm_standby, e.width, e.speed), (0, Some(1), Some(Width::X4), Some(Speed::Hdr)));
        e.set("oversubscription=3:2").unwrap();
        assert_eq!(e.oversubscription, Some(1.5));
        for bad in [
            "oversubscription=0",
            "oversubscription=x:1",
            "oversubscription=-2",
            "nope=1",
            "symbol_error=-1",
            "sm_standby=x",
            "width=3X",
            "speed=ZDR",
            "novalue",
        ] {
            assert!(e.set(bad).is_err(), "{bad}");
        }
    }
}
