//! `pair --rails` against fake nodes (issue #29): each fake node is one `fabcheck serve`-like
//! listener whose inventory is the 8-NIC `gpu-hgx-healthy` tree; every connection is one agent
//! session (rail k runs on its own sessions). Knobs degrade one device, take a port down, cut
//! the node's rail count, or answer as a 0.2 agent (no `rails` in the hello). `mesh_rails`
//! reuses the fake nodes (`start`, `Knobs`).

use fabcheck::control::protocol::{decode, encode, Reply, Request, Role, RunResult, TestSpec};
use fabcheck::gpu::rails::{candidates, resolve};
use fabcheck::port::PortState;
use fabcheck::probe::{self, Inventory};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Output};
use std::time::Duration;

/// What a healthy rail measures, Gb/s (95% of the fixture's 400 Gb/s NDR ports).
pub const NORMAL_GBPS: f64 = 380.0;
pub const HANG_GUARD: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Default)]
pub struct Knobs {
    /// This device's bandwidth is a quarter of the others' (a bad NIC, cable or slot).
    pub slow: Option<String>,
    /// Every device slow (a host-side cause).
    pub all_slow: bool,
    /// This device's port is DOWN.
    pub down: Option<String>,
    /// Only the first N devices.
    pub devices: Option<usize>,
    /// Answers as fabcheck 0.2 did: no `rails` in the hello.
    pub old: bool,
}

struct Node {
    name: String,
    inventory: Inventory,
    knobs: Knobs,
}

impl Node {
    fn gbps(&self, device: &str) -> f64 {
        if self.knobs.all_slow || self.knobs.slow.as_deref() == Some(device) {
            NORMAL_GBPS / 4.0
        } else {
            NORMAL_GBPS
        }
    }
}

/// Starts a fake node; its endpoint is `tcp://ADDR`. The listener thread ends with the test
/// process (each test's nodes are few and idle once the controller is gone).
pub fn start(name: &str, knobs: Knobs) -> String {
    let root = super::fixtures_dir().join("gpu-hgx-healthy");
    let mut inventory = probe::inventory(&probe::Source::Sysfs(root), None).expect("the fixture's inventory");
    if let Some(n) = knobs.devices {
        inventory.devices.truncate(n);
    }
    if let Some(down) = &knobs.down {
        for d in inventory.devices.iter_mut().filter(|d| &d.name == down) {
            d.ports.iter_mut().for_each(|p| p.state = PortState::Down);
        }
    }
    super::listen_as(Node { name: name.into(), inventory, knobs }, serve)
}

fn error(cause: &str) -> Reply {
    Reply::Error { cause: cause.into(), remedy: "fake node".into() }
}

fn serve(stream: TcpStream, node: &Node) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut send = |reply: &Reply| writer.write_all(encode(reply).as_bytes());
    let (mut spec, mut device, mut passive_running): (Option<TestSpec>, String, bool) = (None, String::new(), false);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let Ok(request) = decode::<Request>(&line) else { return send(&error("bad request")) };
        match request {
            Request::Hello { .. } => {
                let agent = if node.knobs.old { "fabcheck 0.2.0" } else { "fabcheck 0.3.0" };
                send(&Reply::Hello {
                    agent: agent.into(),
                    host: node.name.clone(),
                    rails: !node.knobs.old,
                    collective: !node.knobs.old,
                    member_paths: !node.knobs.old,
                })?
            }
            Request::Inventory => send(&Reply::Inventory { inventory: node.inventory.clone() })?,
            Request::Rails { spec } => match resolve(&spec, &candidates(&node.inventory), None, None) {
                Ok(rails) => send(&Reply::Rails { rails, shared: Vec::new() })?,
                Err(e) => send(&error(&e.to_string()))?,
            },
            Request::Prepare { target, spec: s } => {
                let found =
                    node.inventory.ports().find(|(d, p)| target.device.as_deref().is_none_or(|want| want == d.name) && p.state == PortState::Active);
                let Some((d, p)) = found else {
                    send(&error("no ACTIVE port matches the target"))?;
                    continue;
                };
                device = d.name.clone();
                let endpoint = super::fake_endpoint(&node.name, d, p, &s, None);
                spec = Some(s);
                send(&Reply::Ready { endpoint })?;
            }
            Request::Connect { .. } => send(&Reply::Connected)?,
            Request::Run => {
                let Some(s) = &spec else {
                    send(&error("run before prepare"))?;
                    continue;
                };
                send(&Reply::Running)?;
                if s.role == Role::Passive {
                    passive_running = true;
                } else {
                    let bytes = u64::from(s.size) * s.iters * u64::from(s.qps);
                    let gbps = node.gbps(&device);
                    let elapsed_ns = (bytes as f64 * 8.0 / gbps).round() as u64;
                    send(&Reply::Done {
                        result: RunResult { iterations: s.iters, bytes, elapsed_ns, peak_gbps: Some(gbps), ..RunResult::default() },
                    })?;
                }
            }
            Request::Stop => {
                if std::mem::take(&mut passive_running) {
                    send(&Reply::Done { result: RunResult::default() })?;
                }
            }
            Request::Finish => {
                (spec, passive_running) = (None, false);
                send(&Reply::Finished)?;
            }
            Request::PrepareMember { .. } | Request::ConnectHops { .. } => send(&error("this fake agent runs no collective"))?,
            Request::Check => send(&error("this fake agent has no node to check"))?,
            Request::Bye => return send(&Reply::Bye),
        }
    }
}

