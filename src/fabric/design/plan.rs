//! `fabric --plan FILE`: the cabling plan of a first bring-up, as the spreadsheet exports it
//! (CSV with the header `a_node,a_port,b_node,b_port`, one cable per row), turned into the
//! same expected [`Topology`] that `--topology` reads, so both are judged by one comparison
//! (missing, extra and miswired cables named alike).
//!
//! A node is named by its node description (`"node01 mlx5_0"`, `leaf1`) or by its node GUID as
//! `0x` and 16 hex digits (`0x0002c90300a1b2c3`), as `ibnetdiscover` prints it.

use crate::fabric::design::csv::{self, CsvError, Table};
use crate::fabric::design::topology::{ExpectedLink, ExpectedNode, NodeKey, Topology};
use crate::mad::attributes::Guid;
use crate::model::Unparsed;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// The columns of a plan.
pub const COLUMNS: [&str; 4] = ["a_node", "a_port", "b_node", "b_port"];

pub const REMEDY: &str = "give a CSV whose header is a_node,a_port,b_node,b_port and one cable per row (a node by its description, quoted \
                          when it holds a comma, or by its node GUID as 0x and 16 hex digits; ports 1..255)";

/// What to do about a plan or rail map that cannot be used.
pub fn remedy(e: &CsvError) -> &'static str {
    match e {
        CsvError::Deadline { .. } => "raise --deadline, or give a smaller file",
        _ => REMEDY,
    }
}

/// Reads and converts a plan (bounded as every input file; an error once `deadline` passed).
pub fn load_until(path: &Path, deadline: Option<Instant>) -> Result<Topology, CsvError> {
    from_table(&csv::load("plan", path, deadline)?)
}

/// Parses the text of a plan; `path` only names it in errors.
pub fn parse(path: &str, text: &str) -> Result<Topology, CsvError> {
    from_table(&csv::parse_until("plan", path, text, || false)?)
}

/// The plan's rows as the expected topology: a node's id is its name as written.
pub fn from_table(table: &Table) -> Result<Topology, CsvError> {
    let at = table.require(&COLUMNS)?;
    let mut topo = Topology::default();
    // (node, port) -> the line that cabled it first.
    let mut used: HashMap<(String, u8), usize> = HashMap::new();
    for row in &table.rows {
        let err = |why: String| table.syntax(row.line, why);
        let mut ends = Vec::with_capacity(2);
        for (node_col, port_col) in [(at[0], at[1]), (at[2], at[3])] {
            let name = row.fields[node_col].trim();
            let column = &table.columns[node_col];
            if name.is_empty() {
                return Err(err(format!("{column} is empty")));
            }
            let key = node_key(name).map_err(|why| err(format!("{column} '{}': {why}", clip(name))))?;
            let port_text = row.fields[port_col].trim();
            let port: u8 = port_text
                .parse()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| err(format!("{} '{}' is not a port number 1..255", table.columns[port_col], clip(port_text))))?;
            ends.push((name.to_string(), port, key));
        }
        let (b, a) = (ends.pop().expect("two ends"), ends.pop().expect("two ends"));
        if a.0 == b.0 && a.1 == b.1 {
            return Err(err(format!("cables port {} of '{}' to itself", a.1, clip(&a.0))));
        }
        for (name, port, _) in [&a, &b] {
            if let Some(first) = used.insert((name.clone(), *port), row.line) {
                return Err(err(format!("port {port} of '{}' is already cabled on line {first}", clip(name))));
            }
        }
        for (name, port, key) in [&a, &b] {
            let node =
                topo.nodes.entry(name.clone()).or_insert_with(|| ExpectedNode { id: name.clone(), key: key.clone(), is_switch: false, ports: 0 });
            node.ports = node.ports.max(*port);
        }
        topo.links.push(ExpectedLink { a: (a.0, a.1), b: (b.0, b.1) });
    }
    Ok(topo)
}

/// `0x` and 16 hex digits is a node GUID; anything else a node description.
fn node_key(name: &str) -> Result<NodeKey, Unparsed> {
    let Some(hex) = name.strip_prefix("0x").or_else(|| name.strip_prefix("0X")) else {
        return Ok(NodeKey { guid: None, description: name.to_string() });
    };
    if hex.len() != 16 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err("a GUID is 0x and 16 hex digits (0x0002c90300a1b2c3)".into());
    }
    let guid = u64::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
    Ok(NodeKey { guid: Some(Guid(guid)), description: String::new() })
}

