//! The physical layer of a port: `phy.fec` (the FEC the lane rate needs, codewords it could not
//! correct), `phy.ber` (pre- and post-FEC bit errors, and a lane that carries most of them) and
//! `phy.module` (the transceiver: alarms it raises, a lane near dark, over temperature).
//!
//! Thresholds and their sources are in docs/checks.md ("The physical layer"). Counters read
//! without a soak window are lifetime figures (since the driver loaded or they were cleared):
//! they are said as such, and an old total is never an error on its own.

use super::{Severity, Sheet};
use crate::outcome::FindingId;
use crate::port::{LinkLayer, PhysState};
use crate::probe::phy::fec::FecMode;
use crate::probe::phy::module::{Direction, Figure, FlagLevel, Media, Module, DARK_DBM};
use crate::probe::phy::{BerFigure, Phy};
use crate::probe::window::{Change, PortWindow, FEC_UNCORRECTABLE, SYMBOL_ERRORS};
use crate::probe::Port;

/// Lane rate (Gb/s) from which lanes are PAM4 and RS(544,514) is required: IEEE 802.3 clauses
/// 134 (50GBASE-R), 137 (100GBASE-KR2/CR2), 120/138 (200G/400G): every 50G-and-faster lane.
pub const PAM4_LANE_GBPS: f64 = 40.0;
/// Pre-FEC BER above which RS(544,514) can no longer bring a link to its 1e-13 frame-error
/// target (IEEE 802.3bs/cd: the KP4 FEC is specified for a 2.4e-4 input BER).
pub const RAW_BER_LIMIT_KP4: f64 = 2.4e-4;
/// The same for RS(528,514) on 25G NRZ lanes (IEEE 802.3by: 5e-5, the "worst BER of 5x10^-5"
/// SFF-8024 names for cables that need RS-FEC). Also LL RS-FEC's, RS(272,257+1) (mlxlink's
/// `RS(271,257)`): derived, not cited. The 25G/50G Ethernet Consortium's LL-FEC specification
/// defines the code (t = 7 ten-bit symbols over 2720 bits) but states no input BER, nor do
/// IEEE 802.3ck/df or NVIDIA's mlxlink documents; RS(528,514) corrects the same 7 symbols over
/// 5280 bits, so judging LL-FEC at its 5e-5 is conservative (docs/checks.md, "pre-FEC BER").
pub const RAW_BER_LIMIT_KR4: f64 = 5e-5;
/// A warning from a tenth of the limit: less than a decade of margin left.
pub const RAW_BER_MARGIN: f64 = 0.1;
use super::limits::EFFECTIVE_BER_LIMIT;
/// A lane with more than this share of the port's corrected errors is named.
pub const LANE_SHARE: f64 = 0.5;
/// Below this many errors in all, a lane's share is noise, not a pattern.
pub const LANE_MIN_ERRORS: u64 = 1000;
/// Rx power below this (dBm) is a lane near dark: below every 100G/200G/400G receiver's
/// sensitivity (IEEE 802.3 cl. 95, 138, 124: -10.3 to -8.4 dBm average power for SR4/DR4/FR4),
/// and the low-alarm threshold most modules set (-13 to -14 dBm).
pub const NEAR_DARK_DBM: f64 = -14.0;
/// Case temperature above which a module is out of its commercial operating range (SFF-8636 /
/// CMIS modules, and every ConnectX-qualified module's datasheet: 0-70 °C).
pub const MODULE_HOT_C: f64 = 70.0;

pub(super) fn run(port: &Port, s: &str, sheet: &mut Sheet) {
    if let Some(window) = &port.soak {
        super::soak_rules::run(port, window, s, sheet);
    }
    let Some(phy) = &port.phy else { return };
    let netdev = port.tool_netdev().unwrap_or("<netdev>");
    // The module speaks whether the link is up or not: a dark lane is why a link is down.
    if port.link_layer == LinkLayer::InfiniBand && phy.module.is_none() {
        sheet.skip(
            FindingId::PhyModule,
            s,
            "an InfiniBand port's module is not read (`mlxlink -d <pci> -m` or `ibdiagnet --get_cable_info` shows it)",
        );
    } else {
        module(phy, netdev, s, sheet);
    }
    if port.phys_state != PhysState::LinkUp {
        for id in [FindingId::PhyFec, FindingId::PhyBer] {
            sheet.skip(id, s, format!("physical link is {}", port.phys_state));
        }
        return;
    }
    let window = port.soak.as_ref();
    let tools = Tools::of(port, netdev);
    fec(phy, window, &tools, s, sheet);
    ber(phy, window, &PostFec::of(port, phy), &tools, s, sheet);
}

