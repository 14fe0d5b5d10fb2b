//! What the packages ship beside the binary (issue #35 item 1), checked without building them:
//! a manual page for every command that renders without a warning, and the exporter's systemd
//! unit, hardened and accepted by `systemd-analyze verify`. `dist/package.sh` checks the same in
//! the built .deb, .rpm and tarball.

use super::fabcheck;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-packaging-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// The pages `fabcheck manpage --dir` writes, into a fresh `man1` directory.
fn pages(label: &str) -> PathBuf {
    let root = scratch(label);
    let man1 = root.join("man1");
    std::fs::create_dir_all(&man1).unwrap();
    let out = fabcheck(&["manpage", "--dir", man1.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    man1
}

#[test]
fn every_command_has_a_manual_page_that_renders_without_warnings() {
    let man1 = pages("man");
    for command in ["check", "devices", "fabric", "pair", "mesh", "serve", "exporter", "compare", "bundle", "completions", "accept", "collective"] {
        let page = man1.join(format!("fabcheck-{command}.1"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(text.contains(&format!(".TH fabcheck-{command} 1")), "{command}: not a section 1 page");
    }
    assert!(!man1.join("fabcheck-agent.1").exists() && !man1.join("fabcheck-manpage.1").exists(), "a hidden command got a page");
    // groff is the renderer man uses; -ww turns every warning on, -z renders to nothing.
    assert!(have("groff"), "groff is needed to render the man pages (apt install groff-base)");
    let mut rendered = 0;
    for entry in std::fs::read_dir(&man1).unwrap() {
        let page = entry.unwrap().path();
        let out = Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z"]).arg(&page).output().unwrap();
        let warnings = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && warnings.is_empty(), "{}: {warnings}", page.display());
        rendered += 1;
    }
    assert_eq!(rendered, 13, "fabcheck.1 and twelve command pages");
    let _ = std::fs::remove_dir_all(man1.parent().unwrap());
}

/// A path as the executable of a unit's `ExecStart=` (systemd.syntax(7), "Quoting"): in double
/// quotes (the checkout's path may hold a space), `%` doubled (a specifier otherwise), `\` and
/// `"` escaped. (systemd refuses an executable whose name holds a quote or a backslash however it
/// is written: such a checkout cannot have its unit verified.)
fn systemd_word(path: &str) -> String {
    format!("\"{}\"", path.replace('\\', "\\\\").replace('"', "\\\"").replace('%', "%%"))
}

#[test]
fn the_exporter_unit_is_hardened_listens_on_loopback_and_systemd_accepts_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/systemd/fabcheck-exporter.service");
    let unit = std::fs::read_to_string(&path).unwrap();
    let settings: Vec<&str> = unit.lines().filter(|l| !l.starts_with('#') && l.contains('=')).collect();
    for want in [
        "DynamicUser=yes",
        "ProtectSystem=strict",
        "ProtectKernelTunables=yes",
        "ProtectHome=yes",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "Documentation=man:fabcheck-exporter(1)",
        "WantedBy=multi-user.target",
    ] {
        assert!(settings.contains(&want), "the unit lacks {want}");
    }
    let exec = settings.iter().find_map(|l| l.strip_prefix("ExecStart=")).expect("ExecStart");
    assert!(exec.starts_with("/usr/bin/fabcheck exporter --listen 127.0.0.1:"), "{exec}");
    assert!(!settings.iter().any(|l| l.starts_with("ReadWritePaths=")), "it writes nowhere");

    // systemd's own reading of it, against this build's binary and manual pages (the
    // Documentation= page must exist: verify runs man on it).
    if !have("systemd-analyze") {
        eprintln!("systemd-analyze is not installed: the unit's settings were checked, its syntax was not");
        return;
    }
    let man1 = pages("unit");
    let dir = man1.parent().unwrap().to_path_buf();
    let local = unit.replace("ExecStart=/usr/bin/fabcheck ", &format!("ExecStart={} ", systemd_word(env!("CARGO_BIN_EXE_fabcheck"))));
    std::fs::write(dir.join("fabcheck-exporter.service"), local).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(dir.join("fabcheck-exporter.service"))
        .env("MANPATH", &dir)
        .env("SYSTEMD_LOG_COLOR", "0")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");
    let _ = std::fs::remove_dir_all(&dir);
}
