//! `collective --paths N` against fake agents living in this test process (RoCE, the
//! `roce-healthy-cx7` fixture): the plan each member is given asks N paths, each hop's endpoint
//! names N QPs, each hop's per-path figures are in the document (valid against docs/schemas),
//! one path below half its hop's other paths is `pair.path` naming its UDP source port and no
//! other, and an agent whose hello does not say `member_paths` is exit 2 naming its version.

use fabcheck::control::protocol::{decode, encode, Endpoint, HopPeer, Reply, Request};
use fabcheck::model::collective::{HopResult, MemberPlan, MemberResult};
use fabcheck::model::paths::{flow_label, flow_label_to_udp_sport, PathRun};
use fabcheck::probe::{self, Inventory};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

const FIXTURE: &str = "roce-healthy-cx7";

struct Agent {
    name: String,
    inventory: Inventory,
    /// Its hello says `member_paths` (a current agent) or not (an older one).
    paths: bool,
    /// Path `k` of this agent's outbound hops carries a quarter of the others' rate.
    slow_path: Option<u32>,
}

fn start(name: &str, paths: bool, slow_path: Option<u32>) -> String {
    let inventory = probe::inventory(&probe::Source::Sysfs(super::fixtures_dir().join(FIXTURE)), None).expect("the fixture's inventory");
    super::listen_as(Agent { name: name.into(), inventory, paths, slow_path }, serve)
}

fn endpoint(agent: &Agent, qpns: Vec<u32>, len: u64) -> Endpoint {
    let (d, p) = agent.inventory.ports().next().expect("a port in the fixture");
    Endpoint {
        host: agent.name.clone(),
        device: d.name.clone(),
        port: p.port as u8,
        lid: 0,
        gid_index: Some(3),
        gid: p.gids.first().map(|g| g.gid),
        qpns,
        psn: 0x1234,
        addr: 0x7f00_0000_0000,
        rkey: 0x42,
        len,
        mtu: p.active_mtu.unwrap_or(1024),
        link_layer: p.link_layer,
        rate_gbps: p.rate_gbps,
        ca_type: d.ca_type.clone(),
        max_rd_atomic: 1,
        cm_addr: None,
        pcie_gbps: None,
        trained_low: None,
        conditions: Default::default(),
        gpu: None,
    }
}

/// Every outbound hop at 380 Gb/s (95% of the fixture's 400 Gb/s port) over its paths (equal
/// shares), `slow_path` at a quarter of the others.
fn member_done(agent: &Agent, plan: &MemberPlan) -> Reply {
    let sends: u64 = plan.steps.iter().map(|s| s.times() * s.send.len() as u64).sum::<u64>() * plan.iters;
    let per_hop = sends / plan.outbound.len().max(1) as u64;
    let chunk = u64::from(plan.chunk_bytes);
    let n = u64::from(plan.paths);
    let hops = plan
        .outbound
        .iter()
        .map(|h| {
            let paths: Vec<PathRun> = if plan.paths > 1 {
                (0..plan.paths)
                    .map(|k| {
                        let bytes = per_hop / n * chunk;
                        let gbps = if agent.slow_path == Some(k) { 12.0 } else { 48.0 };
                        PathRun { flow_label: flow_label(k), bytes, elapsed_ns: (bytes as f64 * 8.0 / gbps) as u64 }
                    })
                    .collect()
            } else {
                Vec::new()
            };
            HopResult { hop: h.id, chunks: per_hop, bytes: per_hop * chunk, step_us: None, gbps: 380.0, paths }
        })
        .collect();
    let elapsed_ns = ((sends * chunk) as f64 * 8.0 / 380.0) as u64;
    Reply::MemberDone {
        result: MemberResult {
            member: plan.member,
            elapsed_ns: elapsed_ns.max(1),
            iterations: plan.iters,
            hops,
            counter_deltas: vec![],
            window: None,
        },
    }
}

fn serve(stream: TcpStream, agent: &Agent) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut send = |reply: &Reply| writer.write_all(encode(reply).as_bytes());
    let mut member: Option<MemberPlan> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let Ok(request) = decode::<Request>(&line) else { return send(&Reply::Error { cause: "bad request".into(), remedy: String::new() }) };
        match request {
            Request::Hello { .. } => send(&Reply::Hello {
                agent: if agent.paths { "fabcheck 0.5.1".into() } else { "fabcheck 0.5.0".into() },
                host: agent.name.clone(),
                rails: true,
                collective: true,
                member_paths: agent.paths,
            })?,
            Request::Inventory => send(&Reply::Inventory { inventory: agent.inventory.clone() })?,
            Request::PrepareMember { plan, .. } => {
                // A hop is one QP per path, as a real agent opens them.
                let hops = plan
                    .outbound
                    .iter()
                    .chain(&plan.inbound)
                    .map(|h| HopPeer {
                        hop: h.id,
                        endpoint: endpoint(agent, (0..plan.paths).map(|k| 0x100 + h.id.0 * 64 + k).collect(), u64::from(plan.chunk_bytes) * 8),
                    })
                    .collect();
                member = Some(plan);
                send(&Reply::MemberReady { hops })?;
            }
            Request::ConnectHops { .. } => send(&Reply::Connected)?,
            Request::Run => {
                send(&Reply::Running)?;
                match &member {
                    Some(plan) => send(&member_done(agent, plan))?,
                    None => send(&Reply::Error { cause: "run before prepare".into(), remedy: String::new() })?,
                }
            }
            Request::Finish => send(&Reply::Finished)?,
            Request::Bye => return send(&Reply::Bye),
            _ => send(&Reply::Error { cause: "this fake agent runs collective members only".into(), remedy: String::new() })?,
        }
    }
}