/// The post-FEC figure `phy.ber` judges, said as what it is (0.4): on InfiniBand HDR and faster
/// mlxlink's `Symbol BER` (after FEC and retransmission), on EDR and slower and on Ethernet its
/// `Effective Physical BER`, else ethtool's symbol errors over the bits received.
struct PostFec {
    name: &'static str,
    why: String,
    limit: f64,
}

impl PostFec {
    fn of(port: &Port, phy: &Phy) -> PostFec {
        let speed = port.speed;
        let applies = BerFigure::for_port(port.link_layer, speed);
        let (name, why) = match phy.ber_effective_figure {
            Some(BerFigure::Symbol) => {
                ("symbol BER", format!("mlxlink's Symbol BER: what applications see on {speed}, after FEC and retransmission"))
            }
            Some(BerFigure::Effective) if applies == BerFigure::Symbol => (
                "effective BER",
                format!("this mlxlink prints no Symbol BER, so its Effective Physical BER (before {speed}'s retransmission) stands in"),
            ),
            Some(BerFigure::Effective) => ("effective BER", format!("mlxlink's Effective Physical BER: what applications see on {speed}")),
            None => ("effective BER", "post-FEC: symbol errors the FEC could not correct, over the bits received".to_string()),
        };
        PostFec { name, why, limit: post_fec_limit(speed) }
    }
}

/// The post-FEC limit for a speed. NVIDIA's documentation gives none per speed that could be
/// found (ibdiagnet's `--ber_thresh` defaults to 1e-12; its `--get_phy_info` thresholds are not
/// published): 1e-12 for every speed, the IEEE 802.3 and IBTA objective (docs/checks.md).
pub fn post_fec_limit(_speed: crate::port::Speed) -> f64 {
    EFFECTIVE_BER_LIMIT
}

/// How an operator reads and sets a port's physical layer, for the words of skips and
/// remedies: ethtool on a netdev (RoCE), mlxlink and the MADs on InfiniBand (whose netdev, if
/// any, is IPoIB's, with no PHY counters).
struct Tools {
    /// Where the FEC mode is read.
    fec: &'static str,
    /// The command that shows the bit-error counters, per lane.
    counters: String,
    /// How to set the FEC both ends need.
    set_fec: String,
}

impl Tools {
    fn of(port: &Port, netdev: &str) -> Tools {
        if port.link_layer == LinkLayer::InfiniBand {
            Tools {
                fec: "`mlxlink -d <pci>` or PortExtendedSpeedsCounters",
                counters: "`mlxlink -d <pci> -c` (or `perfquery -x`)".into(),
                set_fec: "InfiniBand ports train their FEC with the switch: check both ends with `mlxlink -d <pci>`, and the switch \
                          port's firmware and profile"
                    .into(),
            }
        } else {
            Tools {
                fec: "`ethtool --show-fec`",
                counters: format!("`ethtool -S {netdev} | grep _phy`"),
                set_fec: format!(
                    "set RS-FEC on both ends: `ethtool --set-fec {netdev} encoding rs` and the switch port's FEC to RS (auto \
                     negotiation of FEC is often off at 200/400G, so both ends must be set alike)"
                ),
            }
        }
    }
}

/// Says when the counters are lifetime figures.
fn lifetime() -> &'static str {
    "a lifetime figure, since the driver loaded or the counters were last cleared; `check --soak 10m` judges the rate"
}

/// A counter's rise over the soak window, when it rose.
fn rose(window: &PortWindow, name: &str) -> Option<u64> {
    match window.of(name) {
        Some(Change::Rose(n)) => Some(n),
        _ => None,
    }
}

