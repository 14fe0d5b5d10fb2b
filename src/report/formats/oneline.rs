//! `--format oneline`: exactly one line, the verdict and the first error's subject and message,
//! what NHC and Slurm's HealthCheckProgram carry as a drain reason.

use crate::diagnose::Severity;
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
    // One line whatever the messages hold.
    let line: String = line.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    format!("{}\n", line.trim_end())
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
}
