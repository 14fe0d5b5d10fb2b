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
//! `ibnetdiscover -g` output reads the same: its grouping headings (`Chassis 1 (guid 0x...)`,
//! `Non-Chassis Nodes`) are skipped and a port's `[ext N]` front-panel number is not cabling.
//!
//! A node id of the form `S-`/`H-`/`R-` + 16 hex digits carries its GUID; otherwise the node
//! is known by its description (the `# "..."` comment, or the id itself as in ibsim files).
//! The file is untrusted input: it must be a regular file (checked before opening, so a FIFO
//! cannot hang the run), is read through a size cap, and every line is bounded.

use crate::mad::attributes::Guid;
use crate::model::Unparsed;
use std::collections::BTreeMap;
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

/// [`load`], giving up (an error, not a partial topology) once `deadline` has passed. The file
/// is streamed: one line buffer is reused, so a 45 MiB file is never held whole in memory.
pub fn load_until(path: &Path, deadline: Option<Instant>) -> Result<Topology, TopologyError> {
    use crate::sys::fs::{open_for_reading, ReadError};
    use std::io::{BufRead, BufReader, Read};
    let shown = path.display().to_string();
    let unreadable = |error: String| TopologyError::Unreadable { path: shown.clone(), error };
    let (file, size) = open_for_reading(path).map_err(|e| match e {
        ReadError::NotRegular { kind, .. } => TopologyError::NotAFile { path: shown.clone(), kind },
        other => TopologyError::Unreadable { path: shown.clone(), error: other.reason() },
    })?;
    if size > MAX_BYTES {
        return Err(TopologyError::TooLarge { path: shown, limit: MAX_BYTES });
    }
    // The cap holds for files that say a smaller size than they hold.
    let mut reader = BufReader::with_capacity(1 << 16, file.take(MAX_BYTES + 1));
    let mut parser = Parser::new(&shown);
    parser.reserve(size);
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut total: u64 = 0;
    let mut index = 0usize;
    loop {
        buf.clear();
        // At most one byte past the longest line is read into the buffer: a file of one 256 MiB
        // line is refused after 4 KiB.
        let n = (&mut reader).take(MAX_LINE as u64 + 2).read_until(b'\n', &mut buf).map_err(|e| unreadable(ReadError::describe(&e)))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_BYTES {
            return Err(TopologyError::TooLarge { path: shown, limit: MAX_BYTES });
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if index.is_multiple_of(LINES_PER_DEADLINE_CHECK) && deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(TopologyError::Deadline { path: shown, line: index + 1 });
        }
        if line.len() > MAX_LINE {
            return Err(parser.syntax(index + 1, format!("line longer than {MAX_LINE} characters")));
        }
        let line = std::str::from_utf8(line).map_err(|_| TopologyError::NotText { path: shown.clone() })?;
        parser.line(index + 1, line)?;
        index += 1;
    }
    parser.finish()
}

/// Parses the text of a topology file; `path` only names it in errors.
pub fn parse(path: &str, text: &str) -> Result<Topology, TopologyError> {
    parse_until(path, text, || false)
}

/// Parses the text of a topology file, asking `expired` every [`LINES_PER_DEADLINE_CHECK`]
/// lines whether time is up (the caller's clock: tests count the calls). Linear in the file:
/// every lookup in the per-line loop is a hash lookup of an interned name, never a scan of what
/// was parsed.
pub fn parse_until(path: &str, text: &str, mut expired: impl FnMut() -> bool) -> Result<Topology, TopologyError> {
    let mut parser = Parser::new(path);
    for (index, raw) in text.lines().enumerate() {
        if index.is_multiple_of(LINES_PER_DEADLINE_CHECK) && expired() {
            return Err(TopologyError::Deadline { path: path.to_string(), line: index + 1 });
        }
        if raw.len() > MAX_LINE {
            return Err(parser.syntax(index + 1, format!("line longer than {MAX_LINE} characters")));
        }
        parser.line(index + 1, raw)?;
    }
    parser.finish()
}