fn clip(text: &str) -> String {
    let mut s: String = text.chars().take(60).collect();
    if s.len() < text.len() {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_the_expected_topology() {
        let t = parse("p.csv", "a_node,a_port,b_node,b_port,length_m\nleaf1,1,\"node01, rack 3 mlx5_0\",1,2\n0x0000000000000020,7,leaf1,7,5\n\n")
            .unwrap();
        assert_eq!(
            t.links,
            vec![
                ExpectedLink { a: ("leaf1".into(), 1), b: ("node01, rack 3 mlx5_0".into(), 1) },
                ExpectedLink { a: ("0x0000000000000020".into(), 7), b: ("leaf1".into(), 7) },
            ]
        );
        assert_eq!(t.nodes["leaf1"].key, NodeKey { guid: None, description: "leaf1".into() });
        assert_eq!(t.nodes["leaf1"].ports, 7);
        assert_eq!(t.nodes["0x0000000000000020"].key, NodeKey { guid: Some(Guid(0x20)), description: String::new() });
        assert_eq!(t.nodes["node01, rack 3 mlx5_0"].key.description, "node01, rack 3 mlx5_0");
    }

    #[test]
    fn bad_plans_name_the_line() {
        for (text, line, says) in [
            ("a_node,a_port,b_node\nx,1,y\n", 1, "lacks b_port"),
            ("a_node,a_port,b_node,b_port\nleaf1,1,h1,1\nleaf1,1,h2,1\n", 3, "already cabled on line 2"),
            ("a_node,a_port,b_node,b_port\nleaf1,1,h1,1\nh1,1,leaf2,4\n", 3, "port 1 of 'h1' is already cabled on line 2"),
            ("a_node,a_port,b_node,b_port\nleaf1,0,h1,1\n", 2, "not a port number"),
            ("a_node,a_port,b_node,b_port\nleaf1,256,h1,1\n", 2, "not a port number"),
            ("a_node,a_port,b_node,b_port\nleaf1,x,h1,1\n", 2, "not a port number"),
            ("a_node,a_port,b_node,b_port\n0x12,1,h1,1\n", 2, "16 hex digits"),
            ("a_node,a_port,b_node,b_port\n,1,h1,1\n", 2, "a_node is empty"),
            ("a_node,a_port,b_node,b_port\nleaf1,3,leaf1,3\n", 2, "to itself"),
            ("a_node,a_port,b_node,b_port\nleaf1,3,h1\n", 2, "3 fields"),
        ] {
            match parse("p.csv", text) {
                Err(CsvError::Syntax { line: l, why, .. }) => {
                    assert_eq!(l, line, "{text:?}: {why}");
                    assert!(why.contains(says), "{text:?}: {why}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let e = parse("p.csv", "a_node,a_port,b_node,b_port\nleaf1,1,h1,1\nleaf1,1,h2,1\n").unwrap_err();
        assert_eq!(e.to_string(), "p.csv:3: port 1 of 'leaf1' is already cabled on line 2");
    }

    #[test]
    fn judged_as_a_topology_is() {
        use crate::fabric::discovery::fixture::Build;
        use crate::fabric::{judge, FabricExpect};
        let mut b = Build::new();
        b.switch("leaf1");
        b.switch("spine1");
        b.ca("gpu1 mlx5_0");
        b.ca("gpu2 mlx5_0");
        b.cable("leaf1", "gpu1 mlx5_0"); // leaf1[1]
        b.cable("leaf1", "gpu2 mlx5_0"); // leaf1[2]
        b.cable("leaf1", "spine1"); // leaf1[3] <-> spine1[1]
        let spine = b.guid("spine1");
        let plan = format!("a_node,a_port,b_node,b_port\nleaf1,1,gpu1 mlx5_0,1\n\"gpu2 mlx5_0\",1,leaf1,2\nleaf1,3,{spine},1\n");
        let j = judge(&b.fabric, Some(&parse("p", &plan).unwrap()), &FabricExpect::default());
        assert!(j.findings.is_empty(), "{:#?}", j.findings);
        // The plan has the two hosts swapped: both cables are miswired, neither is extra.
        let swapped = plan.replace("leaf1,1,gpu1", "leaf1,1,gpu2").replace("\"gpu2 mlx5_0\",1,leaf1,2", "gpu1 mlx5_0,1,leaf1,2");
        let j = judge(&b.fabric, Some(&parse("p", &swapped).unwrap()), &FabricExpect::default());
        let ids: Vec<(&str, String)> = j.findings.iter().map(|f| (f.id.as_str(), f.subject.to_string())).collect();
        assert_eq!(
            ids,
            [
                ("fabric.topology.miswired", "leaf1[1] <-> gpu2 mlx5_0[1]".to_string()),
                ("fabric.topology.miswired", "gpu1 mlx5_0[1] <-> leaf1[2]".to_string())
            ]
        );
    }

    #[test]
    fn files_are_read_bounded() {
        let dir = std::env::temp_dir().join(format!("fabcheck-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let binary = dir.join("binary.csv");
        std::fs::write(&binary, b"a_node,a_port,b_node,b_port\nleaf1,1,h\xff\xfe,1\n").unwrap();
        assert!(matches!(load_until(&binary, None), Err(CsvError::Syntax { line: 2, .. })));
        let huge = dir.join("huge.csv");
        let f = std::fs::File::create(&huge).unwrap();
        f.set_len(csv::MAX_BYTES + 1).unwrap();
        assert!(matches!(load_until(&huge, None), Err(CsvError::TooLarge { .. })));
        let fifo = dir.join("fifo.csv");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        match load_until(&fifo, None) {
            Err(e @ CsvError::NotAFile { .. }) => assert_eq!(e.to_string(), format!("plan {} is not a regular file (a FIFO)", fifo.display())),
            other => panic!("{other:?}"),
        }
        assert!(matches!(load_until(&dir.join("absent.csv"), None), Err(CsvError::Unreadable { .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
