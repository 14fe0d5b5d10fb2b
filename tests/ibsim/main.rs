//! The ibsim tier: `fabcheck fabric` against simulated InfiniBand subnets (ibsim + OpenSM +
//! umad2sim, no VM, no kernel pieces). Built with `cargo test --test ibsim` (test = false in
//! Cargo.toml so the host tier does not run it); run by tests/ibsim/run.sh.
//!
//! Each scenario asserts the exact findings (id, severity, subject naming both ends).

mod design;
mod harness;
mod qos;
mod route;

use harness::{errors, finding, findings, Sim};
use std::time::Instant;

/// Two leaves under a spine, two hosts per leaf; hostA first so OpenSM and fabcheck attach
/// at a host as on a real node. `width=15` enables 1X..12X everywhere (ibsim's default is
/// 4X only); speeds stay at ibsim's default (SDR enabled, QDR supported): a warning.
fn net(host_b_port: u8, host_a_opts: &str) -> String {
    format!(
        "width=15\n\n\
         Hca 2 \"hostA\"\n[1] \"leaf1\"[1] {host_a_opts}\n\n\
         Switch 8 \"spine1\"\n[1] \"leaf1\"[7]\n[2] \"leaf2\"[7]\n\n\
         Switch 8 \"leaf1\"\n[1] \"hostA\"[1]\n[{host_b_port}] \"hostB\"[1]\n[7] \"spine1\"[1]\n\n\
         Switch 8 \"leaf2\"\n[1] \"hostC\"[1]\n[2] \"hostD\"[1]\n[7] \"spine1\"[2]\n\n\
         Hca 2 \"hostB\"\n[1] \"leaf1\"[{host_b_port}]\n\n\
         Hca 2 \"hostC\"\n[1] \"leaf2\"[1]\n\n\
         Hca 2 \"hostD\"\n[1] \"leaf2\"[2]\n"
    )
}

fn healthy_net() -> String {
    net(2, "")
}

fn exit(out: &std::process::Output) -> i32 {
    out.status.code().expect("fabcheck exited by signal")
}

