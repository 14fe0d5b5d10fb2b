//! The shell an operator meets (issue #35): completions that offer values and no hidden command,
//! run in a real bash; colour only on a terminal (through a pseudo-terminal from `script(1)`).

use super::{fabcheck, fixtures_dir, sh_quote};
use std::process::Command;

/// What bash's completion of fabcheck offers for `words` (the last one being completed), with the
/// device list read from `devices_dir` instead of /sys/class/infiniband.
fn bash_completes(words: &[&str], devices_dir: &str) -> Vec<String> {
    let script = String::from_utf8(fabcheck(&["completions", "bash"]).stdout).unwrap();
    assert!(script.contains("/sys/class/infiniband"), "the bash script does not list devices from sysfs");
    // One word in the script's `ls`: the checkout's path may hold a space.
    let script = script.replace("/sys/class/infiniband", &sh_quote(devices_dir));
    let words: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let driver = format!(
        "{script}\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}\n\
         _fabcheck fabcheck \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = words.join(" ")
    );
    let out = Command::new("bash").args(["--norc", "--noprofile", "-c", &driver]).output().expect("run bash");
    assert!(out.status.success(), "bash: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[test]
fn bash_completes_commands_without_the_hidden_ones_and_values_of_flags() {
    let devices = fixtures_dir().join("hdr-ib-healthy/class/infiniband");
    let devices = devices.to_str().unwrap();
    let commands = bash_completes(&["fabcheck", ""], devices);
    for visible in ["devices", "check", "pair", "mesh", "exporter", "compare", "bundle", "completions"] {
        assert!(commands.iter().any(|c| c == visible), "{visible} not offered: {commands:?}");
    }
    assert!(!commands.iter().any(|c| c == "agent" || c == "manpage"), "a hidden command is offered: {commands:?}");
    assert_eq!(bash_completes(&["fabcheck", "pair", "a", "b", "--tests", "wr"], devices), ["write_lat", "write_bw"]);
    assert_eq!(bash_completes(&["fabcheck", "pair", "a", "b", "--direction", "b"], devices), ["ba", "both", "bidi"]);
    assert_eq!(bash_completes(&["fabcheck", "mesh", "--pattern", "s"], devices), ["shift"]);
    assert_eq!(bash_completes(&["fabcheck", "check", "--format", "j"], devices), ["json", "junit"]);
    // -d lists the devices of the (here: captured) /sys/class/infiniband.
    assert_eq!(bash_completes(&["fabcheck", "pair", "a", "b", "-d", ""], devices), ["mlx5_0", "mlx5_1"]);
    assert_eq!(bash_completes(&["fabcheck", "check", "--device", "mlx5_1"], devices), ["mlx5_1"]);
    assert_eq!(bash_completes(&["fabcheck", "fabric", "--ca", "m"], devices), ["mlx5_0", "mlx5_1"]);
    // No device directory (a node without RDMA): nothing offered, and no error.
    assert!(bash_completes(&["fabcheck", "devices", "--device", ""], "/nonexistent/infiniband").is_empty());
}

/// `check` of a failing tree run on a pseudo-terminal (`script(1)` from util-linux makes one):
/// what the terminal received, and the exit code.
fn on_a_terminal(env: &[(&str, &str)]) -> (String, Option<i32>) {
    let tree = fixtures_dir().join("ib-down-polling");
    // script(1) hands the command to a shell: the paths quoted, the checkout's may hold a space.
    let command = format!("{} check --sysfs-root {}", sh_quote(env!("CARGO_BIN_EXE_fabcheck")), sh_quote(&tree.display().to_string()));
    let mut script = Command::new("script");
    script.args(["-q", "-e", "-c", &command, "/dev/null"]).env_remove("NO_COLOR").env("TERM", "xterm");
    for (k, v) in env {
        script.env(k, v);
    }
    let out = script.output().expect("script(1) from util-linux runs the command on a pseudo-terminal");
    (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.code())
}

#[test]
fn colour_on_a_terminal_none_with_no_color_or_in_a_pipe() {
    let (coloured, code) = on_a_terminal(&[]);
    assert_eq!(code, Some(1), "a failing tree: {coloured}");
    assert!(coloured.contains("\x1b[1;31mFAIL\x1b[0m  port.state"), "a FAIL row is red on a terminal: {coloured:?}");
    assert!(coloured.contains("\x1b[1;31mFAIL\x1b[0m: "), "the verdict is red: {coloured:?}");
    let (plain, code) = on_a_terminal(&[("NO_COLOR", "1")]);
    assert_eq!(code, Some(1));
    assert!(plain.contains("FAIL  port.state") && !plain.contains('\x1b'), "NO_COLOR: {plain:?}");
    // A pipe (this test's own stdout capture) never gets colour, and says the same words.
    let piped = fabcheck(&["check", "--sysfs-root", fixtures_dir().join("ib-down-polling").to_str().unwrap()]);
    let piped = String::from_utf8_lossy(&piped.stdout);
    assert!(!piped.contains('\x1b'), "{piped:?}");
    assert_eq!(plain.replace("\r\n", "\n"), piped, "the words on a terminal and in a pipe are the same");
    // A machine format on a terminal is never coloured.
    let tree = fixtures_dir().join("ib-down-polling");
    let command =
        format!("{} check --sysfs-root {} --format oneline", sh_quote(env!("CARGO_BIN_EXE_fabcheck")), sh_quote(&tree.display().to_string()));
    let out = Command::new("script").args(["-q", "-e", "-c", &command, "/dev/null"]).env_remove("NO_COLOR").output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\x1b'));
}

/// Issue #35 item 8: `--help` in groups with examples at the end, every example one the parser
/// takes, `-h` without the examples and far shorter; the man page holds the examples too.
#[test]
fn help_is_grouped_with_examples_and_h_stays_short() {
    use clap::Parser;
    for line in fabcheck::cli::examples::command_lines() {
        assert_eq!(line[0], "fabcheck");
        fabcheck::cli::Cli::try_parse_from(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    }
    for command in ["pair", "mesh"] {
        let long = String::from_utf8(fabcheck(&[command, "--help"]).stdout).unwrap();
        let short = String::from_utf8(fabcheck(&[command, "-h"]).stdout).unwrap();
        for heading in ["\nOptions:\n", "\nJudgement:\n", "\nAgents:\n", "\nTest conditions:\n", "\nOutput:\n", "\nGlobal options:\n"] {
            assert!(long.contains(heading) && short.contains(heading), "{command}: no {heading:?} group");
        }
        // The global flags come after the command's own, in their group (0.2 interleaved them).
        let global = long.find("\nGlobal options:\n").unwrap();
        assert!(long.find("--format <FORMAT>").unwrap() > global && long.find("--tests <LIST>").unwrap() < global, "{command}");
        let examples = &long[long.find("\nExamples:\n").unwrap_or_else(|| panic!("{command} --help has no examples"))..];
        assert!(examples.matches(&format!("  fabcheck {command} ")).count() >= 3, "{command}: {examples}");
        assert!(!short.contains("Examples:"), "{command} -h holds the examples");
        assert!(short.lines().count() * 2 < long.lines().count(), "{command} -h is not short: {} lines", short.lines().count());
        assert!(!short.contains("--tclass") && long.contains("--tclass"), "the rare flags are in --help only");
    }
    let page = String::from_utf8(fabcheck(&["manpage"]).stdout).unwrap();
    assert!(!page.is_empty());
    let dir = std::env::temp_dir().join(format!("fabcheck-shell-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(fabcheck(&["manpage", "--dir", dir.to_str().unwrap()]).status.success());
    let pair = std::fs::read_to_string(dir.join("fabcheck-pair.1")).unwrap();
    assert!(pair.contains("Examples:") && pair.contains("fabcheck pair node07 node08"), "the man page lacks the examples");
    let _ = std::fs::remove_dir_all(&dir);
}