fn collective(endpoints: &[String], extra: &[&str]) -> (std::process::Output, Value) {
    let mut args = vec!["collective", "--op", "allreduce", "--size", "1M", "--iters", "64", "--json"];
    args.extend(endpoints.iter().map(String::as_str));
    args.extend_from_slice(extra);
    let out = super::fake_cluster::run_fabcheck(&args);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, doc)
}

fn port(k: u32) -> String {
    flow_label_to_udp_sport(flow_label(k)).to_string()
}

#[test]
fn one_bad_path_among_eight_is_named_by_its_port_and_the_document_validates() {
    let agents = vec![start("n0", true, None), start("n1", true, Some(5)), start("n2", true, None)];
    let (out, doc) = collective(&agents, &["--paths", "8"]);
    assert_eq!(out.status.code(), Some(1), "a bad path fails the run: {doc:#}\n{}", String::from_utf8_lossy(&out.stderr));
    let hops = doc["rings"][0]["hops"].as_array().expect("hops");
    assert_eq!(hops.len(), 3);
    for h in hops {
        let paths = h["paths"].as_array().expect("per-path figures on every hop");
        assert_eq!(paths.len(), 8);
        let ports: std::collections::BTreeSet<u64> = paths.iter().map(|p| p["udp_sport"].as_u64().unwrap()).collect();
        assert_eq!(ports.len(), 8, "eight distinct UDP source ports: {h}");
        for (k, p) in paths.iter().enumerate() {
            assert_eq!(p["udp_sport"].as_u64().map(|v| v.to_string()), Some(port(k as u32)));
            assert!(p["gbps"].as_f64().is_some_and(|g| g > 0.0));
        }
    }
    let named: Vec<&Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "pair.path").collect();
    assert_eq!(named.len(), 1, "{doc:#}");
    // Members are named by their endpoints: the hop the second agent sends on.
    assert!(named[0]["subject"].as_str().unwrap().starts_with(&agents[1]), "the hop n1 sends on: {}", named[0]);
    let text = format!("{} {}", named[0]["message"], named[0]["remedy"]);
    assert!(text.contains(&port(5)), "{text}");
    for k in (0..8).filter(|&k| k != 5) {
        assert!(!text.contains(&port(k)), "path {k} is good: {text}");
    }
    let dir = std::env::temp_dir().join(format!("fabcheck-collective-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("paths-8.json");
    std::fs::write(&file, &out.stdout).unwrap();
    // One path: no `paths` in the hops (the document as before), and the same schema.
    let (one, one_doc) = collective(&agents, &[]);
    assert_eq!(one.status.code(), Some(0), "{one_doc:#}");
    assert!(one_doc["rings"][0]["hops"].as_array().unwrap().iter().all(|h| h.get("paths").is_none()), "{one_doc:#}");
    let one_file = dir.join("paths-1.json");
    std::fs::write(&one_file, &one.stdout).unwrap();
    super::schemas::assert_valid("collective --paths documents", &[file, one_file]);
    std::fs::remove_dir_all(&dir).ok();
    // The human view lists the bad hop's paths by port.
    let human = super::fake_cluster::run_fabcheck(&[
        "collective",
        "--op",
        "allreduce",
        "--size",
        "1M",
        "--iters",
        "64",
        &agents[0],
        &agents[1],
        &agents[2],
        "--paths",
        "8",
    ]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains(&format!("UDP {}", port(5))) && text.contains("slow"), "{text}");
}

#[test]
fn an_agent_that_runs_one_path_per_hop_is_exit_2_naming_its_version() {
    let agents = vec![start("n0", true, None), start("old1", false, None), start("n2", true, None)];
    let (out, doc) = collective(&agents, &["--paths", "4"]);
    assert_eq!(out.status.code(), Some(2), "{doc:#}");
    let text = format!("{doc} {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("fabcheck 0.5.0") && text.contains("--paths"), "{text}");
    // Without --paths the older agent runs as before.
    let (out, doc) = collective(&agents, &[]);
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
}
