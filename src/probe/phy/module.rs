//! The transceiver or cable in a port, from `ethtool -m IFACE`: identity, temperature, per-lane
//! Rx/Tx power and laser bias, and the alarm and warning flags the module raises.
//!
//! ethtool's text differs between versions (`Rcvr signal avg optical power(Channel 1)` in
//! ethtool 4.x/5.x, `Rx power (Channel 1)` later; `(Chan 1)` beside `(Channel 1)` in the flag
//! names), so lines are recognised by the words they contain, not by exact keys. The bytes of
//! `ethtool -m IFACE hex on` are the same in every version: where a bundle has them they are
//! decoded ([`super::module_hex`]) and the text only fills what they lack.

use serde::{Deserialize, Serialize};

/// A transceiver or cable and what it measures. Figures are `None` where the module does not
/// say (copper cables have no optics; many DACs no temperature).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// The SFF-8024 form factor (`QSFP28`, `QSFP-DD`, `OSFP`, ...).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub vendor: Option<String>,
    pub part: Option<String>,
    pub serial: Option<String>,
    pub media: Option<Media>,
    pub temperature_c: Option<f64>,
    /// Per lane, lane 1 first; `null` for a lane the module does not report. A lane with no
    /// light reads [`DARK_DBM`].
    pub rx_power_dbm: Option<Vec<Option<f64>>>,
    pub tx_power_dbm: Option<Vec<Option<f64>>>,
    pub tx_bias_ma: Option<Vec<Option<f64>>>,
    /// The alarm and warning flags that are raised (on), in the module's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<ModuleFlag>,
}

/// Copper (a DAC: no optics) or optical (an optical module, or an active optical cable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Media {
    Copper,
    Optical,
}

/// One raised flag: which figure, which way, how serious, on which lane (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleFlag {
    pub figure: Figure,
    pub level: FlagLevel,
    /// `high` or `low`; `None` for a state flag (loss of signal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lane: Option<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    Temperature,
    Voltage,
    RxPower,
    TxPower,
    TxBias,
    /// Receiver loss of signal: no light on the lane.
    RxLos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagLevel {
    Alarm,
    Warning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    High,
    Low,
}

impl Figure {
    pub fn words(self) -> &'static str {
        match self {
            Figure::Temperature => "temperature",
            Figure::Voltage => "supply voltage",
            Figure::RxPower => "Rx power",
            Figure::TxPower => "Tx power",
            Figure::TxBias => "laser bias current",
            Figure::RxLos => "Rx loss of signal",
        }
    }
}

/// What a lane with no light reads (0 mW is -inf dBm, which JSON cannot carry).
pub const DARK_DBM: f64 = -40.0;

/// Milliwatts to dBm, no light as [`DARK_DBM`].
pub fn mw_to_dbm(mw: f64) -> f64 {
    if mw <= 0.0001 {
        DARK_DBM
    } else {
        ((10.0 * mw.log10()) * 100.0).round() / 100.0
    }
}

/// The SFF-8024 identifier's form factor name.
pub fn form_factor(identifier: u8) -> Option<&'static str> {
    Some(match identifier {
        0x03 => "SFP",
        0x0c => "QSFP",
        0x0d => "QSFP+",
        0x11 => "QSFP28",
        0x18 => "QSFP-DD",
        0x19 => "OSFP",
        0x1e => "QSFP+ (CMIS)",
        _ => return None,
    })
}