fn fec(phy: &Phy, window: Option<&PortWindow>, tools: &Tools, s: &str, sheet: &mut Sheet) {
    let mode = phy.fec;
    let uncorrectable = phy.fec_uncorrectable_blocks;
    if mode.is_none() && uncorrectable.is_none() {
        sheet.skip(FindingId::PhyFec, s, format!("FEC mode not readable ({})", tools.fec));
        return;
    }
    let mut observed = mode.map_or("FEC ?".to_string(), |m| format!("FEC {m}"));
    if let Some(lane) = phy.lane_gbps {
        observed.push_str(&format!(" at {} Gb/s a lane", crate::units::rate(lane)));
    }
    if let (Some(c), Some(u)) = (phy.fec_corrected_blocks, uncorrectable) {
        observed.push_str(&format!(", {c} corrected / {u} uncorrectable codewords"));
    }
    let pam4 = phy.lane_gbps.is_some_and(|g| g >= PAM4_LANE_GBPS);
    let remedy_mode = tools.set_fec.clone();
    match mode {
        Some(FecMode::Off | FecMode::BaseR) if pam4 => {
            sheet.fail(
                FindingId::PhyFec,
                s,
                observed,
                Some("RS-544".into()),
                Severity::Error,
                format!(
                    "FEC is {} on PAM4 lanes of {} Gb/s: RS(544,514) is required on every lane of 50G and up",
                    mode.map_or("?".into(), |m| m.to_string()),
                    crate::units::rate(phy.lane_gbps.unwrap_or(0.0))
                ),
                remedy_mode,
            );
            return;
        }
        Some(FecMode::Off) => sheet.note(
            FindingId::PhyFec,
            s,
            Severity::Info,
            "FEC is off: 25G NRZ lanes on short copper (CA-N, up to 3 m) may legitimately run without it; optics and longer \
             cables need RS-528",
            remedy_mode.clone(),
        ),
        _ => {}
    }
    if let Some(w) = window {
        match (w.of(FEC_UNCORRECTABLE), rose(w, FEC_UNCORRECTABLE)) {
            (_, Some(n)) => sheet.fail(
                FindingId::PhyFec,
                s,
                format!("{observed}, {n} uncorrectable in {}", w.words()),
                None,
                Severity::Error,
                format!("{n} FEC codewords could not be corrected during the {} window: frames are being lost to bit errors now", w.words()),
                "clean or replace the cable/optic at both ends; phy.ber and phy.module name the lane",
            ),
            (Some(Change::Reset | Change::Saturated), _) => {
                sheet.skip(FindingId::PhyFec, s, format!("uncorrectable codewords went down during the {} window (cleared): not judged", w.words()))
            }
            _ => sheet.pass(FindingId::PhyFec, s, format!("{observed}, none uncorrectable in {}", w.words()), None),
        }
        return;
    }
    match uncorrectable {
        Some(u) if u > 0 => sheet.fail(
            FindingId::PhyFec,
            s,
            observed,
            None,
            Severity::Warning,
            format!("{u} FEC codewords could not be corrected (frames lost to bit errors): {}", lifetime()),
            "bit errors beyond what the FEC corrects: clean or replace the cable/optic at both ends, and see phy.ber and \
             phy.module for the lane",
        ),
        // An unknown FEC is never a pass (issue #51): which code runs, and what it corrects, is not known.
        _ if mode.is_none() => sheet.skip(FindingId::PhyFec, s, format!("{observed}: the FEC mode is not known ({})", tools.fec)),
        _ => sheet.pass(FindingId::PhyFec, s, observed, None),
    }
}

