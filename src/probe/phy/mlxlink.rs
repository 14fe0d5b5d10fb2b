//! The bit-error figures NVIDIA's `mlxlink -d BDF -c --json` (MFT, or mstflint's `mstlink`)
//! computes in the adapter, where they are installed: raw (pre-FEC) and effective (post-FEC)
//! BER since the counters were last cleared, effective errors and raw errors per lane. Never
//! required: without the tool (or root), a port keeps what ethtool or the MADs said. Live, a
//! bounded child per PCI function; in a bundle, `tools/mlxlink/BDF.json`
//! (`fabcheck bundle DIR`). The parser is pure and tolerant: the JSON has moved
//! between tool versions (per-lane figures as `"0,0,0,0"`, as a list, or as `{"values": [...]}`),
//! and a figure it lacks is "not readable", never zero.
//!
//! Two post-FEC figures: `Symbol Errors`/`Symbol BER` (InfiniBand only, after FEC and the
//! physical-layer retransmission: what applications see on HDR and faster) and `Effective
//! Physical Errors`/`BER` (after FEC: the application-visible figure on EDR and slower, and on
//! Ethernet). The port's speed chooses which fills `phy` ([`BerFigure::for_port`]), and `phy`
//! says which it holds.

use super::fec::FecMode;
use super::{BerFigure, Phy};
use serde_json::Value;
use std::time::Duration;

/// `mlxlink -c` reads the port's registers over the PCI function: a second or two, longer on
/// a busy adapter; a wedged one must not hold `check`.
pub(crate) const TOOL_LIMIT: Duration = Duration::from_secs(15);
/// Largest report kept (a full `mlxlink --json` is a few KiB).
pub(crate) const REPORT_CAP: u64 = 256 << 10;
/// The section of the report that holds the counters.
const SECTION: &str = "Physical Counters and BER Info";
/// `mlxlink` writes a BER it cannot resolve (no errors yet) with an exponent this large or
/// larger (`15E-255`): zero for every purpose here.
const UNDERFLOW_EXPONENT: i32 = 40;

/// What `mlxlink` says of one port's bit errors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkBer {
    pub raw_ber: Option<f64>,
    pub effective_ber: Option<f64>,
    pub effective_errors: Option<u64>,
    /// `Symbol Errors` / `Symbol BER` (InfiniBand; HDR and faster's application-visible figure).
    pub symbol_errors: Option<u64>,
    pub symbol_ber: Option<f64>,
    pub lane_errors: Vec<u64>,
    /// The FEC the link runs, from `Operational Info`'s `FEC` (`Standard_RS-FEC - (544,514)`,
    /// `Firecode_FEC`, `No_FEC`).
    pub fec: Option<FecMode>,
}

/// The counters section of a `mlxlink --json` report, wherever the version puts it
/// (`result.output` today); `None` when the text is not such a report.
pub fn parse_json(text: &str) -> Option<LinkBer> {
    let doc: Value = serde_json::from_str(text).ok()?;
    let section = find_section(&doc, 0, SECTION)?;
    let field = |name: &str| section.get(name);
    let fec = find_section(&doc, 0, "Operational Info").and_then(|o| o.get("FEC")).and_then(Value::as_str).and_then(fec_mode);
    let ber = LinkBer {
        fec,
        raw_ber: field("Raw Physical BER").and_then(ber_value),
        effective_ber: field("Effective Physical BER").and_then(ber_value),
        effective_errors: field("Effective Physical Errors").and_then(count),
        symbol_errors: field("Symbol Errors").and_then(count),
        symbol_ber: field("Symbol BER").and_then(ber_value),
        lane_errors: field("Raw Physical Errors Per Lane").map(lanes).unwrap_or_default(),
    };
    (ber != LinkBer::default()).then_some(ber)
}

fn find_section<'a>(v: &'a Value, depth: u32, name: &str) -> Option<&'a serde_json::Map<String, Value>> {
    let object = v.as_object()?;
    if let Some(section) = object.get(name).and_then(Value::as_object) {
        return Some(section);
    }
    if depth >= 4 {
        return None;
    }
    object.values().find_map(|child| find_section(child, depth + 1, name))
}

/// mlxlink's FEC words (its `Operational Info` `FEC` line, mlxlink's user manual "FEC"
/// modes): `Standard_RS-FEC - (544,514)`, `RS-FEC (544,514)`, `Interleaved_Standard_RS-FEC
/// (544,514)`, `Standard_RS-FEC - (546,516)+PLR`, `Standard LL RS-FEC - RS(271,257)` and
/// `(272,257+1)`, `RS-FEC (528,514)`, `Firecode_FEC`, `No_FEC`; anything else is not read.
fn fec_mode(text: &str) -> Option<FecMode> {
    let t = text.to_ascii_lowercase();
    Some(if t.contains("546") || t.contains("plr") {
        FecMode::Rs546Plr
    } else if t.contains("interleaved") {
        FecMode::Interleaved
    } else if t.contains("544") {
        FecMode::Rs544
    } else if t.contains("272") || t.contains("271") || t.contains("ll rs") || t.contains("ll_rs") || t.contains("ll-fec") {
        FecMode::Llrs
    } else if t.contains("528") {
        FecMode::Rs528
    } else if t.contains("firecode") || t.contains("base-r") || t.contains("base_r") {
        FecMode::BaseR
    } else if t.contains("no_fec") || t.contains("no fec") || t.contains("no-fec") {
        FecMode::Off
    } else {
        return None;
    })
}

