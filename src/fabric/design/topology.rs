//! The expected cabling, read from an `ibnetdiscover`-format file (what `ibnetdiscover`
//! prints and `ibsim` reads):
//!
//! ```text
//! Switch  36 "S-0002c90300a1b2c3"   # "leaf1" enhanced port 0 lid 1 lmc 0
//! [1]     "H-0002c90300001234"[1](2c90300001235)   # "node01 HCA-1" lid 5 4xHDR
//! Ca      2 "H-0002c90300001234"    # "node01 HCA-1"
//! [1](2c90300001235)  "S-0002c90300a1b2c3"[1]   # lid 5 lmc 0 "leaf1" lid 1 4xHDR
//! ```
//!
//! A node id of the form `S-`/`H-`/`R-` + 16 hex digits carries its GUID; otherwise the node
//! is known by its description (the `# "..."` comment, or the id itself as in ibsim files).
//! The file is untrusted input: it must be a regular file (checked before opening, so a FIFO
//! cannot hang the run), is read through a size cap, and every line is bounded.

use crate::mad::attributes::Guid;
use crate::model::Unparsed;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Instant;

/// Larger files are refused: a 10k-node fabric is ~5 MiB of ibnetdiscover output, a
/// 100,000-node one ~45 MiB (benches/topology.sh); 0.4 takes up to 256 MiB.
pub const MAX_BYTES: u64 = 256 << 20;
pub const MAX_LINE: usize = 4096;
/// Lines parsed between two looks at the deadline (a look is cheap; a line is microseconds).
pub const LINES_PER_DEADLINE_CHECK: usize = 1024;

/// How a node in the file is identified.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeKey {
    pub guid: Option<Guid>,
    pub description: String,
}

/// One node record of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedNode {
    pub id: String,
    pub key: NodeKey,
    pub is_switch: bool,
    pub ports: u8,
}

/// One cable: `(node id, port)` at each end, ends in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedLink {
    pub a: (String, u8),
    pub b: (String, u8),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Topology {
    pub nodes: BTreeMap<String, ExpectedNode>,
    pub links: Vec<ExpectedLink>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read topology {path}: {error}")]
    Unreadable { path: String, error: String },
    #[error("topology {path} is not a regular file ({kind})")]
    NotAFile { path: String, kind: &'static str },
    #[error("topology {path} is larger than {limit} bytes")]
    TooLarge { path: String, limit: u64 },
    #[error("topology {path} is not text (invalid UTF-8)")]
    NotText { path: String },
    #[error("{path}:{line}: {why}")]
    Syntax { path: String, line: usize, why: String },
    #[error("topology {path} has no nodes")]
    Empty { path: String },
    #[error("topology {path} was not parsed within the deadline (stopped at line {line})")]
    Deadline { path: String, line: usize },
}

impl TopologyError {
    pub fn remedy(&self) -> &'static str {
        match self {
            TopologyError::Deadline { .. } => "raise --deadline, or give a smaller file (one fabric's ibnetdiscover output)",
            _ => "give an ibnetdiscover-format file (save one from a healthy fabric with `ibnetdiscover > topo.net`)",
        }
    }
}

/// Reads (through the one bounded reader: regular files only, at most [`MAX_BYTES`]) and
/// parses a topology file.
pub fn load(path: &Path) -> Result<Topology, TopologyError> {
    load_until(path, None)
}

/// [`load`], giving up (an error, not a partial topology) once `deadline` has passed.
pub fn load_until(path: &Path, deadline: Option<Instant>) -> Result<Topology, TopologyError> {
    use crate::sys::fs::{read_text, ReadError};
    let shown = path.display().to_string();
    let text = read_text(path, MAX_BYTES).map_err(|e| match e {
        ReadError::NotRegular { kind, .. } => TopologyError::NotAFile { path: shown.clone(), kind },
        ReadError::TooLarge { .. } => TopologyError::TooLarge { path: shown.clone(), limit: MAX_BYTES },
        ReadError::NotText { .. } => TopologyError::NotText { path: shown.clone() },
        other => TopologyError::Unreadable { path: shown.clone(), error: other.reason() },
    })?;
    parse_until(&shown, &text, || deadline.is_some_and(|d| Instant::now() >= d))
}

