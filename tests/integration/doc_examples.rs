//! Issue #57: the example commands of README.md and docs/*.md are tested from the docs
//! themselves, so a doc change is tested. Convention: an HTML comment on the line before a
//! fenced block says what the block is (invisible on GitHub):
//!
//! - `<!-- example: run exit=N contains=TEXT -->`: runs without RDMA hardware; each `fabcheck`
//!   line is run (`sh -c`, this build first on PATH, from the checkout's root) and must exit N
//!   and say TEXT (stdout or stderr; `contains=` optional, to the end of the comment).
//! - `<!-- example: parse -->`: needs RDMA hardware, hosts or a cluster; each `fabcheck` line
//!   is parsed by fabcheck's own flag parser (a misspelt flag in the docs fails here).
//! - `<!-- example: none -->`: a synopsis or a table, not a command line.
//!
//! A block with a `fabcheck` command line and no marker fails the test.

use clap::Parser;
use fabcheck::cli::Cli;
use std::path::Path;

#[derive(Debug)]
enum Marker {
    Run { exit: i32, contains: Option<String> },
    Parse,
    None,
}

struct Example {
    place: String,
    marker: Option<Marker>,
    commands: Vec<String>,
}

fn marker(line: &str) -> Option<Marker> {
    let body = line.trim().strip_prefix("<!-- example:")?.strip_suffix("-->")?.trim();
    if body == "parse" {
        return Some(Marker::Parse);
    }
    if body == "none" {
        return Some(Marker::None);
    }
    let rest = body.strip_prefix("run ")?;
    let (exit, contains) = match rest.split_once(" contains=") {
        Some((e, c)) => (e, Some(c.trim().to_string())),
        None => (rest, None),
    };
    Some(Marker::Run { exit: exit.trim().strip_prefix("exit=")?.parse().ok()?, contains })
}

/// The command lines of a block: `$ ` prompts and `sudo ` dropped, continuation lines joined,
/// only those that run fabcheck.
fn commands(block: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in block {
        let line = line.trim_start().strip_prefix("$ ").unwrap_or(line.trim_start());
        match line.strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => {
                current.push_str(line);
                let command = current.trim().strip_prefix("sudo ").unwrap_or(current.trim()).to_string();
                if command.starts_with("fabcheck ") {
                    out.push(command);
                }
                current.clear();
            }
        }
    }
    out
}

fn examples() -> Vec<Example> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs")).unwrap().flatten().map(|e| e.path()).collect();
    docs.sort();
    // The contract is the integrator's and quotes flags, not commands to run.
    files.extend(docs.into_iter().filter(|p| p.extension().is_some_and(|e| e == "md") && !p.ends_with("contract.md")));
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            if lines[i].starts_with("```") {
                let start = i;
                let end = (i + 1..lines.len()).find(|&j| lines[j].starts_with("```")).unwrap_or(lines.len());
                let commands = commands(&lines[start + 1..end]);
                if !commands.is_empty() {
                    let marker = start.checked_sub(1).and_then(|p| marker(lines[p]));
                    let place = format!("{}:{}", file.strip_prefix(root).unwrap().display(), start + 1);
                    out.push(Example { place, marker, commands });
                }
                i = end + 1;
            } else {
                i += 1;
            }
        }
    }
    out
}

/// A command line's words as the shell would split them, up to its first pipe, redirection or
/// list operator, comments dropped; `$(...)` and `<(...)` stand for one word.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0;
    let mut chars = command.chars().peekable();
    let mut started = false;
    while let Some(c) = chars.next() {
        // Inside `$(...)` or `<(...)`: skipped to its closing parenthesis.
        if depth > 0 {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            continue;
        }
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, '$' | '<') if chars.peek() == Some(&'(') => {
                depth += 1;
                chars.next();
                word.push_str("SUBST");
                started = true;
            }
            (None, '|' | '>' | '<' | ';' | '&' | '#') => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

#[test]
fn every_example_command_in_the_docs_is_marked_and_does_what_the_text_says() {
    let examples = examples();
    assert!(examples.len() >= 20, "{} blocks with fabcheck commands found", examples.len());
    let unmarked: Vec<&str> = examples.iter().filter(|e| e.marker.is_none()).map(|e| e.place.as_str()).collect();
    assert!(unmarked.is_empty(), "blocks without an `<!-- example: ... -->` marker: {unmarked:?}");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_fabcheck")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let (mut ran, mut parsed) = (0, 0);
    for e in &examples {
        for command in &e.commands {
            match e.marker.as_ref().unwrap() {
                Marker::Run { exit, contains } => {
                    let out = std::process::Command::new("sh")
                        .arg("-c")
                        .arg(command)
                        .current_dir(env!("CARGO_MANIFEST_DIR"))
                        .env("PATH", &path)
                        .env("NO_COLOR", "1")
                        .output()
                        .unwrap();
                    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
                    assert_eq!(out.status.code(), Some(*exit), "{}: `{command}`: {said}", e.place);
                    if let Some(text) = contains {
                        assert!(said.contains(text.as_str()), "{}: `{command}` does not say {text:?}: {said}", e.place);
                    }
                    ran += 1;
                }
                Marker::Parse => {
                    let words = words(command);
                    if let Err(err) = Cli::try_parse_from(&words) {
                        panic!("{}: `{command}` ({words:?}) is refused by fabcheck's parser: {err}", e.place);
                    }
                    parsed += 1;
                }
                Marker::None => {}
            }
        }
    }
    assert!(ran >= 2 && parsed >= 10, "{ran} run, {parsed} parsed");
}

#[test]
fn the_shell_words_of_a_doc_command() {
    assert_eq!(
        words(r#"fabcheck pair "$(hostname)/mlx5_0" b --json > pair.json || status=$?"#),
        ["fabcheck", "pair", "$(hostname)/mlx5_0", "b", "--json"]
    );
    assert_eq!(
        words("fabcheck mesh --hostfile <(scontrol show hostnames | sed 's|^|x|') --json"),
        ["fabcheck", "mesh", "--hostfile", "SUBST", "--json"]
    );
    assert_eq!(words("fabcheck check   # a comment"), ["fabcheck", "check"]);
    assert!(
        matches!(marker("<!-- example: run exit=1 contains=port.state -->"), Some(Marker::Run { exit: 1, contains: Some(c) }) if c == "port.state")
    );
}
