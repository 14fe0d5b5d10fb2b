//! `--format oneline`: exactly one line, the verdict and the first error's subject and message,
//! what NHC and Slurm's HealthCheckProgram carry as a drain reason.

use super::sink::{Command, Sink};
use crate::outcome::{Finding, Measure, Severity, Verdict};

/// The first error and the first warning of a document, as fed.
pub struct OnelinePrinter {
    command: Command,
    error: Option<Finding>,
    warning: Option<Finding>,
}

impl OnelinePrinter {
    pub fn new(command: Command) -> OnelinePrinter {
        OnelinePrinter { command, error: None, warning: None }
    }

    /// The line, for the verdict as judged (after `--fail-on`).
    pub fn finish(self, verdict: Option<Verdict>) -> String {
        let command = self.command.name();
        let first = self.error.as_ref().or(self.warning.as_ref());
        let line = match (verdict, first) {
            (Some(Verdict::Fail), Some(f)) => format!("fabcheck {command} FAIL: {}: {}: {}", f.subject, f.id, f.message),
            (Some(Verdict::Fail), None) => format!("fabcheck {command} FAIL"),
            (_, Some(f)) if f.severity == Severity::Warning => format!("fabcheck {command} PASS (warning {}: {}: {})", f.subject, f.id, f.message),
            _ => format!("fabcheck {command} PASS"),
        };
        format!("{}\n", crate::sanitise::for_eval(&line))
    }
}

impl Sink for OnelinePrinter {
    fn finding(&mut self, f: &Finding) {
        let slot = match f.severity {
            Severity::Error => &mut self.error,
            Severity::Warning => &mut self.warning,
            Severity::Info => return,
        };
        if slot.is_none() {
            *slot = Some(f.clone());
        }
    }

    /// `compare`: the first regression is the line's subject (issue #57: its oneline said only FAIL).
    fn measure(&mut self, m: &Measure<'_>) {
        if let (&Measure::Change { subject, test, direction, size, regressed: true, regression: Some(words), .. }, None) = (m, &self.error) {
            let subject = format!("{subject} {test} {direction} {size}");
            self.error = Some(Finding::new(crate::outcome::FindingId::PairRegression, Severity::Error, subject, words, ""));
        }
    }
}

/// `line` (one line, ending in a newline) cut to at most `max` bytes before its newline
/// (`check --max-len`: node-problem-detector keeps 80). A line that does not fit ends at a clause
/// boundary (before a `;`, `:` or `,` that a space follows) when that keeps at least half of it,
/// else after a whole word, then `...`: never mid-word (issue #57: drain reasons were cut
/// mid-clause). One word longer than the room is cut at a character boundary.
pub fn cut(line: &str, max: usize) -> String {
    const ELLIPSIS: &str = "...";
    let text = line.strip_suffix('\n').unwrap_or(line);
    if text.len() <= max {
        return format!("{text}\n");
    }
    let room = max.saturating_sub(ELLIPSIS.len());
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    // The room and the character after it (a space there means `head` ends at a whole word).
    let reach = &text[..text[end..].chars().next().map_or(end, |c| end + c.len_utf8())];
    // A clause boundary: the punctuation, a space after it, both within the room.
    let clause = reach.match_indices([';', ':', ',']).map(|(i, _)| i).rfind(|&i| i < end && text[i + 1..].starts_with(' '));
    // A word boundary: a space at or just after the room's end.
    let word = reach.rfind(' ');
    let kept = match (clause, word) {
        (Some(c), _) if c * 2 >= room => &text[..c],
        (_, Some(w)) if w > 0 => &text[..w],
        _ => head,
    };
    let kept = kept.trim_end().trim_end_matches([';', ':', ',']);
    if max < ELLIPSIS.len() {
        return format!("{head}\n");
    }
    format!("{kept}{ELLIPSIS}\n")
}