fn ber(phy: &Phy, window: Option<&PortWindow>, post: &PostFec, tools: &Tools, s: &str, sheet: &mut Sheet) {
    let mut problems: Vec<(Severity, String)> = Vec::new();
    let limit = match phy.fec {
        Some(FecMode::Rs544 | FecMode::Rs546Plr | FecMode::Interleaved) => Some(RAW_BER_LIMIT_KP4),
        Some(FecMode::Rs528 | FecMode::Rs | FecMode::Llrs) => Some(RAW_BER_LIMIT_KR4),
        _ => None,
    };
    let mut observed: Vec<String> = Vec::new();
    // A raw BER whose FEC is not known is not judged, and never a pass (issue #51).
    let mut unjudged_raw = false;
    if let Some(raw) = phy.ber_raw {
        observed.push(format!("raw BER {}", ber_text(raw)));
        if phy.fec.is_none() {
            unjudged_raw = true;
        }
        if let Some(limit) = limit {
            if raw > limit {
                problems.push((
                    Severity::Error,
                    format!("pre-FEC BER {raw:.1e} is above what {} corrects ({limit:.1e})", phy.fec.map_or("the FEC".into(), |m| m.to_string())),
                ));
            } else if raw > limit * RAW_BER_MARGIN {
                problems
                    .push((Severity::Warning, format!("pre-FEC BER {raw:.1e} leaves less than a decade of margin below the FEC limit {limit:.1e}")));
            }
        }
    }
    if let Some(eff) = phy.ber_effective {
        observed.push(format!("{} {}", post.name, ber_text(eff)));
        if eff > post.limit {
            // Over a window it is the link now (an error); as a lifetime figure it may be an old
            // episode (a warning), as every lifetime total is.
            let (severity, when) = match window {
                Some(w) => (Severity::Error, format!(" over the {} window", w.words())),
                None => (Severity::Warning, format!("; {}", lifetime())),
            };
            problems.push((severity, format!("{} {eff:.1e} is above the {:.0e} limit ({}){when}", post.name, post.limit, post.why)));
        }
    }
    match window {
        Some(w) => {
            if let Some(n) = rose(w, SYMBOL_ERRORS) {
                observed.push(format!("{n} symbol errors in {}", w.words()));
                if phy.ber_effective.is_none() {
                    problems.push((Severity::Error, format!("{n} symbol errors the FEC could not correct during the {} window", w.words())));
                }
            }
            if !observed.is_empty() {
                observed.push(format!("over {}", w.words()));
            }
        }
        None => {
            if let Some(sym) = phy.symbol_errors {
                observed.push(format!("{sym} symbol errors"));
                if sym > 0 && phy.ber_effective.is_none() {
                    problems.push((Severity::Warning, format!("{sym} symbol errors the FEC could not correct ({})", lifetime())));
                }
            }
        }
    }
    if let (Some(bits), None) = (phy.corrected_bits, window) {
        observed.push(format!("{bits} corrected bits"));
    }
    // InfiniBand's PortExtendedSpeedsCounters count per lane, not in bits (fabric::local).
    if observed.is_empty() && !phy.lane_errors.is_empty() {
        let per_lane: Vec<String> = phy.lane_errors.iter().map(u64::to_string).collect();
        observed.push(format!("{} corrected per lane ({})", phy.lane_errors.iter().sum::<u64>(), per_lane.join(" ")));
    }
    if observed.is_empty() {
        sheet.skip(FindingId::PhyBer, s, format!("no bit-error counters readable ({})", tools.counters));
        return;
    }
    if phy.ber_raw.is_none() && phy.ber_effective.is_none() && window.is_none() {
        observed.push("lifetime".into());
    }
    let lane = busiest_lane(&phy.lane_errors);
    let observed = observed.join(", ");
    let worst = problems.iter().map(|p| p.0).min();
    match worst {
        Some(severity) => {
            let mut message = problems.into_iter().map(|p| p.1).collect::<Vec<_>>().join("; ");
            if let Some((lane, share)) = lane {
                message.push_str(&format!("; lane {lane} carries {:.0}% of the corrected errors", share * 100.0));
            }
            let counters = &tools.counters;
            let remedy = match lane {
                Some((lane, _)) => format!(
                    "lane {lane} is the weak one: clean the connector (a dirty fiber end face hits one lane), reseat, then swap \
                     the cable/optic to see whether the errors follow it; {counters} shows the lanes"
                ),
                None => format!(
                    "a marginal cable, optic or connector: clean and reseat both ends, then replace the cable/optic; {counters} \
                     shows the counters"
                ),
            };
            sheet.fail(FindingId::PhyBer, s, observed, None, severity, message, remedy);
        }
        None if unjudged_raw => {
            sheet.skip(
                FindingId::PhyBer,
                s,
                format!("{observed}; the raw BER is not judged: the FEC mode is not known, so neither is what it corrects"),
            );
        }
        None => {
            if let Some((lane, share)) = lane {
                sheet.note(
                    FindingId::PhyBer,
                    s,
                    Severity::Info,
                    format!("lane {lane} carries {:.0}% of the port's corrected errors (within what the FEC corrects)", share * 100.0),
                    format!("if errors rise, start with lane {lane}: clean the connector, swap the cable/optic"),
                );
            }
            sheet.pass(FindingId::PhyBer, s, observed, None);
        }
    }
}

