//! `fabcheck fabric` where there is no InfiniBand: bad input is refused before any MAD is
//! sent, and a node without a umad device gets exit 2 with what to do. (The subnet itself
//! is tested by the ibsim tier.)

use crate::fabcheck;

fn stderr_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.starts_with("fabcheck:") || l.starts_with("  what to do:")).map(String::from).collect()
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-fabric-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn topology_input_is_checked_before_any_mad() {
    let dir = temp("topo");
    std::fs::write(dir.join("garbage.net"), "Switch 8 \"leaf1\"\n[1] \"hostA\"[1]\nrm -rf /\n").unwrap();
    nix::unistd::mkfifo(&dir.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    for (file, cause) in [("garbage.net", "garbage.net:3:"), ("fifo", "not a regular file (a FIFO)"), ("absent", "cannot read topology")] {
        let path = dir.join(file).display().to_string();
        let started = std::time::Instant::now();
        let out = fabcheck(&["fabric", "--topology", &path]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(started.elapsed().as_secs() < 10, "{file} must not block");
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 2, "{file}: {lines:?}");
        assert!(lines[0].contains(cause), "{file}: {lines:?}");
        assert!(lines[1].contains("ibnetdiscover"), "{lines:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_ibdiagnet_capture_is_checked_before_any_mad() {
    let dir = temp("ibdiagnet");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::create_dir_all(dir.join("bad")).unwrap();
    std::fs::write(dir.join("bad/ibdiagnet2.db_csv"), "START_NODES\nNodeDesc,NodeType,NodeGUID\n\"leaf1\",2,nothex\nEND_NODES\n").unwrap();
    for (sub, cause) in [("empty", "cannot read ibdiagnet2.db_csv: no such file"), ("bad", "ibdiagnet2.db_csv line 3: NodeGUID is not hex")] {
        let path = dir.join(sub).display().to_string();
        let out = fabcheck(&["fabric", "--ibdiagnet", &path]);
        assert_eq!(out.status.code(), Some(2), "{sub}");
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 2, "{sub}: {lines:?}");
        assert!(lines[0].contains(cause), "{sub}: {lines:?}");
        assert!(lines[1].contains("ibdiagnet --sharp --congestion_control -r"), "{lines:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [&["fabric", "--expect", "bogus=1"][..], &["fabric", "--expect", "sm_standby=x"], &["fabric", "--ca", "a;b"]] {
        let out = fabcheck(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr_lines(&out).len(), 2, "{args:?}");
    }
    let out = fabcheck(&["fabric", "--port", "300"]);
    assert_eq!(out.status.code(), Some(2), "clap refuses a port above 255");
}

#[test]
fn no_umad_device_is_exit_2_with_what_to_do() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabcheck")).arg("fabric").env_remove("LD_PRELOAD").output().unwrap();
    if std::path::Path::new("/sys/class/infiniband_mad").exists() {
        // A real InfiniBand node: the run may pass or fail, but it runs.
        assert!(matches!(out.status.code(), Some(0..=2)));
        return;
    }
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 2, "{lines:?}");
    // Either the MAD libraries are missing (then the packages are named) or the device is.
    assert!(
        (lines[0].contains("cannot be loaded") && lines[1].contains("libibumad3 libibmad5 libibnetdisc5"))
            || (lines[0].contains("no InfiniBand management (umad) device") && lines[1].contains("modprobe ib_umad")),
        "{lines:?}"
    );
}

#[test]
fn the_binary_does_not_link_the_mad_libraries() {
    // The binary's own NEEDED entries (`readelf -d`, binutils); never a silent pass when the
    // tool is missing: `ldd` is the fallback, and neither is a failure.
    let binary = env!("CARGO_BIN_EXE_fabcheck");
    let needed = std::process::Command::new("readelf")
        .args(["-d", binary])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .or_else(|| std::process::Command::new("ldd").arg(binary).output().ok().filter(|o| o.status.success()))
        .expect("neither readelf (binutils) nor ldd could read the binary's dynamic section: install binutils");
    let text = String::from_utf8_lossy(&needed.stdout);
    assert!(text.contains("libc.so"), "the listing names no library at all, so it proves nothing:\n{text}");
    for lib in ["libibumad", "libibmad", "libibnetdisc"] {
        assert!(!text.contains(lib), "{lib} is linked; it must be loaded at run time:\n{text}");
    }
}

/// Fabric design (#32): a bad plan or rail map is exit 2 naming the line, before any MAD.
#[test]
fn plan_and_rail_map_are_checked_before_any_mad() {
    let dir = temp("plan");
    let header = "a_node,a_port,b_node,b_port\n";
    std::fs::write(dir.join("columns.csv"), "a_node,a_port,b_node\nleaf1,1,h1\n").unwrap();
    std::fs::write(dir.join("twice.csv"), format!("{header}leaf1,1,\"h1, rack 2\",1\nleaf1,1,h2,1\n")).unwrap();
    std::fs::write(dir.join("binary.csv"), [header.as_bytes(), b"leaf1,1,h\xff\x00,1\n"].concat()).unwrap();
    std::fs::File::create(dir.join("huge.csv")).unwrap().set_len((256 << 20) + 1).unwrap();
    nix::unistd::mkfifo(&dir.join("fifo.csv"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::write(dir.join("rails.csv"), "host,device,rail\ngpu1,mlx5_0,zero\n").unwrap();
    std::fs::write(dir.join("ok.csv"), format!("{header}leaf1,1,h1,1\n")).unwrap();
    let p = |f: &str| dir.join(f).display().to_string();
    for (args, cause) in [
        (vec!["--plan".to_string(), p("columns.csv")], "columns.csv:1: the header lacks b_port".to_string()),
        (vec!["--plan".into(), p("twice.csv")], "twice.csv:3: port 1 of 'leaf1' is already cabled on line 2".into()),
        (vec!["--plan".into(), p("binary.csv")], "binary.csv:2: not text".into()),
        (vec!["--plan".into(), p("huge.csv")], "is larger than".into()),
        (vec!["--plan".into(), p("fifo.csv")], "is not a regular file (a FIFO)".into()),
        (vec!["--rail-map".into(), p("rails.csv")], "rails.csv:2: rail 'zero' is not a number".into()),
        (vec!["--plan".into(), p("ok.csv"), "--topology".into(), p("ok.csv")], "both give the expected cabling".into()),
    ] {
        let mut all = vec!["fabric".to_string()];
        all.extend(args.iter().cloned());
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let started = std::time::Instant::now();
        let out = fabcheck(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(started.elapsed().as_secs() < 10, "{args:?} must not block");
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 2, "{args:?}: {lines:?}");
        assert!(lines[0].contains(&cause), "{args:?}: {lines:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
