//! `fabric --ibdiagnet DIR`: adaptive routing, SHARP aggregation nodes and congestion control
//! judged from a captured ibdiagnet output directory (what ibsim cannot simulate). Pure over
//! the files' text; [`load`] is the one bounded reader.
//!
//! Formats (NVIDIA, "ibdiagnet InfiniBand Fabric Diagnostic Tool User Manual", v2.8-v2.25,
//! docs.nvidia.com/networking/display/ibdiagnetusermanualv280, pages "Congestion Control",
//! "Routers", "Alias GUIDs", "NVIDIA SHARP Support", "ibdiagnet Dump Files"):
//! `ibdiagnet2.db_csv` is a sequence of sections, each `START_<NAME>`, a header line of
//! comma-separated column names, one line per record, `END_<NAME>`. Columns are read by name:
//! - `NODES`: `NodeDesc`, `NodeType` (1 CA, 2 switch), `NodeGUID`;
//! - `LINKS`: `NodeGuid1`, `PortNum1`, `NodeGuid2`, `PortNum2` (an aggregation node hangs off
//!   its switch by such a link);
//! - `AR_INFO`: `NodeGUID`, `e` (AR enabled on the switch);
//! - `CC_SWITCH_GENERAL_SETTINGS`: `NodeGUID`, `aqs_time`, `aqs_weight`, `en`,
//!   `cap_total_buffer_size` (as the manual's Congestion Control example prints them).
//!
//! `ibdiagnet2.sharp_an_info` (`--sharp`) lists the aggregation nodes: every `guid:0x...` /
//! `GUID=0x...` on a line names one. A NODES record described `... Aggregation Node` is one too.

use crate::outcome::{Finding, FindingId, Severity};
use crate::sanitise::one_line;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The files read, and the most of each that is read.
pub const DB_CSV: &str = "ibdiagnet2.db_csv";
pub const SHARP_AN_INFO: &str = "ibdiagnet2.sharp_an_info";
pub const MAX_BYTES: u64 = 512 << 20;

/// What a capture says, by node GUID.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Capture {
    /// Switch GUID -> description.
    pub switches: BTreeMap<u64, String>,
    /// Aggregation nodes (GUIDs), and the switch each is cabled to (when LINKS says).
    pub aggregation_nodes: BTreeMap<u64, Option<u64>>,
    /// Whether a SHARP dump was in the capture at all.
    pub sharp_read: bool,
    /// Switch GUID -> AR enabled (`AR_INFO.e`); None when the section is absent.
    pub ar: Option<BTreeMap<u64, bool>>,
    /// Switch GUID -> its CC general settings (column, value), in header order.
    pub cc: Option<BTreeMap<u64, Vec<(String, String)>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("--ibdiagnet {dir}: cannot read {file}: {why}")]
    Unreadable { dir: String, file: &'static str, why: String },
    #[error("--ibdiagnet {dir}: {file} line {line}: {why}")]
    Malformed { dir: String, file: &'static str, line: usize, why: String },
}

pub const REMEDY: &str = "give the output directory of `ibdiagnet --sharp --congestion_control -r` (default /var/tmp/ibdiagnet2), \
                          which holds ibdiagnet2.db_csv";

/// Reads a capture directory (each file bounded, regular files only).
pub fn load(dir: &Path) -> Result<Capture, CaptureError> {
    let shown = one_line(&dir.display().to_string()).into_owned();
    let read = |file: &'static str| -> Result<Option<String>, CaptureError> {
        match crate::sys::fs::read_text(&dir.join(file), MAX_BYTES) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(CaptureError::Unreadable { dir: shown.clone(), file, why: e.reason() }),
        }
    };
    let db = read(DB_CSV)?.ok_or_else(|| CaptureError::Unreadable { dir: shown.clone(), file: DB_CSV, why: "no such file".into() })?;
    let an_info = read(SHARP_AN_INFO)?;
    parse(&db, an_info.as_deref()).map_err(|(line, why)| CaptureError::Malformed { dir: shown, file: DB_CSV, line, why })
}

/// One db_csv section: its header and records (each as column -> value), with line numbers.
type Section = (Vec<String>, Vec<(usize, Vec<String>)>);