/// A BER as people write it: `0`, `1.2e-7`.
fn ber_text(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{v:.1e}")
    }
}

/// The lane with more than [`LANE_SHARE`] of the errors, numbered from 1 as the module's lanes
/// are (the driver's counters count from 0: lane 3 is `rx_err_lane_2_phy`).
pub fn busiest_lane(lanes: &[u64]) -> Option<(usize, f64)> {
    if lanes.len() < 2 {
        return None;
    }
    let total: u64 = lanes.iter().sum();
    if total < LANE_MIN_ERRORS {
        return None;
    }
    let (lane, &most) = lanes.iter().enumerate().max_by_key(|(_, v)| **v)?;
    let share = most as f64 / total as f64;
    (share > LANE_SHARE).then_some((lane + 1, share))
}

fn module(phy: &Phy, netdev: &str, s: &str, sheet: &mut Sheet) {
    let Some(m) = &phy.module else {
        let why = phy.module_unreadable.clone().unwrap_or_else(|| "no module report (`ethtool -m`)".into());
        sheet.skip(FindingId::PhyModule, s, why);
        return;
    };
    let name = identity(m);
    let mut problems: Vec<(Severity, String)> = Vec::new();
    let mut lanes_named: Vec<(Figure, u8)> = Vec::new();
    // Every lane at exactly no light and no flag saying so: a module (many AOCs) that does not
    // monitor Rx power, not a dark cable; its flags still speak.
    let unmonitored = m.rx_power_dbm.as_deref().is_some_and(|rx| rx.iter().all(|d| d.is_none_or(|d| d <= DARK_DBM)))
        && !m.flags.iter().any(|f| matches!(f.figure, Figure::RxPower | Figure::RxLos));
    if m.media != Some(Media::Copper) && !unmonitored {
        let judged = judged_lanes(m, phy.lanes);
        for (i, dbm) in m.rx_power_dbm.iter().flatten().enumerate().take(judged) {
            let Some(dbm) = dbm else { continue };
            if *dbm < NEAR_DARK_DBM {
                let lane = i as u8 + 1;
                let what = if *dbm <= DARK_DBM { "no light".to_string() } else { format!("{dbm:.2} dBm") };
                let raised: Vec<String> = m.flags.iter().filter(|f| f.lane == Some(lane)).map(flag_words).collect();
                let raised = if raised.is_empty() { String::new() } else { format!(" ({} raised by the module)", raised.join(", ")) };
                problems.push((Severity::Error, format!("lane {lane} Rx power {what}: the lane is near dark{raised}")));
                lanes_named.push((Figure::RxPower, lane));
            }
        }
    }
    for f in &m.flags {
        if f.lane.is_some_and(|l| lanes_named.contains(&(f.figure, l)) || (f.figure == Figure::RxLos && lanes_named.contains(&(Figure::RxPower, l))))
        {
            continue;
        }
        let severity = if f.level == FlagLevel::Alarm { Severity::Error } else { Severity::Warning };
        let place = f.lane.map_or(String::new(), |l| format!("lane {l} "));
        problems.push((severity, format!("{place}{} raised by the module", flag_words(f))));
    }
    if let Some(t) = m.temperature_c {
        let flagged = m.flags.iter().any(|f| f.figure == Figure::Temperature);
        if t > MODULE_HOT_C && !flagged {
            problems.push((Severity::Warning, format!("module at {t:.1} °C, above the {MODULE_HOT_C:.0} °C it is rated for")));
        }
    }
    let observed = observed_module(m, &name);
    match problems.iter().map(|p| p.0).min() {
        None => sheet.pass(FindingId::PhyModule, s, observed, None),
        Some(severity) => {
            let message = format!("{name}: {}", problems.into_iter().map(|p| p.1).collect::<Vec<_>>().join("; "));
            sheet.fail(
                FindingId::PhyModule,
                s,
                observed,
                None,
                severity,
                message,
                format!(
                    "a dark or weak lane: clean the fiber end faces at both ends and reseat the module, check the far end's Tx \
                     on that lane, then replace the cable or optic; over temperature: airflow and the cage; `ethtool -m \
                     {netdev}` shows every figure"
                ),
            );
        }
    }
}