fn pair(a: &str, b: &str, extra: &[&str]) -> Output {
    // 10^6 iterations: each rail reports a window of about 1.4 s (the fake does not wait),
    // so the controller's own skew between the rails' starts is noise in the union.
    let mut args = vec!["pair", a, b, "--json", "--tests", "write_bw", "--direction", "ab", "--iters", "1000000"];
    args.extend_from_slice(extra);
    super::fake_cluster::run_fabcheck(&args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn errors(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| (f["id"].as_str().unwrap().to_string(), f["subject"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn eight_healthy_rails_pass_with_a_node_aggregate() {
    let (a, b) = (start("nodeA", Knobs::default()), start("nodeB", Knobs::default()));
    let out = pair(&a, &b, &["--rails", "auto"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc:#}\n{}", stderr(&out));
    assert_eq!(doc["verdict"], "pass");
    let rails = doc["rails"].as_array().unwrap();
    assert_eq!(rails.len(), 8);
    for (k, r) in rails.iter().enumerate() {
        assert_eq!(r["rail"], k);
        assert_eq!(r["a"]["device"], format!("mlx5_{k}"));
        assert_eq!(r["b"]["device"], format!("mlx5_{k}"), "rail k of A with rail k of B");
        assert_eq!(r["results"].as_array().unwrap().len(), 1);
    }
    assert_eq!(doc["results"].as_array().unwrap().len(), 0, "top-level results empty with --rails");
    assert_eq!(doc["a"], rails[0]["a"], "top-level a is rail 0's");
    let agg = doc["aggregate"].as_array().unwrap();
    assert_eq!(agg.len(), 1);
    assert_eq!((agg[0]["test"].as_str(), agg[0]["direction"].as_str(), agg[0]["rails"].as_u64()), (Some("write_bw"), Some("a->b"), Some(8)));
    assert_eq!(agg[0]["capacity_gbps"], 3200.0);
    let total = agg[0]["bw_gbps"].as_f64().unwrap();
    assert!(total > 0.0 && total <= 8.0 * NORMAL_GBPS + 1.0, "{total}");
    assert!(agg[0]["msg_rate_mpps"].is_number());
}

#[test]
fn one_degraded_nic_is_named_as_its_rail() {
    let (a, b) = (start("nodeA", Knobs { slow: Some("mlx5_3".into()), ..Knobs::default() }), start("nodeB", Knobs::default()));
    let out = pair(&a, &b, &["--rails", "auto"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    let errors = errors(&doc);
    assert!(errors.contains(&("pair.rail".into(), "rail 3 (nodeA mlx5_3 <-> nodeB mlx5_3)".into())), "{errors:?}");
    assert!(errors.iter().all(|(_, s)| s == "rail 3 (nodeA mlx5_3 <-> nodeB mlx5_3)"), "only rail 3 named: {errors:?}");
    // The human table marks it.
    let human = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["pair", &a, &b, "--tests", "write_bw", "--direction", "ab", "--iters", "1000000", "--rails", "4"])
        .env_remove("FABCHECK_TOKEN")
        .env_remove("FABCHECK_FORMAT")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert_eq!(human.status.code(), Some(1), "{text}");
    let marked: Vec<&str> = text.lines().filter(|l| l.contains("<- bad rail")).collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(marked[0].contains("write_bw") && marked[0].split_whitespace().nth(3) == Some("3"), "{text}");
    assert!(text.lines().any(|l| l.split_whitespace().nth(3) == Some("node")), "a node total line: {text}");
    assert!(text.contains("FAIL (4 rails, bad: 3)"), "{text}");
}

/// Issue #57: `<- bad rail` also marked the slow rail's healthy latency rows, and the findings
/// repeated without their rail. Only the bad row is marked; every finding line names its rail.
#[test]
fn only_the_bad_rows_of_a_bad_rail_are_marked_and_findings_name_their_rail() {
    let (a, b) = (start("nodeA", Knobs { slow: Some("mlx5_3".into()), ..Knobs::default() }), start("nodeB", Knobs::default()));
    let human = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
        .args(["pair", &a, &b, "--tests", "write_bw,send_lat", "--direction", "ab", "--iters", "1000000", "--rails", "4"])
        .env_remove("FABCHECK_TOKEN")
        .env_remove("FABCHECK_FORMAT")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert_eq!(human.status.code(), Some(1), "{text}");
    let rail3: Vec<&str> = text.lines().filter(|l| l.split_whitespace().nth(3) == Some("3")).collect();
    assert!(rail3.iter().any(|l| l.starts_with("send_lat")), "a latency row of rail 3: {text}");
    for row in rail3 {
        assert_eq!(row.contains("<- bad rail"), row.starts_with("write_bw"), "{row}\n{text}");
    }
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("ERROR")).collect();
    assert!(!errors.is_empty() && errors.iter().all(|l| l.contains("rail 3")), "{text}");
}

#[test]
fn a_port_that_is_down_is_an_unreachable_rail_and_the_others_run() {
    let (a, b) = (start("nodeA", Knobs::default()), start("nodeB", Knobs { down: Some("mlx5_5".into()), ..Knobs::default() }));
    let out = pair(&a, &b, &["--rails", "all"]);
    let doc = super::json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc:#}\n{}", stderr(&out));
    assert_eq!(errors(&doc), [("pair.rail.unreachable".to_string(), "rail 5 (nodeA mlx5_5 <-> nodeB mlx5_5)".to_string())]);
    let rails = doc["rails"].as_array().unwrap();
    assert_eq!(rails.len(), 8, "the rail stays in the list");
    assert!(rails[5]["results"].as_array().unwrap().is_empty());
    assert!(rails.iter().enumerate().filter(|(k, _)| *k != 5).all(|(_, r)| r["results"].as_array().unwrap().len() == 1));
    assert_eq!(doc["aggregate"][0]["rails"], 7);
}

#[test]
fn prom_junit_and_oneline_carry_the_rail() {
    let (a, b) = (start("nodeA", Knobs { slow: Some("mlx5_2".into()), ..Knobs::default() }), start("nodeB", Knobs::default()));
    let run = |format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
            .args(["pair", &a, &b, "--tests", "write_bw", "--direction", "ab", "--iters", "1000000", "--rails", "4", "--format", format])
            .env_remove("FABCHECK_TOKEN")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{format}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let prom = run("prom");
    for k in 0..4 {
        assert!(prom.contains(&format!("rail=\"{k}\",test=\"write_bw\"")), "rail {k}: {prom}");
    }
    assert!(prom.contains("rail=\"node\""), "{prom}");
    crate::health_outputs::promtool("pair --rails", &prom);
    let junit = run("junit");
    crate::health_outputs::junit("pair --rails", &junit, &crate::health_outputs::scratch("rails"));
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let cases: Vec<roxmltree::Node> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    let rail2: Vec<&roxmltree::Node> =
        cases.iter().filter(|c| c.attribute("name").is_some_and(|n| n.starts_with("rail 2 (nodeA mlx5_2 <-> nodeB mlx5_2)"))).collect();
    assert_eq!(rail2.len(), 1, "{junit}");
    assert!(rail2[0].children().any(|n| n.has_tag_name("failure")), "{junit}");
    let rail1 = cases.iter().find(|c| c.attribute("name").is_some_and(|n| n.starts_with("rail 1 "))).expect("rail 1's case");
    assert!(!rail1.children().any(|n| n.has_tag_name("failure")), "{junit}");
    let oneline = run("oneline");
    assert!(oneline.starts_with("fabcheck pair FAIL: rail 2 (nodeA mlx5_2 <-> nodeB mlx5_2): pair.rail:"), "{oneline}");
}

#[test]
fn different_rail_counts_are_exit_2_naming_both() {
    let (a, b) = (start("nodeA", Knobs::default()), start("nodeB", Knobs { devices: Some(4), ..Knobs::default() }));
    let out = pair(&a, &b, &["--rails", "auto"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("has 8 rails") && err.contains("has 4"), "{err}");
}

#[test]
fn an_agent_older_than_0_3_is_exit_2_naming_its_version() {
    let (a, b) = (start("nodeA", Knobs::default()), start("nodeB", Knobs { old: true, ..Knobs::default() }));
    let out = pair(&a, &b, &["--rails", "auto"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("fabcheck 0.2.0"), "{}", stderr(&out));
    // Without --rails the same agent still serves a pair.
    let out = pair(&a, &b, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn rails_flags_are_checked_before_anything_runs() {
    for (flags, words) in [
        (&["--rails", "0"][..], "1 to 32"),
        (&["--rail-threshold", "50"][..], "give --rails too"),
        (&["--rails", "auto", "--rail-threshold", "150"][..], "from 1 to 99"),
        (&["--rails", "auto", "--cpu", "1,2:3"][..], "one per rail"),
        (&["--rails", "mlx5_0,mlx5_0"][..], "named twice"),
    ] {
        let out = pair("tcp://127.0.0.1:9", "tcp://127.0.0.1:9", flags);
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(stderr(&out).contains(words), "{flags:?}: {}", stderr(&out));
    }
}
