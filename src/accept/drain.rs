//! `accept --drain`: inside a Slurm allocation, `scontrol update nodename=HOST state=drain
//! reason=...` for each failed node (Slurm's scontrol(1): `State=DRAIN` needs a `Reason`).
//! Outside an allocation nothing is run: exit 2 saying so. No shell: each argument is one
//! argument of scontrol, so a reason with apostrophes stays readable.

use super::report::DrainEntry;
use std::time::Duration;

/// How long one scontrol may take (it asks slurmctld once).
const LIMIT: Duration = Duration::from_secs(30);

/// Whether this process runs inside a Slurm allocation (salloc, sbatch, srun set SLURM_JOB_ID).
pub fn in_allocation(env: impl Fn(&str) -> Option<String>) -> bool {
    env("SLURM_JOB_ID").or_else(|| env("SLURM_JOBID")).is_some_and(|v| !v.trim().is_empty())
}

/// scontrol's arguments for one node.
pub fn arguments(entry: &DrainEntry) -> Vec<String> {
    // One line: a control character (a newline from outside) becomes a space; apostrophes stay.
    let reason: String =
        format!("fabcheck accept: {} {}", entry.action, entry.reason).chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    vec!["update".into(), format!("nodename={}", entry.host), "state=drain".into(), format!("reason={reason}")]
}

/// Drains each entry whose host is a plain host name; the lines to say on stderr, and whether
/// every drain was taken.
pub fn drain(entries: &[DrainEntry]) -> (Vec<String>, bool) {
    let mut said = Vec::new();
    let mut all = true;
    for e in entries {
        if !crate::probe::bundle::valid_host(&e.host) {
            said.push(format!("not drained: '{}' is no Slurm node name", crate::sanitise::one_line(&e.host)));
            all = false;
            continue;
        }
        let args = arguments(e);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        match crate::sys::child::run_bounded("scontrol", &refs, LIMIT, 4096) {
            Ok(done) if done.status.is_some_and(|s| s.success()) => said.push(format!("drained {}: {}", e.host, e.action)),
            Ok(done) => {
                let why = String::from_utf8_lossy(&done.stderr);
                let why = if done.timed_out { format!("no answer in {} s", LIMIT.as_secs()) } else { why.trim().to_string() };
                said.push(format!("scontrol could not drain {}: {}", e.host, crate::sanitise::one_line(&why)));
                all = false;
            }
            Err(e2) => {
                said.push(format!("cannot run scontrol to drain {}: {e2}", e.host));
                all = false;
            }
        }
    }
    (said, all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::action::Action;

    #[test]
    fn an_allocation_is_slurms_job_id() {
        assert!(in_allocation(|k| (k == "SLURM_JOB_ID").then(|| "42".to_string())));
        assert!(!in_allocation(|_| None));
        assert!(!in_allocation(|_| Some(" ".into())));
    }

    #[test]
    fn each_node_is_one_scontrol_with_its_reason_as_one_argument() {
        let e = DrainEntry { host: "n3".into(), reason: "device.fw mlx5_0: it's old\nfirmware".into(), action: Action::UpdateFirmware };
        assert_eq!(
            arguments(&e),
            ["update", "nodename=n3", "state=drain", "reason=fabcheck accept: update-firmware device.fw mlx5_0: it's old firmware"]
        );
    }
}
