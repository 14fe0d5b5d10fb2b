//! `fabcheck manpage [--dir DIR]` (hidden): the manual pages, rendered by clap_mangen from the
//! same clap definition `--help` prints, so they cannot drift from the flags. `dist/package.sh`
//! ships them as man1 pages.

use crate::cli::{Cli, ManpageArgs};
use crate::error::{Failure, Outcome, Stop};
use clap::CommandFactory;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;
use std::io::Write;

pub fn run(args: &ManpageArgs) -> Result<Outcome, Stop> {
    let cannot = |e: std::io::Error| Failure::new(format!("cannot render the manual pages: {e}"), "report this as a bug");
    match &args.dir {
        None => {
            let mut top = Vec::new();
            render_top(&mut top).map_err(cannot)?;
            crate::report::output::to_stdout(&top)?;
        }
        Some(dir) => {
            // Each page as `--output` is written: atomically, never through a planted link.
            for (name, page) in pages().map_err(cannot)? {
                crate::sys::atomic::write(&dir.join(name), &page).map_err(|e| {
                    Failure::new(format!("cannot write manual pages into {}: {e}", dir.display()), "check that DIR exists and is writable")
                })?;
            }
        }
    }
    Ok(Outcome::Pass)
}

/// Every page: `fabcheck.1`, then `fabcheck-COMMAND.1` for each command `--help` lists.
pub fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut top = Vec::new();
    render_top(&mut top)?;
    let mut pages = vec![("fabcheck.1".to_string(), top)];
    for sub in built().get_subcommands().filter(|s| !s.is_hide_set()) {
        let man = man(sub.clone());
        let mut page = Vec::new();
        man.render(&mut page)?;
        tail(false).to_writer(&mut page)?;
        pages.push((man.get_filename(), page));
    }
    Ok(pages)
}

/// The top page: synopsis, global options, the commands, then exit status, environment and
/// related tools.
fn render_top(w: &mut dyn Write) -> std::io::Result<()> {
    man(built()).render(w)?;
    tail(true).to_writer(w)
}

/// The command tree, built so that subcommands carry their page names (`fabcheck-check`).
fn built() -> clap::Command {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn man(cmd: clap::Command) -> Man {
    Man::new(cmd).date(env!("FABCHECK_BUILD_DATE")).source(format!("fabcheck {}", env!("CARGO_PKG_VERSION"))).manual("fabcheck manual")
}

/// The sections clap does not know: exit codes (the contract's), environment, see also.
fn tail(top: bool) -> Roff {
    let mut roff = Roff::default();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in [
        ("0", "everything ran and passed."),
        ("1", "it ran and something failed a check or a threshold (with --fail-on warning, also a warning)."),
        ("2", "it could not run: bad usage, no such device or port, host unreachable, peer gone, timeout. stderr then holds one line of cause and one of what to do."),
    ] {
        roff.control("TP", []).text([bold(code)]).text([roman(meaning)]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    roff.control("TP", [])
        .text([bold("FABCHECK_TOKEN")])
        .text([roman("the shared token of serve, and of pair and mesh towards tcp:// agents (safer than --token, which ps shows).")]);
    roff.control("TP", []).text([bold("RUST_LOG")]).text([roman("logging filter on stderr; overrides -v.")]);
    roff.control("SH", ["SEE ALSO"]);
    let mut see = String::new();
    if !top {
        see.push_str("fabcheck(1), ");
    }
    see.push_str("ibstat(8), ibv_devinfo(1), ib_write_bw(1), ib_send_lat(1), ibnetdiscover(8), iblinkinfo(8), sminfo(8). ");
    see.push_str("The documentation in /usr/share/doc/fabcheck/ (README.md, docs/checks.md, docs/ci.md, docs/contract.md...).");
    roff.text([roman(see)]);
    roff
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_page_per_visible_command_and_none_for_hidden_ones() {
        let pages = super::pages().expect("rendered in memory");
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        for want in ["fabcheck.1", "fabcheck-check.1", "fabcheck-devices.1", "fabcheck-serve.1", "fabcheck-mesh.1", "fabcheck-completions.1"] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("agent") || n.contains("manpage")), "hidden commands got pages: {names:?}");
        let top = String::from_utf8(pages[0].1.clone()).unwrap();
        assert!(top.contains(".TH fabcheck 1"), "not a section 1 roff page: {}", &top[..top.len().min(200)]);
        assert!(top.contains("EXIT STATUS") && top.contains("FABCHECK_TOKEN"), "top page lacks the exit codes or environment");
        let check = &pages.iter().find(|(n, _)| n == "fabcheck-check.1").unwrap().1;
        let check = String::from_utf8_lossy(check);
        assert!(check.contains("sysfs"), "fabcheck-check.1 lacks --sysfs-root");
        assert!(check.contains("fabcheck(1)"), "subcommand pages point back to fabcheck(1)");
    }
}