/// A node id seen in the file (defined by a node line, or only named as a cable's far end).
struct Interned {
    id: String,
    /// Set by its node line: (key, is_switch, ports).
    defined: Option<(NodeKey, bool, u8)>,
    /// The first description a far end's comment gives it, while it is not defined.
    remote_desc: Option<String>,
}

/// Where a port is cabled: the far end (interned node, port) and the line that said so.
#[derive(Clone, Copy)]
struct Cabled {
    remote: (u32, u8),
    line: usize,
}

/// The parser's state between lines. Node ids are interned once (an index per id), so the
/// per-line work allocates only for a name seen for the first time.
struct Parser<'p> {
    path: &'p str,
    index: std::collections::HashMap<Box<str>, u32, super::fast_hash::FastHash>,
    nodes: Vec<Interned>,
    /// Every port line's (node, port) and far end: duplicates, and the cable's other end.
    ports: std::collections::HashMap<(u32, u8), Cabled, super::fast_hash::FastHash>,
    links: Vec<((u32, u8), (u32, u8))>,
    current: Option<u32>,
}

impl<'p> Parser<'p> {
    fn new(path: &'p str) -> Parser<'p> {
        Parser { path, index: Default::default(), nodes: Vec::new(), ports: Default::default(), links: Vec::new(), current: None }
    }

    /// Room for what a file of `bytes` holds, by ibnetdiscover's line lengths (about 75 bytes a
    /// port line, 400 a node record): a large file is not parsed through doubling tables.
    fn reserve(&mut self, bytes: u64) {
        let lines = usize::try_from(bytes / 75).unwrap_or(0);
        self.ports.reserve(lines);
        self.links.reserve(lines / 2);
        self.nodes.reserve(lines / 5);
        self.index.reserve(lines / 5);
    }

    fn syntax(&self, line: usize, why: String) -> TopologyError {
        TopologyError::Syntax { path: self.path.to_string(), line, why }
    }

    fn intern(&mut self, id: &str) -> u32 {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.index.insert(id.into(), i);
        self.nodes.push(Interned { id: id.to_string(), defined: None, remote_desc: None });
        i
    }

    fn line(&mut self, line_no: usize, raw: &str) -> Result<(), TopologyError> {
        let err = |why: String| TopologyError::Syntax { path: self.path.to_string(), line: line_no, why };
        let line = raw.trim();
        if line.is_empty() {
            self.current = None;
            return Ok(());
        }
        if line.starts_with('#') || is_setting(line) {
            return Ok(());
        }
        if is_grouping_heading(line) {
            self.current = None;
            return Ok(());
        }
        if is_diagnostic(line) {
            return Err(err("this line is an error infiniband-diags printed, not cabling (a MAD that failed or timed out: a node did not \
                 answer, so the discovery may be incomplete); run ibnetdiscover again with its stderr kept out of the file \
                 (`ibnetdiscover > FILE`), or delete the line once the discovery is known to be whole"
                .into()));
        }
        if line.starts_with("include ") || line.starts_with("do ") {
            return Err(err(format!("'{}' is an ibsim directive, not cabling: give the expanded file", first_word(line))));
        }
        if line.starts_with('[') {
            let node = self.current.ok_or_else(|| err("a port line outside a node record".into()))?;
            let (port, remote, remote_port, desc) = parse_port_line(line).map_err(|e| err(e.0))?;
            let local_ports = self.nodes[node as usize].defined.as_ref().map_or(0, |d| d.2);
            if port > local_ports {
                return Err(err(format!(
                    "port {port} but node \"{}\" has {local_ports} ports",
                    crate::sanitise::one_line(&self.nodes[node as usize].id)
                )));
            }
            if let Some(prev) = self.ports.get(&(node, port)) {
                return Err(err(format!(
                    "port {port} of \"{}\" is already cabled on line {}",
                    crate::sanitise::one_line(&self.nodes[node as usize].id),
                    prev.line
                )));
            }
            let remote = self.intern(remote);
            if let Some(d) = desc {
                let far = &mut self.nodes[remote as usize];
                if far.defined.is_none() && far.remote_desc.is_none() {
                    far.remote_desc = Some(d.to_string());
                }
            }
            // Each cable appears at both of its ends; keep it once.
            let seen_from_far = self.ports.get(&(remote, remote_port)).is_some_and(|c| c.remote == (node, port));
            self.ports.insert((node, port), Cabled { remote: (remote, remote_port), line: line_no });
            if !seen_from_far {
                self.links.push(((node, port), (remote, remote_port)));
            }
            return Ok(());
        }
        let (kind, rest) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| err("the line is neither a node nor a port line (not shown: fabcheck never quotes a file's text)".into()))?;
        let is_switch = if kind.eq_ignore_ascii_case("switch") {
            true
        } else if ["ca", "hca", "rt", "router"].iter().any(|k| kind.eq_ignore_ascii_case(k)) {
            false
        } else {
            return Err(err(
                "the line is neither a node (Switch, Ca, Hca, Rt) nor a port line (not shown: fabcheck never quotes a file's text)".into()
            ));
        };
        let rest = rest.trim_start();
        let (count, rest) = rest.split_once(char::is_whitespace).ok_or_else(|| err("a node line needs a port count and a quoted id".into()))?;
        let ports: u8 = count.parse().ok().filter(|&n| n > 0).ok_or_else(|| err("the node's port count is not 1..255".into()))?;
        let (id, rest) = quoted(rest.trim_start()).ok_or_else(|| err("a node id must be quoted: Switch 36 \"leaf1\"".into()))?;
        if id.is_empty() {
            return Err(err("empty node id".into()));
        }
        let description = comment_description(rest).unwrap_or(id).to_string();
        let key = NodeKey { guid: guid_of_id(id), description };
        let i = self.intern(id);
        let node = &mut self.nodes[i as usize];
        if node.defined.is_some() {
            return Err(err(format!("node \"{}\" is defined twice", crate::sanitise::one_line(id))));
        }
        node.defined = Some((key, is_switch, ports));
        node.remote_desc = None;
        self.current = Some(i);
        Ok(())
    }

