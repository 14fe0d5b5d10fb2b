//! `pair --rails` in words (issue #57): which rows of the table a bad rail's findings name (the
//! `<- bad rail` mark goes on those, not on the rail's healthy rows), and the findings said one
//! line per cause with the rails it holds for and a count, each line naming its rail. Pure.

use super::doc::{RailRecord, Row};
use crate::outcome::{Finding, Severity, Subject};
use std::fmt::Write;

/// The rows to mark: of each bad rail, those an error finding names (its test, direction and
/// size, as `judge` and the pair verdict word them) or that failed; a bad rail none of whose rows is named has all marked.
pub fn bad_rows(rails: &[RailRecord], bad: &[usize], findings: &[Finding], subject: impl Fn(&RailRecord) -> Subject) -> Vec<Row> {
    let mut out = Vec::new();
    for r in rails.iter().filter(|r| bad.contains(&r.rail)) {
        let own: Vec<&Finding> = findings.iter().filter(|f| f.severity == Severity::Error && f.subject == subject(r)).collect();
        let rows: Vec<Row> = r
            .results
            .iter()
            .filter(|t| {
                // `rail N write_bw a->b 65536 B: ...` (siblings) or `write_bw a->b at 65536 bytes: ...`.
                let names = |m: &str| {
                    m.contains(t.test.name())
                        && m.contains(&t.direction.to_string())
                        && (m.contains(&format!(" {} B", t.size)) || m.contains(&format!(" {} bytes", t.size)))
                };
                t.error.is_some() || own.iter().any(|f| names(&f.message))
            })
            .map(|t| (r.rail, t.test, t.direction, t.size))
            .collect();
        if rows.is_empty() {
            out.extend(r.results.iter().map(|t| (r.rail, t.test, t.direction, t.size)));
        } else {
            out.extend(rows);
        }
    }
    out
}

/// The findings, one line per cause (same severity, id, message and remedy) with the rails it
/// holds for and how many; a message that does not name its rail is prefixed with it.
pub fn finding_lines(findings: &[&Finding], rail_of: impl Fn(&Subject) -> Option<usize>) -> String {
    let mut groups: Vec<(&Finding, Vec<usize>, usize)> = Vec::new();
    for f in findings {
        match groups.iter_mut().find(|(g, _, _)| g.severity == f.severity && g.id == f.id && g.message == f.message && g.remedy == f.remedy) {
            Some((_, rails, count)) => {
                *count += 1;
                rails.extend(rail_of(&f.subject));
            }
            None => groups.push((f, rail_of(&f.subject).into_iter().collect(), 1)),
        }
    }
    let mut out = String::new();
    for (f, rails, count) in groups {
        let message = crate::sanitise::one_line(&f.message);
        let named = message.starts_with("rail ");
        let said = match (rails.as_slice(), count) {
            ([], 1) => message.to_string(),
            ([rail], 1) if !named => format!("rail {rail}: {message}"),
            (_, 1) => message.to_string(),
            ([], n) => format!("{message} ({n}x)"),
            (list, n) => {
                let list: Vec<String> = list.iter().map(usize::to_string).collect();
                format!("rails {} ({n}x): {message}", list.join(", "))
            }
        };
        let _ = writeln!(out, "{:<7} {:<22} {said}", format!("{:?}", f.severity).to_uppercase(), f.id);
        let _ = writeln!(out, "        what to do: {}", f.remedy);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::FindingId;

    fn finding(rail: usize, message: &str) -> Finding {
        Finding::new(FindingId::PairRail, Severity::Error, format!("rail{rail}"), message, "check the cable")
    }

    /// Issue #57: one slow end gave 9 identical ERRORs without the rail; now one line with the
    /// rails and the count.
    #[test]
    fn one_line_per_cause_naming_the_rails() {
        let same: Vec<Finding> = (0..9).map(|r| finding(r, "pair.bw below 90% of the link")).collect();
        let one = finding(3, "rail 3 write_bw a->b 65536 B: 10 Gb/s");
        let lone = finding(5, "latency above its siblings'");
        let all: Vec<&Finding> = same.iter().chain([&one, &lone]).collect();
        let rail_of = |s: &Subject| s.to_string().strip_prefix("rail").and_then(|n| n.parse().ok());
        let text = finding_lines(&all, rail_of);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("what to do")).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].ends_with("rails 0, 1, 2, 3, 4, 5, 6, 7, 8 (9x): pair.bw below 90% of the link"), "{text}");
        assert!(lines[1].ends_with("rail 3 write_bw a->b 65536 B: 10 Gb/s"), "{text}");
        assert!(lines[2].ends_with("rail 5: latency above its siblings'"), "{text}");
    }
}