/// `1E-8`, `15E-255` (underflow: 0), `2.4e-05`, `0`; `N/A` and anything else: not readable.
fn ber_value(v: &Value) -> Option<f64> {
    let text = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => return n.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
        _ => return None,
    };
    let exponent = match text.split_once(['E', 'e']) {
        Some((_, e)) => e.trim().parse::<i32>().ok()?,
        None => 0,
    };
    let value = text.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)?;
    Some(if -exponent >= UNDERFLOW_EXPONENT { 0.0 } else { value })
}

fn count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// `"0,0,12,0"`, `["0","0","12","0"]` or `{"values": [...]}`; an entry that is not a count
/// makes the whole list unreadable (a lane's place must not shift).
fn lanes(v: &Value) -> Vec<u64> {
    let items: Vec<Value> = match v {
        Value::String(s) => s.split(',').map(|x| Value::String(x.trim().to_string())).collect(),
        Value::Array(a) => a.clone(),
        Value::Object(o) => match o.get("values") {
            Some(Value::Array(a)) => a.clone(),
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    items.iter().map(count).collect::<Option<Vec<u64>>>().unwrap_or_default()
}

/// What `mlxlink` adds to a port's `phy`: only the figures not known already. `applies`: the
/// post-FEC figure the port's speed makes the application-visible one; where the report lacks
/// it (an MFT that prints no `Symbol BER`), the other is taken and `phy` says which it is.
pub fn fill(phy: &mut Phy, ber: &LinkBer, applies: BerFigure) {
    phy.fec = phy.fec.or(ber.fec);
    phy.ber_raw = phy.ber_raw.or(ber.raw_ber);
    let symbol = ber.symbol_ber.is_some() || ber.symbol_errors.is_some();
    let (rate, errors, figure) = match applies {
        BerFigure::Symbol if symbol => (ber.symbol_ber, ber.symbol_errors, BerFigure::Symbol),
        _ => (ber.effective_ber, ber.effective_errors, BerFigure::Effective),
    };
    if phy.ber_effective.is_none() && phy.symbol_errors.is_none() && (rate.is_some() || errors.is_some()) {
        phy.ber_effective_figure = Some(figure);
    }
    phy.ber_effective = phy.ber_effective.or(rate);
    phy.symbol_errors = phy.symbol_errors.or(errors);
    if phy.lane_errors.is_empty() {
        phy.lane_errors = ber.lane_errors.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of MFT 4.2x `mlxlink -d 0000:17:00.0 -c --json` on a ConnectX-7 (trimmed to
    /// the sections read).
    const MFT: &str = r#"{
      "result": {
        "output": {
          "Operational Info": {"State": "Active", "Physical state": "LinkUp", "Speed": "IB-NDR", "Width": "4x", "FEC": "Standard_RS-FEC - (544,514)"},
          "Physical Counters and BER Info": {
            "Time Since Last Clear [Min]": "1440.2",
            "Effective Physical Errors": "0",
            "Effective Physical BER": "15E-255",
            "Raw Physical Errors Per Lane": "12,1834567,20,9",
            "Raw Physical BER": "3E-9",
            "Link Down Counter": "1",
            "Link Error Recovery Counter": "0"
          }
        }
      },
      "status": {"code": 0, "message": "Success"}
    }"#;

    #[test]
    fn an_mft_report_reads_as_bers_and_lanes() {
        let ber = parse_json(MFT).unwrap();
        assert_eq!(ber.raw_ber, Some(3e-9));
        assert_eq!(ber.effective_ber, Some(0.0), "15E-255 is mlxlink's way of saying none");
        assert_eq!(ber.effective_errors, Some(0));
        assert_eq!(ber.lane_errors, [12, 1_834_567, 20, 9]);
        assert_eq!(ber.fec, Some(FecMode::Rs544));
        for (words, mode) in [
            ("Firecode_FEC", Some(FecMode::BaseR)),
            ("No_FEC", Some(FecMode::Off)),
            ("Standard LL RS-FEC - (272,257+1)", Some(FecMode::Llrs)),
            ("Standard LL RS-FEC - RS(271,257)", Some(FecMode::Llrs)),
            ("Standard_RS-FEC - (546,516)+PLR", Some(FecMode::Rs546Plr)),
            ("Interleaved_Standard_RS-FEC (544,514)", Some(FecMode::Interleaved)),
            ("RS-FEC (544,514)", Some(FecMode::Rs544)),
            ("Reserved_FEC_17", None),
            ("Auto", None),
        ] {
            assert_eq!(fec_mode(words), mode, "{words}");
        }
    }

    #[test]
    fn other_versions_shapes_and_missing_figures_are_tolerated() {
        let list = r#"{"result":{"output":{"Physical Counters and BER Info":{"Raw Physical BER":"1e-8","Raw Physical Errors Per Lane":["0","0","5","0"]}}}}"#;
        let ber = parse_json(list).unwrap();
        assert_eq!((ber.raw_ber, ber.effective_ber, ber.lane_errors.as_slice()), (Some(1e-8), None, &[0, 0, 5, 0][..]));
        let values =
            r#"{"output":{"Physical Counters and BER Info":{"Raw Physical Errors Per Lane":{"values":[1,2]},"Effective Physical BER":"N/A"}}}"#;
        let ber = parse_json(values).unwrap();
        assert_eq!((ber.lane_errors.as_slice(), ber.effective_ber), (&[1, 2][..], None));
        // A lane that is not a count: no lane list at all, not a shifted one.
        let bad = r#"{"Physical Counters and BER Info":{"Raw Physical Errors Per Lane":"0,x,3","Raw Physical BER":"2E-10"}}"#;
        assert_eq!(parse_json(bad).unwrap().lane_errors, Vec::<u64>::new());
        for junk in ["", "not json", "{}", r#"{"status":{"code":3,"message":"-E- Failed to open device"}}"#, "[1,2]"] {
            assert_eq!(parse_json(junk), None, "{junk}");
        }
    }

    #[test]
    fn mlxlink_fills_only_what_is_unknown() {
        let ber = parse_json(MFT).unwrap();
        let mut known = Phy { ber_raw: Some(1e-7), lane_errors: vec![1, 2, 3, 4], ..Phy::default() };
        fill(&mut known, &ber, BerFigure::Effective);
        assert_eq!((known.ber_raw, known.lane_errors.as_slice()), (Some(1e-7), &[1, 2, 3, 4][..]), "ethtool's figures stand");
        assert_eq!((known.ber_effective, known.ber_effective_figure), (Some(0.0), Some(BerFigure::Effective)));
        let mut empty = Phy::default();
        fill(&mut empty, &ber, BerFigure::Effective);
        assert_eq!((empty.ber_raw, empty.symbol_errors, empty.lane_errors.len()), (Some(3e-9), Some(0), 4));
    }

    /// MFT 4.2x `mlxlink -d 0000:3b:00.0 -c --json` on a ConnectX-7 at 4X NDR (InfiniBand): the
    /// `Symbol` rows come first on InfiniBand (mstflint's `prepareBerInfo`), beside the
    /// effective ones and the per-lane raw BER of 7 nm adapters.
    const NDR: &str = r#"{"result":{"output":{
        "Operational Info":{"State":"Active","Physical state":"LinkUp","Speed":"IB-NDR","Width":"4x","FEC":"Standard_RS-FEC - (544,514)"},
        "Physical Counters and BER Info":{"Time Since Last Clear [Min]":"2880.0","Symbol Errors":"1874","Symbol BER":"4E-11",
          "Effective Physical Errors":"0","Effective Physical BER":"15E-255","Raw Physical Errors Per Lane":"30211,28873,31007,29554",
          "Raw Physical BER Per Lane":"2E-9,2E-9,2E-9,2E-9","Raw Physical BER":"2E-9","Link Down Counter":"0","Link Error Recovery Counter":"0"}}},
        "status":{"code":0,"message":"Success"}}"#;

    #[test]
    fn on_hdr_and_faster_the_symbol_figures_are_the_ones_taken() {
        use crate::port::{LinkLayer, Speed};
        let ber = parse_json(NDR).unwrap();
        assert_eq!((ber.symbol_errors, ber.symbol_ber, ber.effective_errors, ber.effective_ber), (Some(1874), Some(4e-11), Some(0), Some(0.0)));
        assert_eq!(BerFigure::for_port(LinkLayer::InfiniBand, Speed::Ndr), BerFigure::Symbol);
        assert_eq!(BerFigure::for_port(LinkLayer::InfiniBand, Speed::Hdr), BerFigure::Symbol);
        assert_eq!(BerFigure::for_port(LinkLayer::InfiniBand, Speed::Edr), BerFigure::Effective);
        assert_eq!(BerFigure::for_port(LinkLayer::Ethernet, Speed::Ndr), BerFigure::Effective, "mlxlink has no symbol rows on Ethernet");
        let mut ndr = Phy::default();
        fill(&mut ndr, &ber, BerFigure::Symbol);
        assert_eq!((ndr.ber_effective, ndr.symbol_errors, ndr.ber_effective_figure), (Some(4e-11), Some(1874), Some(BerFigure::Symbol)));
        // An EDR port, or a report without the symbol rows: the effective figures, said as such.
        let mut edr = Phy::default();
        fill(&mut edr, &ber, BerFigure::Effective);
        assert_eq!((edr.ber_effective, edr.symbol_errors, edr.ber_effective_figure), (Some(0.0), Some(0), Some(BerFigure::Effective)));
        let old = parse_json(MFT).unwrap();
        let mut hdr = Phy::default();
        fill(&mut hdr, &old, BerFigure::Symbol);
        assert_eq!(hdr.ber_effective_figure, Some(BerFigure::Effective));
    }
}
