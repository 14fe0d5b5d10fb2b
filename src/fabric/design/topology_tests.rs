//! The topology reader on ibnetdiscover and ibsim files, `-g` output, hostile lines and the
//! deadline.

use super::*;

const IBNETDISCOVER: &str = r#"#
# Topology file: generated on Mon Nov 30 13:34:51 2026
vendid=0x0
devid=0x0
sysimgguid=0x200001
switchguid=0x200001(200001)
Switch	8 "S-0000000000200001"		# "Switch2" base port 0 lid 0 lmc 0
[1]	"H-0000000000100003"[1](100004) 		# "Hca2" lid 0 4xSDR
[3]	"S-0000000000200000"[3]		# "Switch1" lid 0 4xSDR

vendid=0x0
caguid=0x100003
Ca	2 "H-0000000000100003"		# "Hca2"
[1](100004) 	"S-0000000000200001"[1]		# lid 0 lmc 0 "Switch2" lid 0 4xSDR
"#;

#[test]
fn ibnetdiscover_output() {
    let t = parse("t", IBNETDISCOVER).unwrap();
    assert_eq!(t.links.len(), 2, "{:?}", t.links);
    let sw = &t.nodes["S-0000000000200001"];
    assert_eq!(sw.key, NodeKey { guid: Some(Guid(0x200001)), description: "Switch2".into() });
    assert!(sw.is_switch);
    assert_eq!(t.nodes["H-0000000000100003"].key.description, "Hca2");
    // Switch1 is only referenced: its key comes from the id's GUID and the comment.
    assert_eq!(t.nodes["S-0000000000200000"].key, NodeKey { guid: Some(Guid(0x200000)), description: "Switch1".into() });
}

/// What infiniband-diags writes to stderr, captured with `2>&1`, is refused saying what it
/// is (the discovery may be incomplete), not as an unknown line.
#[test]
fn a_captured_diagnostic_is_named() {
    for line in [
        "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110; Connection timed out",
        "ibwarn: [12345] mad_rpc_open_port: can't open UMAD port ((null):0)",
        "ibnetdiscover: iberror: failed: discover failed",
    ] {
        let text = format!("{line}\nSwitch 2 \"S-0000000000000001\" # \"s1\"\n");
        let e = parse("t.net", &text).unwrap_err().to_string();
        assert!(e.starts_with("t.net:1:") && e.contains("infiniband-diags printed") && e.contains("may be incomplete"), "{e}");
    }
    assert!(!is_diagnostic("Switch 36 \"S-0000000000000001\" # \"src/x.c:1; y\""));
}

/// `ibnetdiscover -g`'s shape (ibnetdiscover.c: `out_chassis`, the `# Spine Nodes` comments,
/// `out_ext_port`'s `[ext N]` at either end, `Non-Chassis Nodes`), as the man page's sample
/// (tests/fixtures/wild-fabrics/voltaire-sdr-grouped-manpage.net) opens.
#[test]
fn grouped_output() {
    let text = "#\n# Topology file: generated on Tue Jun  5 14:15:10 2007\n#\n\n\
                Chassis 1 (guid 0x8f104004125e5)\n\n# Spine Nodes\n\
                vendid=0x8f1\ndevid=0x5a31\nsysimgguid=0x8f104004125e5\t\t# Chassis 1 (core1)\n\
                switchguid=0x8f104004125e4(8f104004125e4)\t# ISR9288 Spine 1\n\
                Switch\t24 \"S-0008f104004125e4\"\t\t# \"ISR9288 Voltaire sFB-12D\" base port 0 lid 2 lmc 0\n\
                [1]\t\"S-0008f104004125e0\"[19]\t\t# \"ISR9288 Voltaire sLB-24D\" lid 3 4xDDR\n\n\
                # Line Nodes\n\
                Switch\t24 \"S-0008f104004125e0\"\t\t# \"ISR9288 Voltaire sLB-24D\" base port 0 lid 3 lmc 0\n\
                [19]\t\"S-0008f104004125e4\"[1]\t\t# \"ISR9288 Voltaire sFB-12D\" lid 2 4xDDR\n\
                [1][ext 1]\t\"H-0008f10403960558\"[1](8f10403960559) \t\t# \"node1 HCA-1\" lid 10 4xDDR\n\n\
                Non-Chassis Nodes\n\n\
                Ca\t2 \"H-0008f10403960558\"\t\t# \"node1 HCA-1\"\n\
                [1](8f10403960559) \t\"S-0008f104004125e0\"[1][ext 1]\t\t# lid 10 lmc 0 \"ISR9288 Voltaire sLB-24D\" lid 3 4xDDR\n";
    let t = parse("g", text).unwrap();
    assert_eq!(
        t.links,
        vec![
            ExpectedLink { a: ("S-0008f104004125e4".into(), 1), b: ("S-0008f104004125e0".into(), 19) },
            ExpectedLink { a: ("S-0008f104004125e0".into(), 1), b: ("H-0008f10403960558".into(), 1) },
        ]
    );
    assert_eq!(t.nodes.len(), 3);
    // Only those headings: another unknown word is still refused, and `[ext x]` is no port.
    assert!(matches!(parse("g", "Chassis one\n"), Err(TopologyError::Syntax { line: 1, .. })));
    assert!(matches!(parse("g", "Switch 8 \"a\"\n[1][ext x] \"b\"[1]\n"), Err(TopologyError::Syntax { line: 2, .. })));
}