/// `Rx power low alarm`, `temperature high warning`, `Rx loss of signal`.
fn flag_words(f: &crate::probe::phy::module::ModuleFlag) -> String {
    if f.figure == Figure::RxLos {
        return f.figure.words().to_string();
    }
    let direction = match f.direction {
        Some(Direction::High) => " high",
        Some(Direction::Low) => " low",
        None => "",
    };
    let level = if f.level == FlagLevel::Alarm { "alarm" } else { "warning" };
    format!("{}{direction} {level}", f.figure.words())
}

/// How many lanes' Rx power to judge. A CMIS module reports 8 lanes whatever it uses: a 400G
/// SR4 module reads no light on lanes 5-8, which is not a fault. So: the lanes the link runs
/// on when known; else every lane but a tail of lanes with no light at all that no flag of
/// the module names (the module's own flags still speak for any lane).
fn judged_lanes(m: &Module, link_lanes: Option<u32>) -> usize {
    let rx = m.rx_power_dbm.as_deref().unwrap_or(&[]);
    if let Some(n) = link_lanes.filter(|&n| n > 0) {
        return (n as usize).min(rx.len());
    }
    let mut end = rx.len();
    while end > 1 && rx[end - 1].is_some_and(|d| d <= DARK_DBM) && !m.flags.iter().any(|f| f.lane == Some(end as u8)) {
        end -= 1;
    }
    if rx[..end].iter().all(|d| d.is_none_or(|d| d <= DARK_DBM)) {
        rx.len()
    } else {
        end
    }
}

fn identity(m: &Module) -> String {
    let parts: Vec<&str> = [m.kind.as_deref(), m.vendor.as_deref(), m.part.as_deref()].into_iter().flatten().collect();
    if parts.is_empty() {
        "module".into()
    } else {
        format!("module {}", parts.join(" "))
    }
}

