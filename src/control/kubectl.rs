//! `--launcher kubectl`: endpoints are Kubernetes node names; the agent runs as `kubectl exec -i
//! POD -- fabcheck agent` in the pod of the fabcheck DaemonSet on that node (contrib/k8s/),
//! speaking over kubectl's stdio: no ssh keys, no open port, no token. The pod is found with
//! `kubectl get pods -l SELECTOR --field-selector spec.nodeName=NODE -o name` (bounded in time
//! and size). The parsing and validation are pure; [`find_pod`] is the one blocking call.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The DaemonSet's pods' label (contrib/k8s/daemonset.yaml), `--k8s-selector`'s default.
pub const DEFAULT_SELECTOR: &str = "app=fabcheck-agent";

/// How long the pod lookup may take: the API server answers within this or is in trouble.
const LOOKUP_LIMIT: Duration = Duration::from_secs(20);

/// Bytes of `kubectl get` output read: one `pod/NAME` line per pod of a node.
const OUTPUT_CAP: u64 = 64 * 1024;

/// Whether `name` is a Kubernetes object name (RFC 1123 subdomain: lowercase letters, digits,
/// `-` and `.`, starting and ending alphanumeric, at most 253 bytes): a node or a pod. Anything
/// else (an option, a shell word) is never handed to kubectl.
pub fn valid_name(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty() && name.len() <= 253 && name.chars().all(|c| ok(c) || c == '-' || c == '.') && name.starts_with(ok) && name.ends_with(ok)
}

/// Whether a label selector is plain (`app=fabcheck-agent`, `a=b,c!=d`): no spaces, no option.
pub fn valid_selector(selector: &str) -> bool {
    !selector.is_empty()
        && !selector.starts_with('-')
        && selector.len() <= 512
        && selector.chars().all(|c| c.is_ascii_alphanumeric() || "=!,._-/".contains(c))
}

/// The arguments of the pod lookup for `node`.
pub fn lookup_args(node: &str, selector: &str) -> Vec<String> {
    ["get", "pods", "-l", selector, "--field-selector", &format!("spec.nodeName={node}"), "-o", "name"].map(String::from).to_vec()
}

/// The arguments of the agent's `kubectl exec`.
pub fn exec_args(pod: &str, remote_fabcheck: &str) -> Vec<String> {
    ["exec", "-i", pod, "--", remote_fabcheck, "agent"].map(String::from).to_vec()
}

/// The pod `kubectl get pods ... -o name` printed (`pod/NAME` lines): the first, or why none.
pub fn parse_pod(output: &str, node: &str, selector: &str) -> Result<String, String> {
    let mut pods = output.lines().map(str::trim).filter(|l| !l.is_empty());
    match pods.next() {
        None => Err(format!("no pod labelled {selector} runs on node {node} (is the fabcheck DaemonSet scheduled there?)")),
        Some(line) => {
            let name = line.strip_prefix("pod/").unwrap_or(line);
            if valid_name(name) {
                Ok(name.to_string())
            } else {
                Err(format!("kubectl named a pod that is not a Kubernetes name: {}", crate::sanitise::printable(line)))
            }
        }
    }
}

/// Runs the lookup: the pod of the DaemonSet on `node`, or why not (kubectl's own words).
/// `hidden` is the variable the lookup must not inherit (the agent token: kubectl never needs it).
pub fn find_pod(node: &str, selector: &str, hidden: &str) -> Result<String, String> {
    if !valid_name(node) {
        return Err(format!("'{}' is not a Kubernetes node name", crate::sanitise::printable(node)));
    }
    if !valid_selector(selector) {
        return Err(format!("--k8s-selector '{}' is not a plain label selector", crate::sanitise::printable(selector)));
    }
    let mut child = Command::new("kubectl")
        .args(lookup_args(node, selector))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove(hidden)
        .spawn()
        .map_err(|e| format!("cannot run kubectl: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < LOOKUP_LIMIT => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("kubectl get pods did not answer within {} s", LOOKUP_LIMIT.as_secs()));
            }
        }
    };
    let read = |r: Option<&mut dyn Read>| {
        let mut text = String::new();
        if let Some(r) = r {
            let _ = r.take(OUTPUT_CAP).read_to_string(&mut text);
        }
        text
    };
    let out = read(child.stdout.as_mut().map(|r| r as &mut dyn Read));
    let err = read(child.stderr.as_mut().map(|r| r as &mut dyn Read));
    if !status.success() {
        let said = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!("kubectl get pods failed ({status}): {}", crate::sanitise::printable(said.trim())));
    }
    parse_pod(&out, node, selector)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_selectors_are_checked_before_kubectl_sees_them() {
        for good in ["gpu-node-07", "ip-10-0-1-5.ec2.internal", "n1"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "-n", "Node1", "a b", "n1;rm", "n1-", "a/b"] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(valid_selector(DEFAULT_SELECTOR) && valid_selector("app=x,tier!=y"));
        assert!(!valid_selector("--all") && !valid_selector("a=b c"));
    }

    #[test]
    fn the_lookup_and_exec_arguments_and_the_pod_parsed() {
        assert_eq!(
            lookup_args("n07", DEFAULT_SELECTOR),
            ["get", "pods", "-l", "app=fabcheck-agent", "--field-selector", "spec.nodeName=n07", "-o", "name"]
        );
        assert_eq!(exec_args("fabcheck-agent-x2x9z", "fabcheck"), ["exec", "-i", "fabcheck-agent-x2x9z", "--", "fabcheck", "agent"]);
        assert_eq!(parse_pod("pod/fabcheck-agent-x2x9z\n", "n07", DEFAULT_SELECTOR), Ok("fabcheck-agent-x2x9z".into()));
        assert!(parse_pod("\n", "n07", DEFAULT_SELECTOR).unwrap_err().contains("no pod labelled app=fabcheck-agent runs on node n07"));
        assert!(parse_pod("pod/--all\n", "n07", DEFAULT_SELECTOR).is_err());
    }
}