/// Parses the text of a topology file; `path` only names it in errors.
pub fn parse(path: &str, text: &str) -> Result<Topology, TopologyError> {
    parse_until(path, text, || false)
}

/// Parses the text of a topology file, asking `expired` every [`LINES_PER_DEADLINE_CHECK`]
/// lines whether time is up (the caller's clock: tests count the calls). Linear in the file:
/// every lookup in the per-line loop is a map or set lookup, never a scan of what was parsed.
pub fn parse_until(path: &str, text: &str, mut expired: impl FnMut() -> bool) -> Result<Topology, TopologyError> {
    let mut topo = Topology::default();
    // Each cable appears at both of its ends: the ends kept so far, to keep it once.
    let mut cabled: HashSet<((String, u8), (String, u8))> = HashSet::new();
    let mut current: Option<String> = None;
    // Remote ends' descriptions from comments, for ids the file never defines as nodes.
    let mut remote_desc: BTreeMap<String, String> = BTreeMap::new();
    let mut seen_ports: BTreeMap<(String, u8), usize> = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        if index % LINES_PER_DEADLINE_CHECK == 0 && expired() {
            return Err(TopologyError::Deadline { path: path.to_string(), line: line_no });
        }
        let err = |why: String| TopologyError::Syntax { path: path.to_string(), line: line_no, why };
        if raw.len() > MAX_LINE {
            return Err(err(format!("line longer than {MAX_LINE} characters")));
        }
        let line = raw.trim();
        if line.is_empty() {
            current = None;
            continue;
        }
        if line.starts_with('#') || is_setting(line) {
            continue;
        }
        if line.starts_with("include ") || line.starts_with("do ") {
            return Err(err(format!("'{}' is an ibsim directive, not cabling: give the expanded file", first_word(line))));
        }
        if line.starts_with('[') {
            let node = current.clone().ok_or_else(|| err("a port line outside a node record".into()))?;
            let (port, remote, remote_port, desc) = parse_port_line(line).map_err(|e| err(e.0))?;
            let local_ports = topo.nodes.get(&node).map_or(0, |n| n.ports);
            if port > local_ports {
                return Err(err(format!("port {port} but node \"{}\" has {local_ports} ports", crate::sanitise::one_line(&node))));
            }
            if let Some(prev) = seen_ports.insert((node.clone(), port), line_no) {
                return Err(err(format!("port {port} of \"{}\" is already cabled on line {prev}", crate::sanitise::one_line(&node))));
            }
            if let Some(d) = desc {
                remote_desc.entry(remote.clone()).or_insert(d);
            }
            let link = ExpectedLink { a: (node, port), b: (remote, remote_port) };
            // Each cable appears at both of its ends; keep it once.
            if !cabled.contains(&(link.b.clone(), link.a.clone())) {
                cabled.insert((link.a.clone(), link.b.clone()));
                topo.links.push(link);
            }
            continue;
        }
        let (kind, rest) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| err("the line is neither a node nor a port line (not shown: fabcheck never quotes a file's text)".into()))?;
        let is_switch = match kind.to_ascii_lowercase().as_str() {
            "switch" => true,
            "ca" | "hca" | "rt" | "router" => false,
            _ => {
                return Err(err(
                    "the line is neither a node (Switch, Ca, Hca, Rt) nor a port line (not shown: fabcheck never quotes a file's text)".into()
                ))
            }
        };
        let rest = rest.trim_start();
        let (count, rest) = rest.split_once(char::is_whitespace).ok_or_else(|| err("a node line needs a port count and a quoted id".into()))?;
        let ports: u8 = count.parse().ok().filter(|&n| n > 0).ok_or_else(|| err("the node's port count is not 1..255".into()))?;
        let (id, rest) = quoted(rest.trim_start()).ok_or_else(|| err("a node id must be quoted: Switch 36 \"leaf1\"".into()))?;
        if id.is_empty() {
            return Err(err("empty node id".into()));
        }
        let description = comment_description(rest).unwrap_or_else(|| id.clone());
        let key = NodeKey { guid: guid_of_id(&id), description };
        if topo.nodes.contains_key(&id) {
            return Err(err(format!("node \"{}\" is defined twice", crate::sanitise::one_line(&id))));
        }
        topo.nodes.insert(id.clone(), ExpectedNode { id: id.clone(), key, is_switch, ports });
        current = Some(id);
    }
    if topo.nodes.is_empty() {
        return Err(TopologyError::Empty { path: path.to_string() });
    }
    // Ends that name ids the file never defines (a partial file) still get a key.
    for link in &topo.links {
        let id = &link.b.0;
        if !topo.nodes.contains_key(id) {
            let description = remote_desc.get(id).cloned().unwrap_or_else(|| id.clone());
            let key = NodeKey { guid: guid_of_id(id), description };
            topo.nodes.insert(id.clone(), ExpectedNode { id: id.clone(), key, is_switch: id.starts_with("S-"), ports: link.b.1 });
        }
    }
    Ok(topo)
}