fn observed_module(m: &Module, name: &str) -> String {
    let mut out = name.to_string();
    if m.media == Some(Media::Copper) {
        out.push_str(", copper");
    }
    if let Some(t) = m.temperature_c {
        out.push_str(&format!(", {t:.1} °C"));
    }
    if let Some(rx) = &m.rx_power_dbm {
        let list: Vec<String> = rx.iter().map(|v| v.map_or("?".into(), |d| format!("{d:.1}"))).collect();
        out.push_str(&format!(", Rx {} dBm", list.join("/")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port_with(module: Module) -> Port {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roce-cx7-phy-clean");
        let mut inv = crate::probe::inventory(&crate::probe::Source::Sysfs(root), None).unwrap();
        let mut port = inv.devices.remove(0).ports.remove(0);
        port.phy.as_mut().unwrap().module = Some(module);
        port
    }

    fn module_findings(port: &Port) -> Vec<crate::outcome::Finding> {
        let mut sheet = Sheet::default();
        run(port, "mlx5_0/1", &mut sheet);
        sheet.findings.into_iter().filter(|f| f.id == FindingId::PhyModule).collect()
    }

    #[test]
    fn a_module_that_does_not_monitor_rx_power_is_not_a_dark_cable() {
        let dark = Module { media: Some(Media::Optical), rx_power_dbm: Some(vec![Some(DARK_DBM); 4]), ..Module::default() };
        assert!(module_findings(&port_with(dark.clone())).is_empty(), "all lanes at 0 mW and no flag: not monitored");
        // One lane dark among lit ones is named; so is a lane the module flags.
        let one = Module { rx_power_dbm: Some(vec![Some(-1.0), Some(-1.2), Some(-20.0), Some(-1.1)]), ..dark.clone() };
        let f = module_findings(&port_with(one));
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("lane 3 Rx power -20.00 dBm"), "{}", f[0].message);
        let flagged = Module {
            flags: vec![crate::probe::phy::module::ModuleFlag { figure: Figure::RxLos, level: FlagLevel::Alarm, direction: None, lane: Some(2) }],
            ..dark
        };
        let f = module_findings(&port_with(flagged));
        assert!(f[0].message.contains("lane 1 Rx power no light") && f[0].message.contains("lane 2"), "{}", f[0].message);
    }

    #[test]
    fn fec_off_on_pam4_lanes_is_an_error_and_on_25g_copper_an_info() {
        let mut port = port_with(Module::default());
        port.phy.as_mut().unwrap().fec = Some(FecMode::Off);
        let mut sheet = Sheet::default();
        run(&port, "mlx5_0/1", &mut sheet);
        let f = sheet.findings.iter().find(|f| f.id == FindingId::PhyFec).unwrap();
        assert_eq!(f.severity, Severity::Error, "100G lanes are PAM4: {f:?}");
        let phy = port.phy.as_mut().unwrap();
        phy.lane_gbps = Some(25.0);
        let mut sheet = Sheet::default();
        run(&port, "mlx5_0/1", &mut sheet);
        assert_eq!(sheet.findings.iter().find(|f| f.id == FindingId::PhyFec).unwrap().severity, Severity::Info);
    }

    /// An HDR port's PortExtendedSpeedsCounters, read by `check` over MADs (fabric::local).
    #[test]
    fn an_infiniband_ports_fec_counters_are_judged_and_its_weak_lane_named() {
        use crate::mad::attributes::ExtSpeedsCounters;
        let mut port = port_with(Module::default());
        port.link_layer = LinkLayer::InfiniBand;
        port.netdev = None;
        let c = ExtSpeedsCounters {
            rs_fec: true,
            lane_corrected: vec![10, 9000, 12, 11, 0, 0, 0, 0, 0, 0, 0, 0],
            uncorrectable_blocks: 3,
            ..ExtSpeedsCounters::default()
        };
        port.phy = Some(crate::probe::local_mads::ib_phy(&c, crate::port::Speed::Hdr, crate::port::Width::X4));
        let mut sheet = Sheet::default();
        run(&port, "mlx5_0/1", &mut sheet);
        let find = |id: FindingId| sheet.findings.iter().find(|f| f.id == id).unwrap_or_else(|| panic!("no {id}: {:#?}", sheet.findings));
        let fec = find(FindingId::PhyFec);
        assert_eq!(fec.severity, Severity::Warning, "a lifetime total is a warning: {fec:?}");
        assert!(fec.message.contains("3 FEC codewords") && fec.message.contains("lifetime"), "{}", fec.message);
        let ber = find(FindingId::PhyBer);
        assert_eq!(ber.severity, Severity::Info);
        assert!(ber.message.contains("lane 2 carries"), "{}", ber.message);
        assert!(!ber.remedy.contains("ethtool"), "no netdev on InfiniBand: {}", ber.remedy);
        let module = sheet.checks.iter().find(|c| c.id == FindingId::PhyModule).unwrap();
        assert!(module.observed.contains("mlxlink"), "{module:?}");
    }

    #[test]
    fn a_lane_with_most_errors_is_named_only_above_the_noise() {
        assert_eq!(busiest_lane(&[10, 20, 900, 30]), None, "960 errors in all: noise");
        let (lane, share) = busiest_lane(&[100, 200, 9000, 300]).unwrap();
        assert_eq!(lane, 3, "numbered from 1, as the module's lanes");
        assert!(share > 0.9);
        assert_eq!(busiest_lane(&[3000, 3000, 3000, 3000]), None);
        assert_eq!(busiest_lane(&[5000]), None, "one lane has every error by definition");
    }
}