/// Reads an `ethtool -m IFACE` text report; `None` when it names no module at all.
pub fn parse_module_text(report: &str) -> Option<Module> {
    let mut m = Module::default();
    let mut rx = Lanes::default();
    let mut tx = Lanes::default();
    let mut bias = Lanes::default();
    let mut seen = false;
    for line in report.lines().take(4096) {
        let Some((key, value)) = line.split_once(':') else { continue };
        let (key, value) = (key.trim(), value.trim());
        let lower = key.to_ascii_lowercase();
        let lane = lane_of(&lower);
        match lower.as_str() {
            "identifier" => {
                seen = true;
                let code = value.split_whitespace().next().and_then(|c| u8::from_str_radix(c.trim_start_matches("0x"), 16).ok());
                let named = value.split_once('(').map(|(_, rest)| rest.trim_end_matches(')').to_string());
                m.kind = code.and_then(form_factor).map(str::to_string).or(named);
                continue;
            }
            "vendor name" => m.vendor = text_field(value),
            "vendor pn" => m.part = text_field(value),
            "vendor sn" => m.serial = text_field(value),
            "transmitter technology" | "media interface technology" => {
                m.media = Some(if value.to_ascii_lowercase().contains("copper") { Media::Copper } else { Media::Optical });
            }
            // ethtool prints 0.00 for a module without a monitor (the bytes read 0): not a reading.
            "module temperature" => m.temperature_c = leading_number(value).filter(|&t| t != 0.0),
            _ => {}
        }
        if lower.contains("threshold") {
            continue;
        }
        let figure = figure_of(&lower);
        // ethtool 6.4 and later: `Rx loss of signal : [ No, No, Yes, No ]` (lane 1 first), or
        // `None` when no lane has lost its signal.
        if figure == Some(Figure::RxLos) && lane.is_none() {
            m.flags.extend(lanes_saying_yes(value).map(|lane| ModuleFlag {
                figure: Figure::RxLos,
                level: FlagLevel::Alarm,
                direction: None,
                lane: Some(lane),
            }));
            continue;
        }
        if lower.contains("alarm") || lower.contains("warning") {
            if value.eq_ignore_ascii_case("on") {
                if let Some(figure) = figure {
                    let level = if lower.contains("alarm") { FlagLevel::Alarm } else { FlagLevel::Warning };
                    let direction = if lower.contains("high") {
                        Some(Direction::High)
                    } else if lower.contains("low") {
                        Some(Direction::Low)
                    } else {
                        None
                    };
                    m.flags.push(ModuleFlag { figure, level, direction, lane });
                }
            }
            continue;
        }
        // SFF-8472 modules (SFP, SFP+, SFP28: one channel) print their monitors without a
        // channel (ethtool `sfpdiag.c`: `Laser bias current`, `Laser output power`, `Receiver
        // signal average optical power`, as captured in tests/fixtures/wild/ethtool-m-sfp-*):
        // they are lane 1.
        let lane = match lane {
            Some(lane) => lane,
            None if m.kind.as_deref() == Some("SFP") => 1,
            None => continue,
        };
        match figure {
            Some(Figure::TxBias) => bias.set(lane, leading_number(value)),
            Some(Figure::RxPower) => rx.set(lane, power_dbm(value)),
            Some(Figure::TxPower) => tx.set(lane, power_dbm(value)),
            _ => {}
        }
    }
    if !seen {
        return None;
    }
    // A copper cable has no optics, whatever a driver prints in the power lines.
    if m.media != Some(Media::Copper) {
        m.rx_power_dbm = rx.done();
        m.tx_power_dbm = tx.done();
        m.tx_bias_ma = bias.done();
    }
    Some(m)
}

/// Values per lane (1-based), kept in lane order.
#[derive(Default)]
pub(crate) struct Lanes(Vec<Option<f64>>);

impl Lanes {
    pub(crate) fn set(&mut self, lane: u8, value: Option<f64>) {
        let i = usize::from(lane.saturating_sub(1));
        if lane == 0 || i >= 8 {
            return;
        }
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        self.0[i] = value;
    }

    pub(crate) fn done(self) -> Option<Vec<Option<f64>>> {
        self.0.iter().any(Option::is_some).then_some(self.0)
    }
}

/// Which figure a key names, by its words (every ethtool version's spelling).
fn figure_of(key: &str) -> Option<Figure> {
    if key.contains("bias") {
        Some(Figure::TxBias)
    } else if key.contains("rx power") || key.contains("rcvr signal") || key.contains("receiver signal") {
        Some(Figure::RxPower)
    } else if key.contains("tx power") || key.contains("transmit avg optical power") || key.contains("output power") {
        Some(Figure::TxPower)
    } else if key.contains("temperature") {
        Some(Figure::Temperature)
    } else if key.contains("voltage") {
        Some(Figure::Voltage)
    } else if key.contains("rx los") && !key.contains("loss of lock") {
        Some(Figure::RxLos)
    } else {
        None
    }
}

/// `... (Channel 3)`, `...(Channel 3)`, `... (Chan 3)`, `... (Lane 3)` → 3.
fn lane_of(key: &str) -> Option<u8> {
    let open = key.rfind('(')?;
    let inner = key[open + 1..].trim_end_matches(')');
    let number = inner.strip_prefix("channel").or_else(|| inner.strip_prefix("chan")).or_else(|| inner.strip_prefix("lane"))?;
    number.trim().parse().ok()
}

/// `[ No, Yes, No, No ]` → lane 2 (1-based); anything else (`None`, `N/A`) → no lanes.
fn lanes_saying_yes(value: &str) -> impl Iterator<Item = u8> + '_ {
    let list = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')).unwrap_or("");
    list.split(',').take(16).zip(1u8..).filter(|(word, _)| word.trim().eq_ignore_ascii_case("yes")).map(|(_, lane)| lane)
}

fn leading_number(value: &str) -> Option<f64> {
    value.split_whitespace().next()?.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `0.8123 mW / -0.90 dBm` → -0.90 (from the mW figure, so `-inf dBm` is [`DARK_DBM`]).
fn power_dbm(value: &str) -> Option<f64> {
    let mut words = value.split_whitespace();
    let number: f64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("mW") => Some(mw_to_dbm(number)),
        Some("dBm") => Some(number.max(DARK_DBM)),
        _ => None,
    }
}

fn text_field(value: &str) -> Option<String> {
    let v = value.trim();
    (!v.is_empty()).then(|| v.chars().take(64).collect())
}

#[cfg(test)]
mod tests;