/// `vendid=0x2c9`, `switchguid=0x...(...)`, ibsim's `width=15`: settings, not cabling.
fn is_setting(line: &str) -> bool {
    let word = first_word(line);
    word.split_once('=').is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn first_word(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// Splits `"text" rest` into (text, rest).
fn quoted(text: &str) -> Option<(String, &str)> {
    let inner = text.strip_prefix('"')?;
    let end = inner.find('"')?;
    Some((inner[..end].to_string(), &inner[end + 1..]))
}

/// `[N]` at the start: (N, rest).
fn bracketed(text: &str) -> Option<(u8, &str)> {
    let inner = text.strip_prefix('[')?;
    let end = inner.find(']')?;
    let n = inner[..end].trim().parse().ok()?;
    Some((n, &inner[end + 1..]))
}

/// Skips an optional `(hexguid)`.
fn skip_parenthesised(text: &str) -> Result<&str, Unparsed> {
    let text = text.trim_start();
    match text.strip_prefix('(') {
        Some(inner) => {
            let end = inner.find(')').ok_or("unclosed '(' after the port number")?;
            Ok(&inner[end + 1..])
        }
        None => Ok(text),
    }
}

type PortLine = (u8, String, u8, Option<String>);

fn parse_port_line(line: &str) -> Result<PortLine, Unparsed> {
    let (port, rest) = bracketed(line).ok_or("a port line starts with [N], N in 0..255")?;
    let rest = skip_parenthesised(rest)?;
    let (remote, rest) = quoted(rest.trim_start()).ok_or("the remote end must be a quoted node id: [1] \"leaf1\"[7]")?;
    if remote.is_empty() {
        return Err("empty remote node id".into());
    }
    let (remote_port, rest) = bracketed(rest.trim_start()).ok_or("the remote end needs its port: \"leaf1\"[7]")?;
    let rest = skip_parenthesised(rest)?;
    let rest = rest.trim_start();
    if !(rest.is_empty() || rest.starts_with('#') || rest.split_whitespace().all(|w| w.contains('='))) {
        return Err("unexpected text after the remote port (not shown)".into());
    }
    Ok((port, remote, remote_port, comment_description(rest)))
}

/// The first quoted string after `#`: the node description in ibnetdiscover comments.
fn comment_description(rest: &str) -> Option<String> {
    let comment = rest.split_once('#')?.1;
    let start = comment.find('"')?;
    quoted(&comment[start..]).map(|(d, _)| d)
}

/// `S-0002c90300a1b2c3` (or `H-`, `R-`) carries a GUID.
fn guid_of_id(id: &str) -> Option<Guid> {
    let hex = id.strip_prefix("S-").or_else(|| id.strip_prefix("H-")).or_else(|| id.strip_prefix("R-"))?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten().map(Guid)
}

#[cfg(test)]
mod tests {
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
}
