//! The words for a lost agent ([`Loss`]): cause and remedy, chosen here and not in `control`,
//! so the controller's state machines carry a kind that can be acted on.

use crate::error::Failure;
use crate::outcome::loss::{Carrier, Loss, LossKind, Step, Unreached};
use std::os::unix::process::ExitStatusExt;

/// What a person reads: the cause (naming the agent) and what to do.
pub fn words(loss: &Loss) -> (String, String) {
    let (cause, remedy) = kind_words(loss);
    match (&loss.during, &loss.kind) {
        // A test's own refusals, timeouts and protocol errors say their step in their words;
        // an agent lost in the middle of one says what it was doing.
        (Some(what), kind) if !matches!(kind, LossKind::Refused { .. } | LossKind::Timeout { .. } | LossKind::Protocol(_)) => {
            (format!("{cause} (agent lost while {what})"), remedy)
        }
        _ => (cause, remedy),
    }
}

/// An unreachable endpoint's cause, in the words its document gives it.
pub fn unreached_words(u: &Unreached) -> String {
    match u {
        Unreached::Lost(loss) => words(loss).0,
        Unreached::RailsUnknown(loss) => format!("its rails are unknown: {}", words(loss).0),
    }
}

fn kind_words(loss: &Loss) -> (String, String) {
    let label = &loss.agent;
    match &loss.kind {
        LossKind::SrunWithUser => {
            (format!("{label}: srun starts agents as you; drop the user@ or use --launcher ssh"), "drop the user@ from the endpoint, or use --launcher ssh".into())
        }
        LossKind::BadRemotePath(path) => {
            (format!("--remote-fabcheck '{path}' is not a plain path"), "give --remote-fabcheck a plain path (letters, digits and /._-+)".into())
        }
        LossKind::NoOwnBinary(e) => (format!("cannot find this fabcheck binary: {e}"), "run fabcheck by its path".into()),
        LossKind::NotStarted { carrier, detail } => (
            format!("{label}: cannot start the agent: {}", strip_controls(detail)),
            match carrier {
                Carrier::Srun { .. } => "run inside a Slurm allocation (salloc, sbatch) where srun is on the PATH",
                Carrier::Kubectl { .. } => {
                    "install kubectl with a context that may get and exec pods, deploy contrib/k8s/daemonset.yaml, and name nodes as `kubectl get nodes` does"
                }
                Carrier::Ssh { .. } => "install openssh-client",
                Carrier::Local | Carrier::Tcp => "check the fabcheck binary",
            }
            .into(),
        ),
        LossKind::Pipes(None) => (format!("{label}: the agent has no pipes"), "internal error; rerun".into()),
        LossKind::Pipes(Some(e)) => (format!("{label}: cannot set up the agent's pipes: {e}"), "rerun".into()),
        LossKind::Unresolved(Some(e)) => (format!("cannot resolve {label}: {e}"), "check the host name".into()),
        LossKind::Unresolved(None) => (format!("cannot resolve {label}: no address"), "check the host name".into()),
        LossKind::Unreachable { port, detail } => (
            format!("cannot reach {label}: {detail}"),
            format!("start `fabcheck serve --listen 0.0.0.0:{port} --token-file FILE` there, and check firewalls"),
        ),
        LossKind::Exited { carrier, status, tail } => exited(label, carrier, status, &tail_text(tail)),
        LossKind::Gone { why, tail } => {
            (format!("{label}: {why}{}", tail_text(tail)), "the agent died or its host went away; check it and rerun".into())
        }
        LossKind::Protocol(why) => (format!("{label}: {why}"), "use the same fabcheck version on every node".into()),
        LossKind::Refused { cause, remedy, .. } => (format!("{label}: {cause}"), remedy.clone()),
        LossKind::Timeout { step: Step::Rails, waited } => {
            (format!("{label}: no answer to rails within {} s", waited.as_secs()), "the agent or its host is stuck; check it and rerun".into())
        }
        LossKind::Timeout { step: Step::Test, waited } => (
            format!("{label}: no answer within {} s while {}", waited.as_secs(), loss.during.as_deref().unwrap_or("a test ran")),
            "the agent or its host is stuck or unreachable; check it (and the fabric) and rerun".into(),
        ),
        LossKind::Timeout { step, waited } => {
            let what = match step {
                Step::Inventory => "reading the inventory",
                _ => "saying hello",
            };
            (
                format!("{label}: no answer within {} s while {what}", waited.as_secs()),
                "the agent or its host is stuck or unreachable (for ssh: a password or host-key prompt?); check it and rerun".into(),
            )
        }
        LossKind::Interrupted => ("interrupted".into(), "the agents were told to stop; nothing is left running".into()),
        LossKind::Internal(what) => (format!("internal error: {what}"), "report a bug".into()),
    }
}

/// The last words of a child's stderr (ssh's `Permission denied\r\n`), with its control
/// characters stripped, not escaped: a literal `\u{d}` in an error helps no one.
fn tail_text(tail: &str) -> String {
    let words = strip_controls(tail);
    if words.is_empty() {
        String::new()
    } else {
        format!(": {words}")
    }
}

