//! contrib/: the NHC check and the Slurm HealthCheckProgram run against captured sysfs trees, the
//! Kubernetes manifests parse and hold what a cluster needs, the Dockerfile has the structure it
//! must, and every fabcheck command line in them is one fabcheck's own flag parser accepts.

use clap::Parser;
use fabcheck::cli::Cli;
use serde::Deserialize;
use serde_yaml::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Parses a fabcheck command line (without the program name) as `fabcheck` would, running nothing.
fn parses(args: &[String]) -> Result<(), String> {
    let argv = std::iter::once("fabcheck".to_string()).chain(args.iter().cloned());
    Cli::try_parse_from(argv).map(|_| ()).map_err(|e| e.to_string())
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// --- NHC ------------------------------------------------------------------------------------

/// Sources contrib/nhc/fabcheck.nhc into bash with NHC's `die` and `log` stubbed, and runs
/// `check_fabcheck ARGS...`: what it printed (`DIE rc|message`, `LOG message`) and its status.
fn nhc(args: &[&str]) -> (Vec<String>, String) {
    let script = r#"
        die() { printf 'DIE %s|%s\n' "$1" "$2"; return 1; }
        log() { printf 'LOG %s\n' "$*"; }
        source "$NHC_FILE"
        check_fabcheck "$@"
        echo "STATUS $?"
    "#;
    let out = Command::new("bash")
        .args(["-c", script, "nhc"])
        .args(args)
        .env("NHC_FILE", repo().join("contrib/nhc/fabcheck.nhc"))
        .env("FABCHECK", env!("CARGO_BIN_EXE_fabcheck"))
        .output()
        .expect("run bash");
    let text = stdout(&out);
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let status = lines.iter().find_map(|l| l.strip_prefix("STATUS ")).unwrap_or("none").to_string();
    (lines, status)
}

fn fixture(name: &str) -> String {
    crate::fixtures_dir().join(name).display().to_string()
}

/// The first error of `check --json` on a tree, as (subject, id).
fn first_error(tree: &str) -> (String, String) {
    let doc = crate::json(&crate::fabcheck(&["check", "--sysfs-root", tree, "--json"]));
    let f = doc["findings"].as_array().unwrap().iter().find(|f| f["severity"] == "error").expect("the failing tree has an error");
    (f["subject"].as_str().unwrap().to_string(), f["id"].as_str().unwrap().to_string())
}

#[test]
fn nhc_check_passes_a_healthy_node_and_dies_with_the_first_error_of_a_failing_one() {
    let (lines, status) = nhc(&["--sysfs-root", &fixture("hdr-ib-healthy")]);
    assert_eq!(status, "0", "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("DIE")), "a healthy node made NHC die: {lines:?}");

    for tree in ["ib-init-no-sm", "ib-down-polling", "roce-no-carrier"] {
        let tree = fixture(tree);
        let (lines, status) = nhc(&["--sysfs-root", &tree]);
        assert_eq!(status, "1", "{tree}: {lines:?}");
        let dies: Vec<&String> = lines.iter().filter(|l| l.starts_with("DIE ")).collect();
        assert_eq!(dies.len(), 1, "{tree}: die must be called once: {lines:?}");
        let message = dies[0].strip_prefix("DIE 1|").unwrap_or_else(|| panic!("die 1 MESSAGE expected: {}", dies[0]));
        // One line, what --format oneline prints with the subject first, naming the first error.
        let oneline = stdout(&crate::fabcheck(&["check", "--sysfs-root", &tree, "--format", "oneline"]));
        assert_eq!(message, crate::nhc::drain_reason(&oneline), "{tree}");
        let (subject, id) = first_error(&tree);
        assert!(message.starts_with(&format!("fabcheck: {subject} {id}: ")), "{tree}: {message}");
    }

    // A warning is logged, not fatal, unless the node's line asks for it (--fail-on warning).
    let warned = fixture("roce-mtu-mismatch");
    let (lines, status) = nhc(&["--sysfs-root", &warned]);
    assert_eq!(status, "0", "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("DIE")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("LOG check_fabcheck: fabcheck check PASS (warning mlx5_1/1: port.mtu:")), "{lines:?}");
    let (lines, status) = nhc(&["--sysfs-root", &warned, "--fail-on", "warning"]);
    assert_eq!(status, "1", "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("DIE 1|fabcheck: mlx5_1/1 port.mtu: active MTU 1024")), "{lines:?}");

    // fabcheck cannot run at all (no devices in the tree): NHC still dies, with fabcheck's cause.
    let empty = tempdir("nhc-empty");
    let (lines, status) = nhc(&["--sysfs-root", &empty.display().to_string()]);
    assert_eq!(status, "1", "{lines:?}");
    let die = lines.iter().find(|l| l.starts_with("DIE 1|")).unwrap_or_else(|| panic!("no die: {lines:?}"));
    assert!(die.contains("could not run (exit 2)") && die.contains("holds no class/infiniband devices"), "{die}");

    // A missing binary is named, not a silent pass.
    let out = Command::new("bash")
        .args([
            "-c",
            "die() { printf 'DIE %s|%s\\n' \"$1\" \"$2\"; return 1; }; source \"$1\"; FABCHECK=/nonexistent/fabcheck check_fabcheck; echo STATUS $?",
            "nhc",
        ])
        .arg(repo().join("contrib/nhc/fabcheck.nhc"))
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("DIE 1|check_fabcheck: /nonexistent/fabcheck not found") && text.contains("STATUS 1"), "{text}");
}

fn tempdir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-contrib-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// --- Slurm ------------------------------------------------------------------------------------

/// Where fabcheck-healthcheck.sh finds `check`'s flags: `--sysfs-root TREE`.
enum CheckArgs<'a> {
    /// `/etc/default/fabcheck-healthcheck` (here a scratch file) setting `FABCHECK_CHECK_ARGS` as
    /// an array: a path that holds a space (the checkout's may) stays one word.
    Conf(&'a str),
    /// `FABCHECK_CHECK_ARGS` as a string from the environment, split at blanks: the fixture named
    /// relative to the fixtures directory, where the script runs.
    Env(&'a str),
}

/// Runs contrib/slurm/fabcheck-healthcheck.sh with a fake `scontrol` that logs its arguments and
/// reports `reason` as the node's current drain reason: (exit code, scontrol calls).
fn healthcheck(args: CheckArgs, reason: &str, label: &str) -> (i32, Vec<String>) {
    let dir = tempdir(label);
    let log = dir.join("scontrol.log");
    let fake = dir.join("scontrol");
    std::fs::write(
        &fake,
        "#!/usr/bin/env bash\nprintf '%s\\n' \"$*\" >> \"$SCONTROL_LOG\"\n\
         if [[ $1 == show ]]; then echo \"NodeName=$2 State=IDLE\"; [[ -n $FAKE_REASON ]] && echo \"   Reason=$FAKE_REASON\"; fi\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut command = Command::new(repo().join("contrib/slurm/fabcheck-healthcheck.sh"));
    command
        .env("FABCHECK", env!("CARGO_BIN_EXE_fabcheck"))
        .env("SCONTROL", &fake)
        .env("SCONTROL_LOG", &log)
        .env("FAKE_REASON", reason)
        .env("NODENAME", "n17")
        .env_remove("FABCHECK_CHECK_ARGS");
    match args {
        CheckArgs::Conf(tree) => {
            let conf = dir.join("fabcheck-healthcheck");
            std::fs::write(&conf, format!("FABCHECK_CHECK_ARGS=(--sysfs-root {})\n", crate::sh_quote(tree))).unwrap();
            command.env("FABCHECK_HEALTHCHECK_CONF", conf);
        }
        CheckArgs::Env(name) => {
            command.env("FABCHECK_HEALTHCHECK_CONF", dir.join("absent")).env("FABCHECK_CHECK_ARGS", format!("--sysfs-root {name}"));
            command.current_dir(crate::fixtures_dir());
        }
    }
    let out = command.output().unwrap();
    let calls = std::fs::read_to_string(&log).unwrap_or_default().lines().filter(|l| !l.starts_with("show ")).map(str::to_string).collect();
    let _ = std::fs::remove_dir_all(&dir);
    (out.status.code().unwrap_or(-1), calls)
}

#[test]
fn slurm_healthcheck_drains_with_the_first_error_and_resumes_only_its_own_drains() {
    let failing = fixture("ib-init-no-sm");
    let oneline = stdout(&crate::fabcheck(&["check", "--sysfs-root", &failing, "--format", "oneline"]));
    let drain = vec![format!("update NodeName=n17 State=DRAIN Reason={}", crate::nhc::drain_reason(&oneline))];
    let (code, calls) = healthcheck(CheckArgs::Conf(&failing), "", "slurm-fail");
    assert_eq!((code, calls), (1, drain.clone()));
    let (code, calls) = healthcheck(CheckArgs::Env("ib-init-no-sm"), "", "slurm-fail-env");
    assert_eq!((code, calls), (1, drain), "the flags as a string in the environment");

    let healthy = fixture("hdr-ib-healthy");
    let (code, calls) = healthcheck(CheckArgs::Conf(&healthy), "", "slurm-ok");
    assert_eq!((code, calls.len()), (0, 0), "a healthy, undrained node is left alone: {calls:?}");
    let (code, calls) = healthcheck(CheckArgs::Conf(&healthy), "fabcheck check FAIL: mlx5_0/1: port.state: port INIT", "slurm-resume");
    assert_eq!((code, calls), (0, vec!["update NodeName=n17 State=RESUME".to_string()]), "its own drain is undone");
    let (code, calls) = healthcheck(CheckArgs::Conf(&healthy), "DIMM errors, ticket 4711", "slurm-admin");
    assert_eq!((code, calls.len()), (0, 0), "an admin's drain stays: {calls:?}");
}

/// Issue #57: a long first error drains with the subject first and is cut at 250 characters
/// where a clause or a word ends, with an ellipsis (0.4 cut it mid-word after the same 21
/// characters of every reason).
#[test]
fn slurm_drain_reason_leads_with_the_subject_and_is_cut_at_a_clause() {
    let dir = tempdir("slurm-long");
    let clause = "the physical link is up but no subnet manager answered on this port";
    let message = format!("port INIT: {}", [clause; 6].join("; "));
    let stub = dir.join("fabcheck");
    std::fs::write(&stub, format!("#!/bin/bash\necho 'fabcheck check FAIL: mlx5_0/1: port.state: {message}'\nexit 1\n")).unwrap();
    let fake = dir.join("scontrol");
    std::fs::write(&fake, "#!/usr/bin/env bash\n[[ $1 == show ]] || printf '%s\\n' \"$*\" >> \"$SCONTROL_LOG\"\nexit 0\n").unwrap();
    for f in [&stub, &fake] {
        std::fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let log = dir.join("scontrol.log");
    let out = Command::new(repo().join("contrib/slurm/fabcheck-healthcheck.sh"))
        .env("FABCHECK", &stub)
        .env("SCONTROL", &fake)
        .env("SCONTROL_LOG", &log)
        .env("NODENAME", "n17")
        .env("FABCHECK_HEALTHCHECK_CONF", dir.join("absent"))
        .env_remove("FABCHECK_CHECK_ARGS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let call = std::fs::read_to_string(&log).unwrap();
    let reason = call.trim_end().strip_prefix("update NodeName=n17 State=DRAIN Reason=").unwrap_or_else(|| panic!("{call}"));
    assert!(reason.starts_with("fabcheck: mlx5_0/1 port.state: port INIT: the physical link"), "{reason}");
    assert!(reason.len() <= 250 && reason.len() > 125, "{}: {reason}", reason.len());
    let kept = reason.strip_suffix("...").unwrap_or_else(|| panic!("no ellipsis: {reason}"));
    assert!(kept.ends_with(clause), "cut where a clause ends: {reason}");
    let _ = std::fs::remove_dir_all(&dir);
}

// --- Kubernetes ---------------------------------------------------------------------------------

fn documents(rel: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(&read(rel))
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{rel} is not YAML: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

fn s<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str().unwrap_or_else(|| panic!("{what}: expected a string, found {v:?}"))
}

fn strings(v: &Value, what: &str) -> Vec<String> {
    v.as_sequence().unwrap_or_else(|| panic!("{what}: expected a list, found {v:?}")).iter().map(|x| s(x, what).to_string()).collect()
}

/// The pod spec's fabcheck containers (those whose args are a fabcheck command line) must parse;
/// images are tagged, never `latest`. Returns every container's (name, args).
fn check_pod(pod: &Value, what: &str) -> Vec<(String, Vec<String>)> {
    let mut seen = Vec::new();
    let containers = pod["containers"].as_sequence().unwrap_or_else(|| panic!("{what}: no containers"));
    let init = pod["initContainers"].as_sequence().cloned().unwrap_or_default();
    for c in containers.iter().chain(init.iter()) {
        let name = s(&c["name"], "container name").to_string();
        let image = s(&c["image"], "image");
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or_else(|| panic!("{what}/{name}: image {image} has no tag"));
        assert!(tag != "latest" && !tag.contains('/'), "{what}/{name}: image {image} must name a version");
        let args = strings(&c["args"], "args");
        if c["command"].is_null() {
            // The image's ENTRYPOINT is fabcheck: args are its command line.
            parses(&args).unwrap_or_else(|e| panic!("{what}/{name}: fabcheck rejects {args:?}:\n{e}"));
        }
        seen.push((name, args));
    }
    seen
}

fn flag<'a>(args: &'a [String], name: &str) -> &'a str {
    let i = args.iter().position(|a| a == name).unwrap_or_else(|| panic!("{name} missing from {args:?}"));
    &args[i + 1]
}

/// The file a secret volume's single item lands at, for the container's mounts.
fn secret_file(pod: &Value, container: &Value) -> String {
    let volume = pod["volumes"].as_sequence().unwrap().iter().find(|v| !v["secret"].is_null()).expect("a secret volume");
    assert_eq!(s(&volume["secret"]["secretName"], "secretName"), "fabcheck-token");
    assert_eq!(volume["secret"]["defaultMode"].as_u64(), Some(0o400), "the token file must be owner-only (fabcheck refuses others')");
    let item = &volume["secret"]["items"][0];
    assert_eq!(s(&item["key"], "key"), "token");
    let mount = container["volumeMounts"].as_sequence().unwrap().iter().find(|m| m["name"] == volume["name"]).expect("the secret is mounted");
    format!("{}/{}", s(&mount["mountPath"], "mountPath"), s(&item["path"], "path"))
}

/// The agents' DaemonSet file `rel`: its documents parse, the pod listens off loopback with the
/// token, and it can open the RDMA devices: privileged with `/dev/infiniband` mounted, or
/// unprivileged with an RDMA device plugin's resource requested. Returns the port and the Service.
fn check_agents(rel: &str) -> (u64, Value) {
    let agents = documents(rel);
    let kinds: Vec<(&str, &str)> = agents.iter().map(|d| (s(&d["apiVersion"], "apiVersion"), s(&d["kind"], "kind"))).collect();
    assert_eq!(kinds, vec![("v1", "Namespace"), ("apps/v1", "DaemonSet"), ("v1", "Service")]);
    for d in &agents {
        assert!(!s(&d["metadata"]["name"], "metadata.name").is_empty());
    }

    let ds = &agents[1];
    assert_eq!(s(&ds["metadata"]["namespace"], "namespace"), "fabcheck");
    let labels = &ds["spec"]["template"]["metadata"]["labels"];
    let selector = ds["spec"]["selector"]["matchLabels"].as_mapping().expect("selector.matchLabels");
    for (k, v) in selector {
        assert_eq!(&labels[k], v, "the selector must match the pod template's labels");
    }
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(pod["hostNetwork"].as_bool(), Some(true));
    let containers = check_pod(pod, "DaemonSet");
    let (_, serve) = &containers[0];
    assert_eq!(serve[0], "serve");
    let listen = flag(serve, "--listen");
    assert!(listen.starts_with("0.0.0.0:"), "agents must listen off loopback: {listen}");
    let port: u64 = listen.rsplit_once(':').unwrap().1.parse().unwrap();
    let container = &pod["containers"][0];
    assert_eq!(secret_file(pod, container), flag(serve, "--token-file"));
    let caps = strings(&container["securityContext"]["capabilities"]["add"], "capabilities.add");
    assert!(caps.contains(&"IPC_LOCK".to_string()), "{caps:?}");
    let privileged = container["securityContext"]["privileged"].as_bool() == Some(true);
    let plugin =
        |what: &str| container["resources"][what].as_mapping().is_some_and(|m| m.keys().any(|k| k.as_str().is_some_and(|k| k.starts_with("rdma/"))));
    if privileged {
        let ib = pod["volumes"].as_sequence().unwrap().iter().find(|v| v["hostPath"]["path"] == "/dev/infiniband").expect("/dev/infiniband hostPath");
        assert!(container["volumeMounts"].as_sequence().unwrap().iter().any(|m| m["name"] == ib["name"] && m["mountPath"] == "/dev/infiniband"));
    } else {
        assert!(
            plugin("limits") && plugin("requests"),
            "{rel}: unprivileged, so it must request an RDMA device plugin resource to open /dev/infiniband"
        );
    }
    assert_eq!(container["ports"][0]["containerPort"].as_u64(), Some(port));

    let svc = agents[2].clone();
    assert_eq!(s(&svc["spec"]["clusterIP"], "clusterIP"), "None", "headless: its DNS name lists every agent");
    assert_eq!(&svc["spec"]["selector"], &ds["spec"]["selector"]["matchLabels"]);
    assert_eq!(svc["spec"]["ports"][0]["port"].as_u64(), Some(port));
    (port, svc)
}

#[test]
fn kubernetes_manifests_parse_and_run_fabchecks_own_command_lines() {
    // Two ways to give the agents their devices, each complete: privileged, or the device plugin.
    let (port, svc) = check_agents("contrib/k8s/agents.yaml");
    assert_eq!(check_agents("contrib/k8s/agents-rdma-shared-dev.yaml").0, port);
    let privileged = &documents("contrib/k8s/agents.yaml")[1]["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"];
    assert_eq!(privileged.as_bool(), Some(true), "agents.yaml as shipped opens the devices (privileged)");

    let job = documents("contrib/k8s/mesh-job.yaml");
    assert_eq!(job.len(), 1);
    let job = &job[0];
    assert_eq!((s(&job["apiVersion"], "apiVersion"), s(&job["kind"], "kind")), ("batch/v1", "Job"));
    let pod = &job["spec"]["template"]["spec"];
    assert!(matches!(s(&pod["restartPolicy"], "restartPolicy"), "Never" | "OnFailure"));
    let containers = check_pod(pod, "Job");
    let (_, mesh) = containers.iter().find(|(n, _)| n == "mesh").expect("a mesh container");
    assert_eq!(mesh[0], "mesh");
    assert_eq!(secret_file(pod, &pod["containers"][0]), flag(mesh, "--token-file"));
    // The init container writes the hostfile the mesh reads, as tcp:// endpoints on the agents' port.
    let (_, init) = containers.iter().find(|(n, _)| n == "endpoints").expect("an endpoints init container");
    let script = init.join(" ");
    assert!(script.contains(&format!("> {}", flag(mesh, "--hostfile"))), "{script}");
    assert!(script.contains("tcp://") && script.contains(&format!(":{port}")), "{script}");
    assert!(script.contains(s(&svc["metadata"]["name"], "service name")), "the endpoints come from the agents' Service: {script}");

    // The check has teeth: a misspelt flag is refused.
    assert!(parses(&["serve".into(), "--token-fil".into(), "/x".into()]).is_err());
}

// --- Dockerfile ---------------------------------------------------------------------------------

/// The Dockerfile's instructions, continuation lines joined, comments dropped: (INSTRUCTION, rest).
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(part) = t.strip_suffix('\\') {
            current.push_str(part);
            current.push(' ');
            continue;
        }
        current.push_str(t);
        let (op, rest) = current.split_once(char::is_whitespace).unwrap_or((&current, ""));
        out.push((op.to_ascii_uppercase(), rest.trim().to_string()));
        current.clear();
    }
    out
}

#[test]
fn dockerfile_is_multi_stage_pinned_and_ends_in_fabcheck() {
    let text = read("contrib/docker/Dockerfile");
    let ins = instructions(&text);
    let mut args_before_from: Vec<String> = Vec::new();
    let mut stages: Vec<String> = Vec::new();
    let mut last_stage: Vec<(String, String)> = Vec::new();
    for (op, rest) in &ins {
        match op.as_str() {
            "ARG" if stages.is_empty() => args_before_from.push(rest.split('=').next().unwrap().to_string()),
            "FROM" => {
                let words: Vec<&str> = rest.split_whitespace().collect();
                assert!(words.len() == 3 && words[1].eq_ignore_ascii_case("as"), "every stage is named: FROM {rest}");
                let image = words[0];
                if let Some(var) = image.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
                    assert!(args_before_from.iter().any(|a| a == var), "FROM {image}: ARG {var} must come before the first FROM");
                } else if !stages.iter().any(|s| s == image) {
                    let (_, tag) = image.rsplit_once(':').unwrap_or_else(|| panic!("FROM {image}: no tag"));
                    assert!(tag != "latest" && !tag.is_empty(), "FROM {image}: pin a version");
                }
                stages.push(words[2].to_string());
                last_stage.clear();
            }
            _ => {}
        }
        last_stage.push((op.clone(), rest.clone()));
    }
    assert!(stages.len() >= 2, "multi-stage: {stages:?}");
    let (_, final_from) = &last_stage[0];
    assert!(final_from.starts_with("debian:${DEBIAN_RELEASE}-slim") || final_from.starts_with("debian:bookworm-slim"), "{final_from}");
    assert!(text.contains("ARG DEBIAN_RELEASE=bookworm"), "the runtime is Debian 12 (bookworm)");
    for (op, rest) in &ins {
        if op == "COPY" {
            if let Some(from) = rest.strip_prefix("--from=") {
                let stage = from.split_whitespace().next().unwrap();
                assert!(stages.iter().any(|s| s == stage), "COPY --from={stage}: no such stage");
            }
        }
        if op == "RUN" && rest.contains("apt-get install") {
            assert!(rest.contains("--no-install-recommends") && rest.contains("rm -rf /var/lib/apt/lists"), "RUN {rest}");
            // Every package pinned to a version (hadolint DL3008), through an ARG declared up front.
            let install = rest.split("apt-get install").nth(1).unwrap().split("&&").next().unwrap();
            for word in install.split_whitespace().filter(|w| !w.starts_with('-')) {
                let (pkg, version) = word.split_once('=').unwrap_or_else(|| panic!("RUN apt-get install {word}: pin its version (DL3008)"));
                let var = version.trim_matches('"').strip_prefix("${").and_then(|v| v.strip_suffix('}'));
                let var = var.unwrap_or_else(|| panic!("{pkg}: pin through an ARG, as the others: {version}"));
                assert!(args_before_from.iter().any(|a| a == var), "{pkg}={version}: ARG {var} must be declared before the first FROM");
            }
        }
    }
    let run_final: String = last_stage.iter().filter(|(op, _)| op == "RUN").map(|(_, r)| r.as_str()).collect::<Vec<_>>().join(" ");
    for pkg in ["rdma-core", "ibverbs-providers", "infiniband-diags"] {
        assert!(run_final.contains(pkg), "the runtime stage installs {pkg}");
    }
    let exec_form = |op: &str| -> Vec<String> {
        let (_, rest) = last_stage.iter().rev().find(|(o, _)| o == op).unwrap_or_else(|| panic!("the final stage has no {op}"));
        serde_json::from_str(rest).unwrap_or_else(|e| panic!("{op} {rest}: use the exec (JSON) form: {e}"))
    };
    let entrypoint = exec_form("ENTRYPOINT");
    assert_eq!(entrypoint, vec!["/usr/bin/fabcheck".to_string()]);
    assert!(last_stage.iter().any(|(op, rest)| op == "COPY" && rest.ends_with("/usr/bin/fabcheck")), "the binary lands at the ENTRYPOINT");
    parses(&exec_form("CMD")).expect("CMD is a fabcheck command line");
    // The build context ignores target/ (gigabytes) except target/dist.
    let ignore = read("contrib/docker/Dockerfile.dockerignore");
    assert!(ignore.lines().any(|l| l == "target") && ignore.lines().any(|l| l == "!target/dist"), "{ignore}");
}

// --- node-problem-detector and the kubectl launcher (issue #57) -------------------------------

/// Seconds of an NPD duration (`300s`, `2m`).
fn npd_seconds(text: &str) -> u64 {
    match text.strip_suffix('s') {
        Some(n) => n.parse().unwrap(),
        None => text.strip_suffix('m').and_then(|n| n.parse::<u64>().ok()).map(|m| m * 60).unwrap_or_else(|| panic!("not a duration: {text}")),
    }
}

/// NPD's custom-plugin contract (kubernetes/node-problem-detector, pkg/custompluginmonitor):
/// exit 0 OK, 1 NonOK, 2 Unknown, stdout cut to max_output_length. The shipped config runs the
/// command the contract names; that command, run here on fixtures, exits 0/1/2 for a healthy
/// node, a failing one and one that cannot be read, prints one line of at most 80 bytes, and
/// ends well within the rule's timeout, which is within the plugin's and its interval.
#[test]
fn the_node_problem_detector_plugin_maps_exit_codes_cuts_at_80_and_has_a_timeout() {
    let docs = documents("contrib/k8s/npd-fabcheck.yaml");
    assert_eq!(s(&docs[0]["kind"], "kind"), "ConfigMap");
    let config: serde_json::Value = serde_json::from_str(s(&docs[0]["data"]["fabcheck-plugin.json"], "plugin json")).unwrap();
    assert_eq!(config["plugin"], "custom");
    let max = config["pluginConfig"]["max_output_length"].as_u64().unwrap();
    assert_eq!(max, 80);
    let rule = &config["rules"][0];
    let args: Vec<String> = rule["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    assert_eq!(args, ["check", "--format", "oneline", "--max-len", "80"]);
    assert_eq!(rule["condition"], config["conditions"][0]["type"], "the rule sets the condition it declares");
    let timeout = npd_seconds(rule["timeout"].as_str().unwrap());
    assert!(timeout <= npd_seconds(config["pluginConfig"]["timeout"].as_str().unwrap()));
    assert!(timeout < npd_seconds(config["pluginConfig"]["invoke_interval"].as_str().unwrap()), "a run ends before the next starts");
    let fixtures = repo().join("tests/fixtures");
    for (root, code, status, starts) in [
        (fixtures.join("hdr-ib-healthy"), 0, "OK", "fabcheck check PASS"),
        (fixtures.join("ib-down-polling"), 1, "NonOK", "fabcheck check FAIL"),
        (fixtures.join("no-such-fixture"), 2, "Unknown", "fabcheck check ERROR"),
    ] {
        let start = std::time::Instant::now();
        let mut argv = args.clone();
        argv.extend(["--sysfs-root".to_string(), root.display().to_string()]);
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(&argv).output().unwrap();
        assert!(start.elapsed().as_secs() < timeout, "{status}: slower than the plugin's timeout");
        assert_eq!(out.status.code(), Some(code), "{status}: {}", String::from_utf8_lossy(&out.stderr));
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 1, "{status}: {text}");
        let line = text.trim_end_matches('\n');
        assert!(line.len() as u64 <= max, "{status}: {} bytes: {line}", line.len());
        assert!(line.starts_with(starts), "{status}: {line}");
    }
}

/// `--launcher kubectl` finds the agent's pod by `--k8s-selector` (default `app=fabcheck-agent`):
/// both shipped DaemonSets label their pods with it.
#[test]
fn the_daemonsets_pods_carry_the_kubectl_launchers_default_selector() {
    for rel in ["contrib/k8s/agents.yaml", "contrib/k8s/agents-rdma-shared-dev.yaml"] {
        let ds = &documents(rel)[1];
        assert_eq!(ds["spec"]["template"]["metadata"]["labels"]["app"].as_str(), Some("fabcheck-agent"), "{rel}");
    }
    assert_eq!(fabcheck::control::kubectl::DEFAULT_SELECTOR, "app=fabcheck-agent");
}

/// Issue #57: the mesh Job over `--launcher kubectl`: its service account may get and list pods
/// and create pods/exec (what `kubectl get pods` and `kubectl exec -i` need), nothing more; the
/// init container puts kubectl on the mesh's PATH and writes the node names it reads.
#[test]
fn the_kubectl_mesh_job_has_its_rbac_and_runs_fabchecks_own_command_line() {
    let docs = documents("contrib/k8s/mesh-kubectl-job.yaml");
    let kinds: Vec<&str> = docs.iter().map(|d| s(&d["kind"], "kind")).collect();
    assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding", "Job"]);
    assert!(docs.iter().all(|d| d["metadata"]["namespace"] == "fabcheck"), "one namespace, the agents'");
    let account = s(&docs[0]["metadata"]["name"], "service account");
    let mut rules: Vec<(String, Vec<String>)> = docs[1]["rules"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|r| {
            assert_eq!(strings(&r["apiGroups"], "apiGroups"), [""], "the core group only");
            let verbs = strings(&r["verbs"], "verbs");
            strings(&r["resources"], "resources").into_iter().map(move |res| (res, verbs.clone()))
        })
        .collect();
    rules.sort();
    assert_eq!(rules, [("pods".to_string(), vec!["get".to_string(), "list".to_string()]), ("pods/exec".to_string(), vec!["create".to_string()])]);
    let binding = &docs[2];
    assert_eq!(
        (s(&binding["roleRef"]["kind"], "roleRef"), s(&binding["roleRef"]["name"], "roleRef")),
        ("Role", s(&docs[1]["metadata"]["name"], "role"))
    );
    assert_eq!((s(&binding["subjects"][0]["kind"], "subject"), s(&binding["subjects"][0]["name"], "subject")), ("ServiceAccount", account));

    let pod = &docs[3]["spec"]["template"]["spec"];
    assert_eq!(s(&pod["serviceAccountName"], "serviceAccountName"), account);
    assert!(matches!(s(&pod["restartPolicy"], "restartPolicy"), "Never" | "OnFailure"));
    let containers = check_pod(pod, "kubectl Job");
    let (_, mesh) = containers.iter().find(|(n, _)| n == "mesh").expect("a mesh container");
    assert_eq!((mesh[0].as_str(), flag(mesh, "--launcher")), ("mesh", "kubectl"));
    let selector = flag(mesh, "--k8s-selector");
    assert_eq!(selector, fabcheck::control::kubectl::DEFAULT_SELECTOR);
    let (_, init) = containers.iter().find(|(n, _)| n == "nodes").expect("a nodes init container");
    let script = init.join(" ");
    assert!(script.contains(&format!("-l {selector}")) && script.contains(".spec.nodeName"), "{script}");
    assert!(script.contains(&format!("> {}", flag(mesh, "--hostfile"))), "{script}");
    let path = pod["containers"][0]["env"].as_sequence().unwrap().iter().find(|e| e["name"] == "PATH").expect("PATH set");
    assert!(s(&path["value"], "PATH").starts_with("/tools:") && script.contains("/tools/kubectl"), "kubectl on the mesh's PATH: {script}");
    assert!(pod["containers"][0]["volumeMounts"].as_sequence().unwrap().iter().any(|m| m["mountPath"] == "/tools"));
}
