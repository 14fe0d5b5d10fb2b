//! `--format oneline`: exactly one line, the verdict and the first error's subject and message,
//! what NHC and Slurm's HealthCheckProgram carry as a drain reason.

use crate::outcome::Severity;
use serde_json::Value;

pub fn render(doc: &Value) -> String {
    let command = super::command_of(doc);
    let verdict = doc["verdict"].as_str().unwrap_or("pass");
    let findings = super::findings(doc);
    let first = findings.iter().find(|f| f.severity == Severity::Error).or_else(|| findings.iter().find(|f| f.severity == Severity::Warning));
    let line = match (verdict, first) {
        ("fail", Some(f)) => format!("fabcheck {command} FAIL: {}: {}: {}", f.subject, f.id, f.message),
        ("fail", None) => format!("fabcheck {command} FAIL"),
        (_, Some(f)) if f.severity == Severity::Warning => format!("fabcheck {command} PASS (warning {}: {}: {})", f.subject, f.id, f.message),
        _ => format!("fabcheck {command} PASS"),
    };
    format!("{}\n", eval_safe(&line))
}

/// `fabcheck COMMAND ERROR: CAUSE`, the one line `--format oneline` prints on exit 2 (the run
/// could not run), so a health check that reads stdout still has the cause.
pub fn error_line(command: &str, cause: &str) -> String {
    format!("{}\n", eval_safe(&format!("fabcheck {command} ERROR: {cause}")))
}

/// One line that a shell may `eval` (NHC does, for its drain reason): quotes, apostrophes, `$`,
/// backticks and backslashes are replaced by `_`, control characters by a space (replaced, not
/// escaped: an escape is one more thing a consumer's quoting can get wrong).
pub fn eval_safe(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| match c {
            '\'' | '"' | '`' | '$' | '\\' => '_',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    line.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verdict_and_first_error() {
        let doc = json!({"schema":"fabcheck.check.v1","verdict":"fail","findings":[
            {"id":"pcie.bound","severity":"warning","subject":"mlx5_0","message":"w"},
            {"id":"port.state","severity":"error","subject":"mlx5_0/1","message":"port INIT: no SM\nsecond line"}]});
        assert_eq!(render(&doc), "fabcheck check FAIL: mlx5_0/1: port.state: port INIT: no SM second line\n");
        assert_eq!(render(&json!({"schema":"fabcheck.pair.v1","verdict":"pass","findings":[]})), "fabcheck pair PASS\n");
        let mesh = json!({"schema":"fabcheck.mesh.v1","verdict":"fail","suspects":[{"kind":"node","subject":"n3/mlx5_0","reason":"slow"}]});
        assert_eq!(render(&mesh), "fabcheck mesh FAIL: n3/mlx5_0: mesh.suspect: slow\n");
        let lost = json!({"schema":"fabcheck.mesh.v1","verdict":"fail","suspects":[],"unreachable":[{"endpoint":"n4","error":"cannot reach n4"}]});
        assert_eq!(render(&lost), "fabcheck mesh FAIL: n4: mesh.unreachable: cannot reach n4\n");
    }

    #[test]
    fn every_line_survives_a_shell_eval() {
        // NHC evaluates the drain reason: an apostrophe was a syntax error and no drain.
        let nasty = "GPU 0000:02:00.0's PCIe link \"x\" $(reboot) `id` \\ ${HOME}\u{1b}[31m\r";
        let doc = json!({"schema":"fabcheck.check.v1","verdict":"fail","findings":[
            {"id":"pcie.link","severity":"error","subject":"0000:02:00.0","message":nasty}]});
        for line in [render(&doc), error_line("check", nasty)] {
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