/// Control characters (CR, escape sequences' ESC, tabs, newlines) made spaces, runs of spaces
/// one, trimmed.
pub fn strip_controls(text: &str) -> String {
    text.split(|c: char| c.is_control() || c.is_whitespace()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// ssh and srun problems point at ssh and Slurm, a local agent at its message.
fn exited(label: &str, carrier: &Carrier, s: &std::process::ExitStatus, tail: &str) -> (String, String) {
    match carrier {
        Carrier::Srun { node } => (
            format!("{label}: srun or the agent exited ({s}){tail}"),
            format!("check that `srun --nodes=1 --nodelist={node} --overlap fabcheck --version` works here (inside the allocation, the node in it, fabcheck on its PATH or --remote-fabcheck)"),
        ),
        Carrier::Kubectl { node } => (
            format!("{label}: kubectl exec or the agent exited ({s}){tail}"),
            format!("check that `kubectl get pods -l app=fabcheck-agent --field-selector spec.nodeName={node}` lists a Running pod and that fabcheck is on its PATH (or --remote-fabcheck)"),
        ),
        Carrier::Ssh { login } => (
            format!("{label}: ssh or the remote agent exited ({s}){tail}"),
            format!(
                "check that `ssh -o BatchMode=yes {login} fabcheck --version` works (keys, host reachable, fabcheck on the remote PATH or --remote-fabcheck)"
            ),
        ),
        _ if s.signal().is_some() => (
            format!("{label}: the agent was killed ({s}){tail}"),
            "something outside fabcheck ended it (the OOM killer, a job or session limit, an operator): check `dmesg` and the logs on that host, then rerun".into(),
        ),
        _ => (format!("{label}: the agent exited ({s}){tail}"), "see its message above".into()),
    }
}

impl From<Loss> for Failure {
    fn from(loss: Loss) -> Failure {
        let (cause, remedy) = words(&loss);
        Failure::new(cause, remedy)
    }
}

impl From<&Loss> for Failure {
    fn from(loss: &Loss) -> Failure {
        let (cause, remedy) = words(loss);
        Failure::new(cause, remedy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::ExitStatus;
    use std::time::Duration;

    fn failure(agent: &str, kind: LossKind) -> Failure {
        Loss::new(agent, kind).into()
    }

    #[test]
    fn the_words_are_those_of_0_2() {
        let ssh = Carrier::Ssh { login: "bob@n2".into() };
        let f = failure("n2", LossKind::Exited { carrier: ssh.clone(), status: ExitStatus::from_raw(255 << 8), tail: "Permission denied".into() });
        assert_eq!(f.cause, "n2: ssh or the remote agent exited (exit status: 255): Permission denied");
        let cr = failure(
            "n2",
            LossKind::Exited {
                carrier: ssh.clone(),
                status: ExitStatus::from_raw(255 << 8),
                tail: "bob@n2: Permission denied (publickey).\r\n\u{1b}[0m".into(),
            },
        );
        assert_eq!(
            cr.cause, "n2: ssh or the remote agent exited (exit status: 255): bob@n2: Permission denied (publickey). [0m",
            "control characters stripped, not escaped"
        );
        assert!(f.remedy.starts_with("check that `ssh -o BatchMode=yes bob@n2 fabcheck --version` works"), "{}", f.remedy);
        let f = failure(
            "n2",
            LossKind::Exited { carrier: Carrier::Srun { node: "n2".into() }, status: ExitStatus::from_raw(1 << 8), tail: String::new() },
        );
        assert_eq!(f.cause, "n2: srun or the agent exited (exit status: 1)");
        assert!(f.remedy.contains("--nodelist=n2 --overlap"), "{}", f.remedy);
        let f = failure("localhost", LossKind::Exited { carrier: Carrier::Local, status: ExitStatus::from_raw(9), tail: String::new() });
        assert_eq!(f.cause, "localhost: the agent was killed (signal: 9 (SIGKILL))");
        assert!(f.remedy.contains("OOM killer"));
        let f = failure("tcp://n1:18515", LossKind::Unreachable { port: 18515, detail: "Connection refused (os error 111)".into() });
        assert_eq!(f.cause, "cannot reach tcp://n1:18515: Connection refused (os error 111)");
        assert_eq!(f.remedy, "start `fabcheck serve --listen 0.0.0.0:18515 --token-file FILE` there, and check firewalls");
        let f = failure("n1", LossKind::Timeout { step: Step::Hello, waited: Duration::from_secs(20) });
        assert_eq!(f.cause, "n1: no answer within 20 s while saying hello");
        let f = failure("n1", LossKind::Gone { why: "the agent exited or the connection closed".into(), tail: String::new() });
        assert_eq!(f.remedy, "the agent died or its host went away; check it and rerun");
        let f = failure("n1", LossKind::SrunWithUser);
        assert_eq!(f.remedy, "drop the user@ from the endpoint, or use --launcher ssh");
        assert_eq!(failure("", LossKind::Interrupted).cause, "interrupted");
    }

    #[test]
    fn kinds_can_be_acted_on() {
        assert!(Loss::new("n1", LossKind::Timeout { step: Step::Hello, waited: Duration::from_secs(20) }).is_transient());
        assert!(!Loss::new("n1", LossKind::Protocol("bad".into())).is_transient());
        let refused = Loss::new("n1", LossKind::Refused { step: Step::Hello, cause: "the agent refused the token".into(), remedy: "r".into() });
        assert!(!refused.is_transient());
    }
}