/// `fabcheck COMMAND ERROR: CAUSE`, the one line `--format oneline` prints on exit 2 (the run
/// could not run), so a health check that reads stdout still has the cause.
pub fn error_line(command: &str, cause: &str) -> String {
    // A command line refused before any command was named is `fabcheck ERROR: ...`.
    let who = if command == "fabcheck" { "fabcheck".to_string() } else { format!("fabcheck {command}") };
    format!("{}\n", crate::sanitise::for_eval(&format!("{who} ERROR: {cause}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::FindingId;

    fn line(command: Command, verdict: Verdict, findings: &[Finding]) -> String {
        let mut p = OnelinePrinter::new(command);
        for f in findings {
            p.finding(f);
        }
        p.finish(Some(verdict))
    }

    #[test]
    fn verdict_and_first_error() {
        let findings = [
            Finding::new(FindingId::PcieBound, Severity::Warning, "mlx5_0", "w", "r"),
            Finding::new(FindingId::PortState, Severity::Error, "mlx5_0/1", "port INIT: no SM\nsecond line", "r"),
        ];
        assert_eq!(line(Command::Check, Verdict::Fail, &findings), "fabcheck check FAIL: mlx5_0/1: port.state: port INIT: no SM second line\n");
        assert_eq!(line(Command::Pair, Verdict::Pass, &[]), "fabcheck pair PASS\n");
        assert_eq!(line(Command::Check, Verdict::Pass, &findings[..1]), "fabcheck check PASS (warning mlx5_0: pcie.bound: w)\n");
        let suspect = Finding::new(FindingId::MeshSuspect, Severity::Error, "n3/mlx5_0", "slow", "");
        assert_eq!(line(Command::Mesh, Verdict::Fail, &[suspect]), "fabcheck mesh FAIL: n3/mlx5_0: mesh.suspect: slow\n");
    }

    #[test]
    fn a_cut_ends_at_a_clause_or_a_word_with_an_ellipsis() {
        let line = "fabcheck check FAIL: mlx5_0/1: port.state: port INIT: the physical link is up but no subnet manager answered; start opensm\n";
        // Fits: unchanged.
        assert_eq!(cut(line, 500), line);
        assert_eq!(cut(line, line.len() - 1), line);
        // Before the `;`: the clause boundary keeps more than half.
        let at = line.find(';').unwrap();
        assert_eq!(cut(line, at + 5), format!("{}...\n", &line[..at]));
        // node-problem-detector's 80: the last clause that keeps half (0.4 ended mid-word).
        assert_eq!(cut(line, 80), "fabcheck check FAIL: mlx5_0/1: port.state: port INIT...\n");
        // No clause boundary late enough: after a whole word.
        let words = "fabcheck check FAIL: x: port.state: the physical link is up but no subnet manager answered\n";
        assert_eq!(cut(words, 80), "fabcheck check FAIL: x: port.state: the physical link is up but no subnet...\n");
        for max in 12..line.len() - 1 {
            let out = cut(line, max);
            assert!(out.len() <= max + 1, "{max}: {out:?}");
            let body = out.trim_end().strip_suffix("...").unwrap_or_else(|| panic!("{max}: {out:?}"));
            let next = line[body.len()..].chars().next();
            assert!(matches!(next, Some(' ' | ';' | ':' | ',')), "{max}: mid-word {out:?}");
        }
        // One word longer than the room: cut at a character boundary, still one line.
        assert_eq!(cut("\u{e9}\u{e9}\u{e9}\u{e9}\n", 6), "\u{e9}...\n");
    }

    #[test]
    fn every_line_survives_a_shell_eval() {
        // NHC evaluates the drain reason: an apostrophe was a syntax error and no drain.
        let nasty = "GPU 0000:02:00.0's PCIe link \"x\" $(reboot) `id` \\ ${HOME}\u{1b}[31m\r";
        let finding = Finding::new(FindingId::PcieLink, Severity::Error, "0000:02:00.0", nasty, "");
        for line in [line(Command::Check, Verdict::Fail, &[finding]), error_line("check", nasty)] {
            assert!(!line.trim_end().chars().any(|c| "'\"`$\\".contains(c) || c.is_control()), "{line:?}");
            assert!(line.ends_with('\n') && line.matches('\n').count() == 1, "{line:?}");
            // A real shell: `eval "echo $line"` and `eval "echo '$line'"` print it, run nothing.
            for quoted in [format!("echo \"{}\"", line.trim_end()), format!("echo '{}'", line.trim_end())] {
                let out = std::process::Command::new("sh").args(["-c", "eval \"$0\""]).arg(&quoted).output().unwrap();
                assert!(out.status.success(), "{quoted}: {}", String::from_utf8_lossy(&out.stderr));
                assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), line.trim_end());
            }
        }
        assert!(error_line("mesh", "no endpoint could be reached").starts_with("fabcheck mesh ERROR: no endpoint"));
    }
}