    /// The parsed topology, in the public shape (ids as strings, nodes by id).
    fn finish(self) -> Result<Topology, TopologyError> {
        let Parser { path, index, mut nodes, ports, links, .. } = self;
        drop((index, ports));
        if nodes.iter().all(|n| n.defined.is_none()) {
            return Err(TopologyError::Empty { path: path.to_string() });
        }
        // Ends that name ids the file never defines (a partial file) still get a key; their port
        // count is the port of the first cable naming them.
        let mut undefined_ports: Vec<Option<u8>> = vec![None; nodes.len()];
        for &(_, (b, port)) in &links {
            if nodes[b as usize].defined.is_none() {
                undefined_ports[b as usize].get_or_insert(port);
            }
        }
        let links = links
            .into_iter()
            .map(|((a, ap), (b, bp))| ExpectedLink { a: (nodes[a as usize].id.clone(), ap), b: (nodes[b as usize].id.clone(), bp) })
            .collect();
        let mut out = BTreeMap::new();
        for (i, node) in nodes.drain(..).enumerate() {
            let Interned { id, defined, remote_desc } = node;
            let (key, is_switch, ports) = match defined {
                Some(d) => d,
                None => {
                    // A far end is interned only with its cable, so it always has a port.
                    let Some(port) = undefined_ports[i] else { continue };
                    let description = remote_desc.unwrap_or_else(|| id.clone());
                    (NodeKey { guid: guid_of_id(&id), description }, id.starts_with("S-"), port)
                }
            };
            out.insert(id.clone(), ExpectedNode { id, key, is_switch, ports });
        }
        Ok(Topology { nodes: out, links })
    }
}

