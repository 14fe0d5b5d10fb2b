//! The shell an operator meets (issue #35): completions that offer values and no hidden command,
//! run in a real bash; colour only on a terminal (through a pseudo-terminal from `script(1)`).

use super::{fabcheck, fixtures_dir};
use std::process::Command;

/// What bash's completion of fabcheck offers for `words` (the last one being completed), with the
/// device list read from `devices_dir` instead of /sys/class/infiniband.
fn bash_completes(words: &[&str], devices_dir: &str) -> Vec<String> {
    let script = String::from_utf8(fabcheck(&["completions", "bash"]).stdout).unwrap();
    assert!(script.contains("/sys/class/infiniband"), "the bash script does not list devices from sysfs");
    let script = script.replace("/sys/class/infiniband", devices_dir);
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
    for visible in ["devices", "check", "pair", "mesh", "exporter", "compare", "completions"] {
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