fn sections(text: &str) -> Result<BTreeMap<String, Section>, (usize, String)> {
    let mut out: BTreeMap<String, Section> = BTreeMap::new();
    // The section being read: its name, header (once read) and records.
    type Open = (String, Option<Vec<String>>, Vec<(usize, Vec<String>)>);
    let mut open: Option<Open> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(name) = line.strip_prefix("START_") {
            if let Some((other, ..)) = &open {
                return Err((i + 1, format!("START_{name} inside section {other} (no END_{other})")));
            }
            open = Some((name.to_string(), None, Vec::new()));
        } else if let Some(name) = line.strip_prefix("END_") {
            match open.take() {
                Some((open_name, header, rows)) if open_name == name => {
                    out.insert(open_name, (header.unwrap_or_default(), rows));
                }
                _ => return Err((i + 1, format!("END_{name} without its START_{name}"))),
            }
        } else if let Some((_, header, rows)) = open.as_mut() {
            if line.is_empty() {
                continue;
            }
            let fields: Vec<String> = line.split(',').map(|f| f.trim().trim_matches('"').to_string()).collect();
            match header {
                None => *header = Some(fields),
                Some(_) => rows.push((i + 1, fields)),
            }
        }
    }
    Ok(out)
}

fn guid(text: &str) -> Option<u64> {
    u64::from_str_radix(text.trim().trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
}

/// Parses `ibdiagnet2.db_csv` (and `sharp_an_info` when there); errors are (line, why).
pub fn parse(db_csv: &str, sharp_an_info: Option<&str>) -> Result<Capture, (usize, String)> {
    let all = sections(db_csv)?;
    let mut capture = Capture::default();
    // Column `name` of a record, or a malformed-line error.
    let column = |(header, _): &Section, name: &str| header.iter().position(|h| h == name);
    let field = |row: &(usize, Vec<String>), at: Option<usize>, name: &str| -> Result<String, (usize, String)> {
        at.and_then(|i| row.1.get(i).cloned()).ok_or_else(|| (row.0, format!("no {name} field")))
    };
    let mut descriptions: BTreeMap<u64, String> = BTreeMap::new();
    if let Some(nodes) = all.get("NODES") {
        let (desc, kind, g) = (column(nodes, "NodeDesc"), column(nodes, "NodeType"), column(nodes, "NodeGUID"));
        for row in &nodes.1 {
            let id = guid(&field(row, g, "NodeGUID")?).ok_or((row.0, "NodeGUID is not hex".to_string()))?;
            let description = one_line(&field(row, desc, "NodeDesc")?).into_owned();
            if field(row, kind, "NodeType")? == "2" {
                capture.switches.insert(id, description.clone());
            } else if crate::mad::attributes::is_aggregation_node(&description) {
                capture.aggregation_nodes.insert(id, None);
            }
            descriptions.insert(id, description);
        }
    }
    if let Some(text) = sharp_an_info {
        capture.sharp_read = true;
        for line in text.lines() {
            let lower = line.to_ascii_lowercase();
            for (at, _) in lower.match_indices("guid") {
                let rest = lower[at + 4..].trim_start_matches([':', '=', ' ']);
                if let Some(hex) = rest.strip_prefix("0x") {
                    let digits: String = hex.chars().take_while(char::is_ascii_hexdigit).collect();
                    if let Ok(g) = u64::from_str_radix(&digits, 16) {
                        capture.aggregation_nodes.entry(g).or_insert(None);
                    }
                }
            }
        }
    }
    capture.sharp_read |= !capture.aggregation_nodes.is_empty();
    if let Some(links) = all.get("LINKS") {
        let (g1, g2) = (column(links, "NodeGuid1"), column(links, "NodeGuid2"));
        for row in &links.1 {
            let (a, b) = (guid(&field(row, g1, "NodeGuid1")?), guid(&field(row, g2, "NodeGuid2")?));
            if let (Some(a), Some(b)) = (a, b) {
                for (an, sw) in [(a, b), (b, a)] {
                    if capture.switches.contains_key(&sw) {
                        if let Some(slot) = capture.aggregation_nodes.get_mut(&an) {
                            *slot = Some(sw);
                        }
                    }
                }
            }
        }
    }
    if let Some(ar) = all.get("AR_INFO") {
        let (g, e) = (column(ar, "NodeGUID"), column(ar, "e"));
        let mut map = BTreeMap::new();
        for row in &ar.1 {
            let id = guid(&field(row, g, "NodeGUID")?).ok_or((row.0, "NodeGUID is not hex".to_string()))?;
            map.insert(id, field(row, e, "e")? != "0");
        }
        capture.ar = Some(map);
    }
    if let Some(cc) = all.get("CC_SWITCH_GENERAL_SETTINGS") {
        let g = column(cc, "NodeGUID");
        let mut map = BTreeMap::new();
        for row in &cc.1 {
            let id = guid(&field(row, g, "NodeGUID")?).ok_or((row.0, "NodeGUID is not hex".to_string()))?;
            let settings =
                cc.0.iter()
                    .zip(&row.1)
                    .filter(|(h, _)| h.as_str() != "NodeGUID")
                    .map(|(h, v)| (one_line(h).into_owned(), one_line(v).into_owned()))
                    .collect();
            map.insert(id, settings);
        }
        capture.cc = Some(map);
    }
    Ok(capture)
}

fn finding(id: FindingId, severity: Severity, subject: String, message: String, remedy: &str) -> Finding {
    Finding { id, severity, subject: subject.into(), message, remedy: remedy.into(), about: None }
}

/// `fabric.ar`, `fabric.sharp`, `fabric.cc` (and `fabric.route`'s "adaptive routing state
/// unknown") from a capture.
pub fn judge(c: &Capture) -> Vec<Finding> {
    let name = |g: &u64| c.switches.get(g).filter(|d| !d.is_empty()).cloned().unwrap_or_else(|| format!("0x{g:016x}"));
    let mut out = Vec::new();
    // Adaptive routing: on every switch of the tree.
    match &c.ar {
        None => out.push(finding(
            FindingId::FabricRoute,
            Severity::Info,
            "adaptive routing".into(),
            "adaptive routing state unknown: the capture has no AR_INFO section, so where AR is on the forwarding tables walked are only \
             the fallback"
                .into(),
            "capture with `ibdiagnet -r` (its AR_INFO section says which switches route adaptively)",
        )),
        Some(ar) => {
            let unknown: Vec<String> = c.switches.keys().filter(|g| !ar.contains_key(g)).map(name).collect();
            if !unknown.is_empty() {
                out.push(finding(
                    FindingId::FabricRoute,
                    Severity::Info,
                    unknown.join(", "),
                    format!("adaptive routing state unknown on {}: not in the capture's AR_INFO section", unknown.join(", ")),
                    "these switches did not answer ibdiagnet's AR queries (no AR support, or unreachable): check their firmware",
                ));
            }
            let off: Vec<String> = ar.iter().filter(|(_, on)| !**on).map(|(g, _)| name(g)).collect();
            let on = ar.values().filter(|on| **on).count();
            if on > 0 {
                for switch in &off {
                    out.push(finding(
                        FindingId::FabricAr,
                        Severity::Error,
                        switch.clone(),
                        format!("adaptive routing is off on {switch} while {on} other switches route adaptively: its flows keep the static route"),
                        "enable AR on it: OpenSM `ar_mode`/`routing_engine ar_updn` (NVIDIA UFM/MLNX OpenSM), check the switch's AR license \
                         and firmware, then resweep",
                    ));
                }
            } else if !off.is_empty() {
                out.push(finding(
                    FindingId::FabricAr,
                    Severity::Warning,
                    "adaptive routing".into(),
                    format!("adaptive routing is off on every switch ({})", off.len()),
                    "if the fabric is meant to route adaptively, enable AR in the SM (`routing_engine ar_updn`) and resweep",
                ));
            }
        }
    }
    // SHARP: one aggregation node per switch.
    if c.sharp_read {
        let mut per_switch: BTreeMap<u64, BTreeSet<u64>> = c.switches.keys().map(|g| (*g, BTreeSet::new())).collect();
        for (an, sw) in &c.aggregation_nodes {
            if let Some(set) = sw.and_then(|s| per_switch.get_mut(&s)) {
                set.insert(*an);
            }
        }
        for (sw, ans) in &per_switch {
            let (severity, message) = match ans.len() {
                1 => continue,
                0 => (Severity::Error, format!("{} has no SHARP aggregation node: collectives through it are not offloaded", name(sw))),
                n => (Severity::Error, format!("{} has {n} SHARP aggregation nodes; a switch has one", name(sw))),
            };
            out.push(finding(
                FindingId::FabricSharp,
                severity,
                name(sw),
                message,
                "check the switch's SHARP license and firmware, and that the aggregation manager (sharp_am) sees it; `ibdiagnet --sharp` lists \
                 the aggregation nodes",
            ));
        }
    }
    // Congestion control: the same settings on every switch.
    if let Some(cc) = &c.cc {
        let mut counts: BTreeMap<&Vec<(String, String)>, usize> = BTreeMap::new();
        for settings in cc.values() {
            *counts.entry(settings).or_default() += 1;
        }
        if let Some((common, _)) = counts.iter().max_by_key(|(_, n)| **n) {
            for (g, settings) in cc.iter().filter(|(_, s)| s != common) {
                let differ: Vec<String> = settings
                    .iter()
                    .zip(common.iter())
                    .filter(|(a, b)| a.1 != b.1)
                    .map(|(a, b)| format!("{} {} (others {})", a.0, a.1, b.1))
                    .collect();
                out.push(finding(
                    FindingId::FabricCc,
                    Severity::Error,
                    name(g),
                    format!("{}'s congestion control settings differ from the other switches': {}", name(g), differ.join(", ")),
                    "set the same congestion control on every switch (the SM's CC configuration, `congestion_control` in opensm.conf) and \
                     resweep; unequal settings mark and throttle flows differently on each hop",
                ));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "ibdiagnet/tests.rs"]
mod tests;