/// `vendid=0x2c9`, `switchguid=0x...(...)`, ibsim's `width=15`: settings, not cabling.
fn is_setting(line: &str) -> bool {
    let word = first_word(line);
    word.split_once('=').is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The headings `ibnetdiscover -g` prints between node records (ibnetdiscover.c: `out_chassis`'s
/// `Chassis N (guid 0x...)`, `Non-Chassis Nodes`, a Xsigo chassis's `Hostname: name`): grouping,
/// not cabling.
fn is_grouping_heading(line: &str) -> bool {
    line == "Non-Chassis Nodes"
        || line.starts_with("Hostname: ")
        || line.strip_prefix("Chassis ").and_then(|rest| rest.split_whitespace().next()).is_some_and(|n| n.parse::<u8>().is_ok())
}

/// A diagnostic that libibmad or infiniband-diags writes to stderr, captured into the file with
/// `2>&1`: `ibwarn: [pid] func: ...` (`IBWARN`), `ibnetdiscover: iberror: ...` (`IBEXIT`), or
/// libibmad's `src/query_smp.c:195; umad (DR path ...) bad status 110; Connection timed out`
/// (`IBWARN` with file and line, as NVIDIA's ibdiagpath article captured it).
fn is_diagnostic(line: &str) -> bool {
    let source_line = line.strip_prefix("src/").and_then(|rest| rest.split_once(".c:")).is_some_and(|(file, rest)| {
        !file.is_empty() && rest.split_once(';').is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    source_line || line.starts_with("ibwarn: ") || line.split_once(": ").is_some_and(|(_, rest)| rest.starts_with("iberror: "))
}

fn first_word(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// Splits `"text" rest` into (text, rest).
fn quoted(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix('"')?;
    let end = inner.find('"')?;
    Some((&inner[..end], &inner[end + 1..]))
}

/// `[N]` at the start: (N, rest).
fn bracketed(text: &str) -> Option<(u8, &str)> {
    let inner = text.strip_prefix('[')?;
    let end = inner.find(']')?;
    let n = inner[..end].trim().parse().ok()?;
    Some((n, &inner[end + 1..]))
}

/// Skips an optional `[ext N]`: the external (front-panel) port number `ibnetdiscover -g` prints
/// after a chassis switch's port numbers (ibnetdiscover.c `out_ext_port`: `[7][ext 3]`).
fn skip_ext_port(text: &str) -> &str {
    let ext = text.trim_start().strip_prefix("[ext ").and_then(|inner| inner.split_once(']'));
    match ext {
        Some((n, rest)) if n.trim().parse::<u16>().is_ok() => rest,
        _ => text,
    }
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

type PortLine<'a> = (u8, &'a str, u8, Option<&'a str>);

fn parse_port_line(line: &str) -> Result<PortLine<'_>, Unparsed> {
    let (port, rest) = bracketed(line).ok_or("a port line starts with [N], N in 0..255")?;
    let rest = skip_parenthesised(skip_ext_port(rest))?;
    let (remote, rest) = quoted(rest.trim_start()).ok_or("the remote end must be a quoted node id: [1] \"leaf1\"[7]")?;
    if remote.is_empty() {
        return Err("empty remote node id".into());
    }
    let (remote_port, rest) = bracketed(rest.trim_start()).ok_or("the remote end needs its port: \"leaf1\"[7]")?;
    let rest = skip_parenthesised(skip_ext_port(rest))?;
    let rest = rest.trim_start();
    if !(rest.is_empty() || rest.starts_with('#') || rest.split_whitespace().all(|w| w.contains('='))) {
        return Err("unexpected text after the remote port (not shown)".into());
    }
    Ok((port, remote, remote_port, comment_description(rest)))
}

/// The first quoted string after `#`: the node description in ibnetdiscover comments.
fn comment_description(rest: &str) -> Option<&str> {
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
#[path = "topology_tests.rs"]
mod tests;
