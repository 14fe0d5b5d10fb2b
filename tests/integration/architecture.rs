//! docs/architecture.md draws the code as it is: every module of `src/` (a directory, a
//! top-level file, a file of a module's room) is named there, so a module added without its
//! place in the drawing fails here. Tests (`tests.rs`, `*_tests.rs`) and `mod.rs` files are the
//! rooms they sit in.

use std::path::Path;

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
fn every_module_of_src_is_in_docs_architecture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let words: std::collections::BTreeSet<&str> = doc.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
    let mut found = Vec::new();
    modules(&root.join("src"), "", &mut found);
    assert!(found.len() > 100, "{} modules found under src/", found.len());
    let missing: Vec<&str> = found
        .iter()
        .filter(|(rel, name)| {
            let top_level = !rel.contains('/');
            if top_level {
                // A top-level module by its path: `src/probe/`, `src/units.rs`.
                let path = if rel.ends_with(".rs") { format!("src/{rel}") } else { format!("src/{rel}/") };
                !doc.contains(&path)
            } else {
                !words.contains(name.as_str())
            }
        })
        .map(|(rel, _)| rel.as_str())
        .collect();
    assert!(missing.is_empty(), "docs/architecture.md does not name: {missing:?}");
}