#[test]
fn ibsim_style_names() {
    let t = parse("t", "width=15\nSwitch 8 \"leaf1\"\n[1] \"hostA\"[1] w=12\n\nHca 2 \"hostA\"\n[1] \"leaf1\"[1]\n").unwrap();
    assert_eq!(t.links, vec![ExpectedLink { a: ("leaf1".into(), 1), b: ("hostA".into(), 1) }]);
    assert_eq!(t.nodes["hostA"].key, NodeKey { guid: None, description: "hostA".into() });
}

#[test]
fn garbage_names_the_line() {
    for (text, line) in [
        ("Switch 8 \"a\"\n[1] b[2]\n", 2),
        ("hello world\n", 1),
        ("Switch x \"a\"\n", 1),
        ("[1] \"a\"[1]\n", 1),
        ("Switch 8 \"a\"\n[9] \"b\"[1]\n", 2),
        ("Switch 8 \"a\"\n[1] \"b\"[1]\n[1] \"c\"[1]\n", 3),
        ("Switch 8 \"a\"\nSwitch 8 \"a\"\n", 2),
        ("include other.net\n", 1),
        ("Switch 8 \"a\"\n[1] \"b\"[1] garbage\n", 2),
    ] {
        match parse("f", text) {
            Err(TopologyError::Syntax { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
    assert!(matches!(parse("f", "# only comments\n"), Err(TopologyError::Empty { .. })));
    let long = format!("Switch 8 \"{}\"\n", "x".repeat(MAX_LINE));
    assert!(matches!(parse("f", &long), Err(TopologyError::Syntax { line: 1, .. })));
}

/// A fat tree's leaves, `leaves` switches of `hosts` CAs each, written at both ends as
/// ibnetdiscover writes it.
fn big_fabric(leaves: usize, hosts: usize) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for l in 0..leaves {
        let _ = writeln!(out, "Switch\t{hosts} \"S-{:016x}\"\t\t# \"leaf{l}\" enhanced port 0 lid {} lmc 0", 0x10_0000 + l, l + 1);
        for h in 0..hosts {
            let _ = writeln!(out, "[{}]\t\"H-{:016x}\"[1]({:x})\t\t# \"n{l}-{h} mlx5_0\" lid 9 4xHDR", h + 1, l * hosts + h, l * hosts + h);
        }
        out.push('\n');
    }
    for l in 0..leaves {
        for h in 0..hosts {
            let _ = writeln!(out, "Ca\t1 \"H-{:016x}\"\t\t# \"n{l}-{h} mlx5_0\"", l * hosts + h);
            let _ = writeln!(out, "[1]({:x})\t\"S-{:016x}\"[{}]\t\t# lid 9 lmc 0 \"leaf{l}\" lid 1 4xHDR\n", l * hosts + h, 0x10_0000 + l, h + 1);
        }
    }
    out
}

#[test]
fn forty_thousand_links_parse_in_well_under_the_deadline() {
    // 0.2 kept each cable once by scanning every cable parsed so far: 14 s for this file.
    let text = big_fabric(200, 200);
    assert!(text.len() > 4 << 20 && (text.len() as u64) < MAX_BYTES, "{} bytes", text.len());
    let started = std::time::Instant::now();
    let t = parse("big", &text).unwrap();
    let took = started.elapsed();
    eprintln!("{} links parsed in {took:?}", t.links.len());
    assert_eq!(t.links.len(), 40_000);
    assert_eq!(t.nodes.len(), 40_200);
    // A generous bound: an unoptimised build takes about 3 s on a loaded machine; the
    // quadratic parser took 14 s optimised (minutes unoptimised).
    assert!(took < std::time::Duration::from_secs(30), "40k links took {took:?}");
}

#[test]
fn the_deadline_is_looked_at_while_parsing() {
    let text = big_fabric(20, 100);
    let lines = text.lines().count();
    let mut looks = 0;
    let err = parse_until("big", &text, || {
        looks += 1;
        looks == 3
    })
    .unwrap_err();
    assert_eq!(err, TopologyError::Deadline { path: "big".into(), line: 2 * LINES_PER_DEADLINE_CHECK + 1 });
    assert!(err.remedy().contains("--deadline"));
    // Never expiring, it looks once per LINES_PER_DEADLINE_CHECK lines, and parses it all.
    let mut looks = 0;
    parse_until("big", &text, || {
        looks += 1;
        false
    })
    .unwrap();
    assert_eq!(looks, lines.div_ceil(LINES_PER_DEADLINE_CHECK));
    // A deadline already past stops a file load before the first line.
    let dir = std::env::temp_dir().join(format!("fabcheck-topo-deadline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.net"), &text).unwrap();
    assert!(matches!(load_until(&dir.join("t.net"), Some(std::time::Instant::now())), Err(TopologyError::Deadline { line: 1, .. })));
    assert!(load_until(&dir.join("t.net"), None).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_streamed_file_reads_as_the_text_does() {
    let dir = std::env::temp_dir().join(format!("fabcheck-topo-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = big_fabric(30, 40);
    let file = dir.join("t.net");
    std::fs::write(&file, &text).unwrap();
    let streamed = load(&file).unwrap();
    assert_eq!(streamed, parse("t", &text).unwrap());
    assert_eq!(streamed.links.len(), 1200);
    // CRLF line ends and a last line without one.
    std::fs::write(&file, IBNETDISCOVER.replace('\n', "\r\n").trim_end()).unwrap();
    assert_eq!(load(&file).unwrap(), parse("t", IBNETDISCOVER).unwrap());
    // A line past the bound is named by its number, read no further than the bound.
    std::fs::write(&file, format!("# c\nSwitch 8 \"{}\"\n", "x".repeat(1 << 20))).unwrap();
    assert!(matches!(load(&file), Err(TopologyError::Syntax { line: 2, .. })));
    std::fs::write(&file, b"Switch 8 \"a\xff\"\n").unwrap();
    assert!(matches!(load(&file), Err(TopologyError::NotText { .. })));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_are_checked_before_opening() {
    let dir = std::env::temp_dir().join(format!("fabcheck-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(matches!(load(&dir), Err(TopologyError::NotAFile { kind: "a directory", .. })));
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert!(matches!(load(&fifo), Err(TopologyError::NotAFile { kind: "a FIFO", .. })));
    assert!(matches!(load(&dir.join("absent")), Err(TopologyError::Unreadable { .. })));
    let bin = dir.join("bin");
    std::fs::write(&bin, [0xff, 0xfe, 0x00]).unwrap();
    assert!(matches!(load(&bin), Err(TopologyError::NotText { .. })));
    let _ = std::fs::remove_dir_all(&dir);
}
