//! docs/architecture.md draws the code as it is, and this file holds the code to the drawing:
//!
//! - the layer table (the fenced block under "## The dependency direction", bottom row first):
//!   every top-level module of `src/` stands on exactly one row, and a `crate::X` path (a `use`,
//!   a grouped `use crate::{X, Y}`, or a path in the code) in a file of room R names only rooms
//!   on rows below R's. Peers on one row do not know each other; an import from a lower row to
//!   a higher one fails here, with the file and line.
//! - the rooms' paragraphs (the layout block: a line that starts at column 0 with `src/NAME/` or
//!   `src/NAME.rs` opens room NAME's paragraph, its indented lines continue it): every module of
//!   `src/` (a directory, a file of a room) is named in ITS room's paragraph, so a module added
//!   without its place in the drawing fails here. Tests (`tests.rs`, `*_tests.rs`) and `mod.rs`
//!   files are the rooms they sit in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn doc() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")).unwrap()
}

/// The fenced blocks of `doc`, in order.
fn fenced(doc: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut open: Option<Vec<&str>> = None;
    for line in doc.lines() {
        if line.starts_with("```") {
            match open.take() {
                Some(block) => blocks.push(block),
                None => open = Some(Vec::new()),
            }
        } else if let Some(block) = open.as_mut() {
            block.push(line);
        }
    }
    blocks
}

/// The layer table: the first fenced block after the heading, each row's names (what stands
/// before the row's parenthesis), bottom row first.
fn layer_table(doc: &str) -> Vec<Vec<String>> {
    let heading = "## The dependency direction";
    let at = doc.find(heading).unwrap_or_else(|| panic!("docs/architecture.md has no {heading:?} section"));
    let block = fenced(&doc[at..]).into_iter().next().expect("the layer table's fenced block");
    block
        .iter()
        // An indented line continues the row above's parenthesis.
        .filter(|line| !line.starts_with(char::is_whitespace))
        .map(|line| line.split('(').next().unwrap_or("").split_whitespace().map(String::from).collect::<Vec<_>>())
        .filter(|row| !row.is_empty())
        .collect()
}

/// The top-level modules of `src/` (`lib.rs` and `main.rs` aside): `probe` for `src/probe/`,
/// `units` for `src/units.rs`.
fn top_level(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                Some(name)
            } else {
                name.strip_suffix(".rs").filter(|s| *s != "lib" && *s != "main").map(String::from)
            }
        })
        .collect()
}

/// Every `.rs` file under `dir`, with its path relative to `src/`.
fn rust_files(dir: &Path, rel: &str, out: &mut Vec<(String, std::path::PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel_path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        if entry.path().is_dir() {
            rust_files(&entry.path(), &rel_path, out);
        } else if name.ends_with(".rs") {
            out.push((rel_path, entry.path()));
        }
    }
}

/// The rooms a line of code names through `crate::`: `crate::probe::x`, `use crate::probe;`,
/// and each head of a grouped `use crate::{probe::x, sys};`. Comments are not code.
fn named_rooms(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut rooms = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        // `fabcheck_crate::` or `my_crate::` is another name.
        let before = rest[..at].chars().next_back();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            if let Some(group) = after.strip_prefix('{') {
                // Only the heads at the group's top level: `{a::{b, c}, d}` names a and d.
                let mut depth = 0;
                let mut head = true;
                let mut word = String::new();
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => head = true,
                        _ => {}
                    }
                    if head && (c.is_ascii_alphanumeric() || c == '_') {
                        word.push(c);
                    } else if head && !word.is_empty() {
                        rooms.push(std::mem::take(&mut word));
                        head = false;
                    }
                }
                if head && !word.is_empty() {
                    rooms.push(word);
                }
            } else {
                rooms.push(ident(after));
            }
        }
        rest = &rest[at + "crate::".len()..];
    }
    rooms
}