#[test]
fn healthy_fabric_passes_with_speed_warnings_only() {
    let mut sim = Sim::start("healthy", &healthy_net());
    sim.start_sm_and_wait();
    let out = sim.fabcheck(&["fabric", "--json"]);
    assert_eq!(exit(&out), 0, "{}", String::from_utf8_lossy(&out.stdout));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "fabcheck.fabric.v1");
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(doc["sm"]["state"], "MASTER");
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 7);
    let links = doc["links"].as_array().unwrap();
    assert_eq!(links.len(), 6);
    for l in links {
        assert_eq!((l["state"].as_str(), l["phys_state"].as_str(), l["width"].as_str()), (Some("ACTIVE"), Some("LINK_UP"), Some("12X")), "{l}");
        assert_eq!((l["speed"].as_str(), l["speed_supported"].as_str(), l["rate_gbps"].as_f64()), (Some("SDR"), Some("QDR"), Some(24.0)));
        assert!(l["counters"]["symbol_error"].is_u64(), "{l}");
        assert!(l["a"]["description"].is_string() && l["b"]["lid"].as_u64().unwrap() > 0);
    }
    // Exactly one warning per link: the enabled speed (SDR) below the supported (QDR).
    let all = findings(&doc);
    assert!(all.iter().all(|f| f.0 == "fabric.link.speed" && f.1 == "warning"), "{all:#?}");
    assert_eq!(all.len(), 6);
    assert!(all.iter().any(|f| f.2 == "spine1[1] <-> leaf1[7]"), "{all:#?}");

    // The expected cabling matches, by description (the ibsim file itself)...
    std::fs::write(sim.dir.join("expected.net"), healthy_net()).unwrap();
    let doc = sim.json(&["--topology", &sim.path("expected.net")]);
    assert!(findings(&doc).iter().all(|f| f.0 == "fabric.link.speed"), "{:#?}", findings(&doc));
    // ... and by GUID (what ibnetdiscover saves).
    let saved = std::process::Command::new("ibnetdiscover")
        .current_dir(&sim.dir)
        .env("LD_PRELOAD", harness::UMAD2SIM.as_str())
        .env("IBSIM_SOCKNAME", sim.sock())
        .output()
        .expect("run ibnetdiscover (infiniband-diags)");
    assert!(saved.status.success());
    std::fs::write(sim.dir.join("ibnetdiscover.out"), &saved.stdout).unwrap();
    let doc = sim.json(&["--topology", &sim.path("ibnetdiscover.out")]);
    assert!(findings(&doc).iter().all(|f| f.0 == "fabric.link.speed"), "{:#?}", findings(&doc));

    // Human output: a line per problem, then the per-switch table.
    let out = sim.fabcheck(&["fabric"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Switch leaf1 ") && text.contains("==> hostB[1]") && text.contains("PASS: 7 nodes (3 switches), 6 links"), "{text}");

    // HA expected, one SM: an error.
    let doc = sim.json(&["--expect", "sm_standby=1"]);
    assert_eq!(errors(&doc), vec![("fabric.sm".into(), "error".into(), "subnet".into())]);
}

#[test]
fn hdr_fabric_through_the_extended_speed_fields() {
    // ibsim's `extspeed=7` enables FDR, EDR and HDR (LinkSpeedExtSupported/Enabled/Active,
    // CapabilityMask IsExtendedSpeedsSupported); `speed=7` SDR..QDR. Every link trains 12X HDR.
    let net = healthy_net().replacen("width=15\n", "width=15\nspeed=7\nextspeed=7\n", 1);
    let mut sim = Sim::start("hdr", &net);
    sim.start_sm_and_wait();
    let out = sim.fabcheck(&["fabric", "--json", "--expect", "speed=HDR"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(exit(&out), 0, "{:#?}", findings(&doc));
    assert!(findings(&doc).is_empty(), "every end enables all it supports: {:#?}", findings(&doc));
    for l in doc["links"].as_array().unwrap() {
        let got = (l["width"].as_str(), l["speed"].as_str(), l["rate_gbps"].as_f64(), l["speed_supported"].as_str(), l["speed_enabled"].as_str());
        assert_eq!(got, (Some("12X"), Some("HDR"), Some(600.0), Some("HDR"), Some("HDR")), "{l}");
    }
    let out = sim.fabcheck(&["fabric"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("==( 12X HDR     600 Gb/s ACTIVE/LINK_UP )==> hostB[1]"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn no_subnet_manager() {
    let sim = Sim::start("nosm", &healthy_net());
    let out = sim.fabcheck(&["fabric", "--json"]);
    assert_eq!(exit(&out), 1);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(errors(&doc), vec![("fabric.sm".into(), "error".into(), "subnet".into())]);
    assert!(doc["sm"].is_null());
    let f = finding(&doc, "fabric.sm", "subnet");
    assert!(f["message"].as_str().unwrap().contains("no master subnet manager"), "{f}");
    assert!(f["remedy"].as_str().unwrap().contains("systemctl enable --now opensm"));
    assert!(doc["links"].as_array().unwrap().iter().all(|l| l["state"] == "INIT"));
}

/// The link of a host (its only cable) in a fabric document.
fn host_link<'a>(doc: &'a serde_json::Value, host: &str) -> &'a serde_json::Value {
    doc["links"].as_array().unwrap().iter().find(|l| l["b"]["description"] == host).unwrap_or_else(|| panic!("no link to {host}"))
}

#[test]
fn port_trained_narrower() {
    let mut sim = Sim::start("narrow", &healthy_net());
    sim.start_sm_and_wait();
    // leaf1's port to hostA is set to enable 1X only (as a port profile would): the link
    // retrains at 1X although both ends support 12X. (ibsim 0.10 always trains at the best
    // width both ends enable, so a lane fault proper, active below that, is covered by the
    // unit tests on constructed PortInfo.)
    let lid = host_link(&sim.json(&[]), "hostA")["a"]["lid"].to_string();
    let out = sim.tool("ibportstate", &[&lid, "1", "width", "1"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("LinkWidthEnabled"), "{}", String::from_utf8_lossy(&out.stderr));
    sim.wait_for("hostA's link to train 1X", std::time::Duration::from_secs(30), |s| host_link(&s.json(&[]), "hostA")["width"] == "1X");
    let doc = sim.json(&[]);
    assert_eq!(doc["verdict"], "pass", "a width configured down is a warning: {:#?}", errors(&doc));
    let f = finding(&doc, "fabric.link.width", "leaf1[1] <-> hostA[1]");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["message"], "runs 1X SDR (2 Gb/s); both ends support 12X SDR (24 Gb/s) but the enabled widths stop at 1X");
    let link = host_link(&doc, "hostA");
    assert_eq!((link["width"].as_str(), link["width_supported"].as_str(), link["width_enabled"].as_str()), (Some("1X"), Some("12X"), Some("1X")));
    // Expected at least 4X: an error naming both ends.
    let out = sim.fabcheck(&["fabric", "--json", "--expect", "width=4X"]);
    assert_eq!(exit(&out), 1);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(errors(&doc), vec![("fabric.link.width".into(), "error".into(), "leaf1[1] <-> hostA[1]".into())]);
}

#[test]
fn pulled_cable_against_expected_topology() {
    let mut sim = Sim::start("pulled", &healthy_net());
    sim.start_sm_and_wait();
    std::fs::write(sim.dir.join("expected.net"), healthy_net()).unwrap();
    sim.console("Unlink \"hostB\"[1]");
    let out = sim.fabcheck(&["fabric", "--json", "--topology", &sim.path("expected.net")]);
    assert_eq!(exit(&out), 1);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(errors(&doc), vec![("fabric.link.down".into(), "error".into(), "leaf1[2] <-> hostB[1]".into())]);
    let msg = finding(&doc, "fabric.link.down", "leaf1[2] <-> hostB[1]")["message"].as_str().unwrap().to_string();
    assert!(msg.contains("leaf1[2] is DOWN/POLLING") && msg.contains("not discovered: hostB"), "{msg}");
    // Plugged back in: healthy again once the SM has brought it up.
    sim.console("ReLink \"hostB\"[1]");
    sim.wait_settled();
    let doc = sim.json(&["--topology", &sim.path("expected.net")]);
    assert!(errors(&doc).is_empty(), "{:#?}", errors(&doc));
}

#[test]
fn miswired_cable() {
    // hostB's cable sits in leaf1[3] instead of leaf1[2].
    let mut sim = Sim::start("miswired", &net(3, ""));
    sim.start_sm_and_wait();
    std::fs::write(sim.dir.join("expected.net"), healthy_net()).unwrap();
    let doc = sim.json(&["--topology", &sim.path("expected.net")]);
    assert_eq!(errors(&doc), vec![("fabric.topology.miswired".into(), "error".into(), "leaf1[2] <-> hostB[1]".into())]);
    let msg = finding(&doc, "fabric.topology.miswired", "leaf1[2] <-> hostB[1]")["message"].as_str().unwrap().to_string();
    assert_eq!(msg, "expected this cable, but hostB[1] is cabled to leaf1[3]");
    assert!(findings(&doc).iter().all(|f| f.0 != "fabric.topology.extra"), "the moved cable is explained, not extra");
}

#[test]
fn error_counters_from_performance_set() {
    let mut sim = Sim::start("counters", &healthy_net());
    sim.start_sm_and_wait();
    sim.console("PerformanceSet \"hostB\"[1] PortCounters.SymbolErrorCounter=900");
    sim.console("PerformanceSet \"leaf2\"[7] PortCounters.PortXmitDiscards=500");
    let out = sim.fabcheck(&["fabric", "--json"]);
    assert_eq!(exit(&out), 1);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(errors(&doc), vec![("fabric.errors".into(), "error".into(), "leaf1[2] <-> hostB[1]".into())]);
    assert_eq!(finding(&doc, "fabric.errors", "leaf1[2] <-> hostB[1]")["message"], "at hostB[1]: SymbolErrorCounter 900 (> 10)");
    let w = finding(&doc, "fabric.errors", "spine1[2] <-> leaf2[7]");
    assert_eq!((w["severity"].as_str(), w["message"].as_str()), (Some("warning"), Some("at leaf2[7]: PortXmitDiscards 500 (> 100)")));
    let link = doc["links"].as_array().unwrap().iter().find(|l| l["b"]["description"] == "hostB").unwrap().clone();
    assert_eq!(link["counters"]["symbol_error"], 900);
    assert_eq!(link["b"]["counters"]["symbol_error"], 900);
    // Thresholds from --expect.
    let out = sim.fabcheck(&["fabric", "--json", "--expect", "symbol_error=1000", "--expect", "xmit_discards=1000"]);
    assert_eq!(exit(&out), 0);
    // Reading never clears; --reset-counters does.
    assert_eq!(errors(&sim.json(&[])).len(), 1, "counters were not cleared by reading");
    let out = sim.fabcheck(&["fabric", "--json", "--reset-counters"]);
    assert_eq!(exit(&out), 1, "the run that resets still reports what it read");
    assert!(errors(&sim.json(&[])).is_empty(), "{:#?}", findings(&sim.json(&[])));
}

#[test]
fn node_dropping_mads_is_reported_not_hung_on() {
    let mut sim = Sim::start("drops", &healthy_net());
    sim.start_sm_and_wait();
    sim.console("Error \"hostD\" 100");
    let started = Instant::now();
    let out = sim.fabcheck(&["fabric", "--json", "--timeout-ms", "200", "--retries", "1"]);
    let took = started.elapsed();
    eprintln!("fabric with a node dropping every MAD: {took:?}");
    assert!(took.as_secs() < 30, "took {took:?}");
    assert_eq!(exit(&out), 1);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(errors(&doc), vec![("fabric.unreachable".into(), "error".into(), "leaf2[2] <-> ?".into())]);
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 6);
    // With the expected cabling, the silent node is named.
    std::fs::write(sim.dir.join("expected.net"), healthy_net()).unwrap();
    let doc = sim.json(&["--timeout-ms", "200", "--retries", "1", "--topology", &sim.path("expected.net")]);
    assert_eq!(errors(&doc), vec![("fabric.unreachable".into(), "error".into(), "leaf2[2] <-> hostD[1]".into())]);
}

#[test]
fn standby_sm_satisfies_ha() {
    let mut sim = Sim::start("standby", &healthy_net());
    sim.start_sm(None, 10);
    sim.wait_settled();
    sim.start_sm(Some("hostC"), 1);
    sim.wait_for("a standby SM", std::time::Duration::from_secs(60), |s| {
        s.json(&[])["sm"]["standby"].as_array().is_some_and(|v| v.iter().any(|x| x["state"] == "STANDBY"))
    });
    let out = sim.fabcheck(&["fabric", "--json", "--expect", "sm_standby=1"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(exit(&out), 0, "{:#?}", findings(&doc));
    assert_eq!(doc["sm"]["priority"], 10);
    assert_eq!(doc["sm"]["standby"][0]["priority"], 1);
}

#[test]
fn bad_input_is_exit_2_with_cause_and_remedy() {
    let mut sim = Sim::start("badinput", &healthy_net());
    sim.start_sm_and_wait();
    let dir = sim.dir.clone();
    std::fs::write(dir.join("garbage.net"), "Switch 8 \"leaf1\"\nthis is not a cable\n").unwrap();
    std::fs::write(dir.join("binary.net"), [0xffu8, 0xfe, 0, 1]).unwrap();
    nix::unistd::mkfifo(&dir.join("fifo.net"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--topology".into(), sim.path("garbage.net")], "garbage.net:2:"),
        (vec!["--topology".into(), sim.path("binary.net")], "not text"),
        (vec!["--topology".into(), sim.path("fifo.net")], "not a regular file (a FIFO)"),
        (vec!["--topology".into(), dir.display().to_string()], "not a regular file (a directory)"),
        (vec!["--topology".into(), sim.path("absent.net")], "cannot read topology"),
        (vec!["--ca".into(), "mlx5_9".into()], "no umad device named 'mlx5_9' (present: ibsim0)"),
        (vec!["--port".into(), "9".into()], "has no port 9"),
        (vec!["--expect".into(), "bogus=1".into()], "unknown key 'bogus'"),
    ];
    for (args, cause) in cases {
        let mut all = vec!["fabric".to_string()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let started = Instant::now();
        let out = sim.fabcheck(&refs);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(exit(&out), 2, "{refs:?}: {stderr}");
        assert!(started.elapsed().as_secs() < 10, "{refs:?} took {:?}", started.elapsed());
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("fabcheck:") || l.starts_with("  what to do:")).collect();
        assert_eq!(lines.len(), 2, "{refs:?}: one line of cause, one of remedy:\n{stderr}");
        assert!(lines[0].contains(cause), "{refs:?}: {stderr}");
    }
    // The local port's cable pulled: nothing to discover from here.
    sim.console("Unlink \"hostA\"[1]");
    let out = sim.fabcheck(&["fabric"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(exit(&out), 2, "{stderr}");
    assert!(stderr.contains("ibsim0 port 1 is DOWN") && stderr.contains("reseat this port's cable"), "{stderr}");
    // No umad device at all (no LD_PRELOAD, on a machine without InfiniBand).
    if !std::path::Path::new("/sys/class/infiniband_mad").exists() {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabcheck")).args(["fabric"]).env_remove("LD_PRELOAD").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("no InfiniBand management (umad) device") && stderr.contains("modprobe ib_umad"), "{stderr}");
    }
}

#[test]
fn a_few_hundred_nodes() {
    // A two-level fat tree: 8 spines, 16 leaves, 18 hosts per leaf = 312 nodes, 416 cables.
    let (spines, leaves, hosts) = (8, 16, 18);
    let mut net = String::from("width=15\n\n");
    for h in 0..leaves * hosts {
        net += &format!("Hca 2 \"host{h:03}\"\n[1] \"leaf{:02}\"[{}]\n\n", h / hosts, h % hosts + 1);
    }
    for l in 0..leaves {
        net += &format!("Switch 36 \"leaf{l:02}\"\n");
        for p in 0..hosts {
            net += &format!("[{}] \"host{:03}\"[1]\n", p + 1, l * hosts + p);
        }
        for s in 0..spines {
            net += &format!("[{}] \"spine{s}\"[{}]\n", hosts + 1 + s, l + 1);
        }
        net += "\n";
    }
    for s in 0..spines {
        net += &format!("Switch 36 \"spine{s}\"\n");
        for l in 0..leaves {
            net += &format!("[{}] \"leaf{l:02}\"[{}]\n", l + 1, hosts + 1 + s);
        }
        net += "\n";
    }
    let mut sim = Sim::start("big", &net);
    let t = Instant::now();
    sim.start_sm_and_wait();
    eprintln!("OpenSM brought {} nodes up in {:?}", spines + leaves + leaves * hosts, t.elapsed());
    std::fs::write(sim.dir.join("expected.net"), &net).unwrap();
    let started = Instant::now();
    let out = sim.fabcheck(&["fabric", "--json", "--topology", &sim.path("expected.net")]);
    let took = started.elapsed();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    println!(
        "big fabric: {} nodes, {} links: fabcheck fabric --json --topology took {took:?}",
        doc["nodes"].as_array().unwrap().len(),
        doc["links"].as_array().unwrap().len()
    );
    eprintln!("big fabric: fabcheck fabric --json --topology took {took:?} (elapsed_ms {})", doc["elapsed_ms"]);
    assert_eq!(exit(&out), 0, "{:#?}", errors(&doc));
    assert_eq!(doc["nodes"].as_array().unwrap().len(), spines + leaves + leaves * hosts);
    assert_eq!(doc["links"].as_array().unwrap().len(), leaves * hosts + leaves * spines);
    assert!(findings(&doc).iter().all(|f| f.0 == "fabric.link.speed" && f.1 == "warning"));
    // And a fault in it is still named: one cable pulled.
    sim.console("Unlink \"host100\"[1]");
    let doc = sim.json(&["--topology", &sim.path("expected.net")]);
    assert_eq!(errors(&doc), vec![("fabric.link.down".into(), "error".into(), "host100[1] <-> leaf05[11]".into())]);
}

#[test]
fn duplicate_lids() {
    let mut sim = Sim::start("lids", &healthy_net());
    sim.start_sm_and_wait();
    let doc = sim.json(&[]);
    let lid_b = host_link(&doc, "hostB")["b"]["lid"].as_u64().unwrap();
    // Changed behind the SM's back (it corrects it at its next sweep, seconds later). ibsim
    // refuses LID 0, so "ACTIVE without a LID" is covered by the unit tests.
    sim.console(&format!("Baselid \"hostC\"[1] {lid_b}"));
    let doc = sim.json(&[]);
    let lid = errors(&doc);
    assert_eq!(lid.len(), 1, "{lid:#?}");
    assert_eq!(lid[0].0, "fabric.lid");
    assert!(lid[0].2.contains("hostB[1]") && lid[0].2.contains("hostC[1]"), "{lid:?}");
    let msg = finding(&doc, "fabric.lid", &lid[0].2)["message"].as_str().unwrap().to_string();
    assert!(msg.starts_with(&format!("LID {lid_b} is assigned to 2 ports")), "{msg}");
}

#[test]
fn soak_judges_what_rose_in_the_window_not_lifetime_totals() {
    let mut sim = Sim::start("soak", &healthy_net());
    sim.start_sm_and_wait();
    // A lifetime total from before the window: without --soak it is an error.
    sim.console("PerformanceSet \"hostB\"[1] PortCounters.SymbolErrorCounter=900");
    assert_eq!(errors(&sim.json(&[])).len(), 1);
    // The first read takes well under a second on this fabric; the counters move 3 s into an
    // 8 s window (wall time only as a generous ordering bound, not asserted).
    let out = sim.fabcheck_during(&["fabric", "--json", "--soak", "8s", "--deadline", "60"], |sim| {
        std::thread::sleep(std::time::Duration::from_secs(3));
        sim.console("PerformanceSet \"hostC\"[1] PortCounters.SymbolErrorCounter=50");
        // hostB's counter cleared during the window: said, not judged.
        sim.console("PerformanceSet \"hostB\"[1] PortCounters.SymbolErrorCounter=5");
        // leaf2's port to hostD waited for credits during the window, and so did hostA's,
        // where the SM runs.
        sim.console("PerformanceSet \"leaf2\"[2] PortCounters.PortXmitWait=4000");
        sim.console("PerformanceSet \"hostA\"[1] PortCounters.PortXmitWait=300");
    });
    assert_eq!(exit(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Only the counter raised during the window is an error; hostB's 900 are old.
    assert_eq!(errors(&doc), vec![("fabric.errors".into(), "error".into(), "leaf2[1] <-> hostC[1]".into())], "{:#?}", findings(&doc));
    assert_eq!(finding(&doc, "fabric.errors", "leaf2[1] <-> hostC[1]")["message"], "at hostC[1]: SymbolErrorCounter 50 (> 10)");
    let window = finding(&doc, "soak.window", "fabric");
    assert!(window["message"].as_str().unwrap().contains("s apart (soak window)"), "{window}");
    let said = finding(&doc, "soak.counters", "fabric");
    assert_eq!(said["severity"], "info");
    assert!(said["message"].as_str().unwrap().contains("hostB port 1: SymbolErrorCounter went down (900 to 5: cleared)"), "{said}");
    // fabric.congestion: info, named by its link. ibsim does not answer PortSamplesControl, so
    // the wait is said in ticks and why (a share of the window is tested on constructed
    // payloads: fabric::phy's tests).
    let waited = finding(&doc, "fabric.congestion", "leaf2[2] <-> hostD[1]");
    assert_eq!(waited["severity"], "info");
    let message = waited["message"].as_str().unwrap();
    assert!(message.starts_with("at leaf2[2]: PortXmitWait rose by 4000 ticks in the "), "{message}");
    assert!(message.contains("PortSamplesControl did not answer"), "{message}");
    // The SM's port is not asked: ibsim would hand the query to OpenSM, which dies of it.
    let sm_port = finding(&doc, "fabric.congestion", "leaf1[1] <-> hostA[1]")["message"].as_str().unwrap().to_string();
    assert!(sm_port.contains("300 ticks") && sm_port.contains("an SM runs behind the node's PerfMgt address"), "{sm_port}");
    assert_eq!(findings(&doc).iter().filter(|f| f.0 == "fabric.congestion").count(), 2, "{:#?}", findings(&doc));
    assert_eq!(sim.json(&[])["sm"]["state"], "MASTER", "the SM outlives the window's reads");
}