#[test]
fn the_layer_table_holds_every_room_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = layer_table(&doc());
    let rooms = top_level(&root.join("src"));
    assert!(rooms.len() > 20, "{} top-level modules found under src/", rooms.len());
    let mut seen = BTreeMap::new();
    for (row, names) in table.iter().enumerate() {
        for name in names {
            assert!(seen.insert(name.clone(), row).is_none(), "{name} stands on two rows of the layer table");
        }
    }
    // The verbs crate and the binary stand in the table too; they are no modules of the library.
    let known = |n: &str| rooms.contains(n) || n == "fabcheck-verbs" || n == "main";
    let strangers: Vec<&String> = seen.keys().filter(|n| !known(n)).collect();
    assert!(strangers.is_empty(), "the layer table names what src/ does not have: {strangers:?}");
    let missing: Vec<&String> = rooms.iter().filter(|r| !seen.contains_key(*r)).collect();
    assert!(missing.is_empty(), "the layer table of docs/architecture.md lacks: {missing:?}");
}

#[test]
fn no_import_of_src_goes_up_the_layer_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = layer_table(&doc());
    let row: BTreeMap<&str, usize> = table.iter().enumerate().flat_map(|(k, names)| names.iter().map(move |n| (n.as_str(), k))).collect();
    let rooms = top_level(&root.join("src"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), "", &mut files);
    let mut read = 0;
    let mut against = Vec::new();
    for (rel, path) in &files {
        let room = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(&from) = row.get(room) else { continue };
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for to in named_rooms(line) {
                if to == room || !rooms.contains(&to) {
                    continue;
                }
                read += 1;
                match row.get(to.as_str()) {
                    Some(&k) if k < from => {}
                    Some(&k) => against.push(format!(
                        "src/{rel}:{}: {room} (row {from}) names {to} (row {k}): {}",
                        n + 1,
                        if k == from { "a peer on its own row" } else { "a room above it" }
                    )),
                    None => against.push(format!("src/{rel}:{}: {to} is not in the layer table", n + 1)),
                }
            }
        }
    }
    // The test would pass on a tree it could not read: it must have seen the imports.
    assert!(read > 500, "only {read} crate:: paths between rooms found");
    assert!(against.is_empty(), "imports against docs/architecture.md's layer table:\n{}", against.join("\n"));
}

#[test]
fn the_import_reader_sees_every_spelling() {
    assert_eq!(named_rooms("use crate::probe::model::Port;"), ["probe"]);
    assert_eq!(named_rooms("    use crate::{probe::x, sys::{a, b}, units};"), ["probe", "sys", "units"]);
    assert_eq!(named_rooms("let x = crate::units::rate(1.0) + crate::port::y();"), ["units", "port"]);
    assert!(named_rooms("// crate::mesh in a comment").is_empty());
    assert!(named_rooms("use fabcheck_verbs::Context; other_crate::mesh();").is_empty());
}

/// Room name -> its paragraph of the layout block.
fn paragraphs(doc: &str) -> BTreeMap<String, String> {
    let block = fenced(doc).into_iter().next().expect("the layout block");
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    for line in block {
        if !line.starts_with(' ') {
            current = line
                .split_whitespace()
                .take_while(|w| w.starts_with("src/"))
                .map(|w| w.trim_start_matches("src/").trim_end_matches('/').trim_end_matches(".rs").to_string())
                .collect();
        }
        for room in &current {
            let text = out.entry(room.clone()).or_default();
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

/// The modules of a room: its directories and files (not `mod.rs` or tests), with their names.
fn modules(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let rel_path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        if path.is_dir() {
            out.push((rel_path.clone(), name.clone()));
            modules(&path, &rel_path, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if stem != "mod" && stem != "tests" && !stem.ends_with("_tests") {
                out.push((rel_path, stem.to_string()));
            }
        }
    }
}

#[test]
fn every_module_of_src_is_in_its_rooms_paragraph() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let paragraphs = paragraphs(&doc());
    let mut found = Vec::new();
    modules(&root.join("src"), "", &mut found);
    assert!(found.len() > 100, "{} modules found under src/", found.len());
    let words = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(String::from).collect()
    };
    let mut missing = Vec::new();
    let mut checked = 0;
    for (rel, name) in &found {
        let room = rel.split('/').next().unwrap().trim_end_matches(".rs");
        let Some(paragraph) = paragraphs.get(room) else {
            missing.push(format!("src/{rel}: its room {room} has no paragraph (a line starting `src/{room}`)"));
            continue;
        };
        // A top-level module is its paragraph; one inside a room is named in it.
        if rel.contains('/') && !words(paragraph).contains(name) {
            missing.push(format!("src/{rel}: `{name}` is not in the paragraph of src/{room}"));
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} modules checked");
    assert!(missing.is_empty(), "docs/architecture.md does not describe:\n{}", missing.join("\n"));
}
