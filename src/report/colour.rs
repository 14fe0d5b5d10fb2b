//! Colour in the human view, on a terminal only: the tag that starts a row (`FAIL`, `WARN`/`warn`,
//! `INFO`/`info`, `ok`, `skip`, pair's `ERROR`/`WARNING`) and the verdict line's `PASS`/`FAIL`.
//! Never in a pipe or a file, never with `NO_COLOR` set (no-color.org) or `TERM=dumb`, and never
//! in a machine format: scripts that grep `FAIL` see the bytes they always saw.
//!
//! Painted after the document is made printable (`sanitise::printable`), so an escape sequence can
//! only be one this module wrote: a value from outside had its control characters escaped first.

/// SGR sequences: bold red, yellow, cyan, green, dim; and the reset.
const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Whether the human view is coloured: `stdout` is a terminal, `NO_COLOR` is unset or empty (the
/// convention: "present and not empty" turns colour off), and the terminal is not `dumb`.
pub fn wanted(terminal: bool, no_color: Option<&std::ffi::OsStr>, term: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

/// [`wanted`] for this process's stdout and environment.
pub fn for_stdout() -> bool {
    use std::io::IsTerminal;
    wanted(std::io::stdout().is_terminal(), std::env::var_os("NO_COLOR").as_deref(), std::env::var_os("TERM").as_deref())
}

/// The tags a row or the verdict line starts with, and their colour.
const TAGS: &[(&str, &str)] = &[
    ("FAIL", RED),
    ("ERROR", RED),
    ("WARNING", YELLOW),
    ("WARN", YELLOW),
    ("warn", YELLOW),
    ("INFO", CYAN),
    ("info", CYAN),
    ("PASS", GREEN),
    ("ok", GREEN),
    ("skip", DIM),
];

/// `text` with the tag at the start of each line coloured; everything else as it was.
pub fn paint(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        match TAGS.iter().find(|(tag, _)| starts_with_tag(line, tag)) {
            Some((tag, colour)) => {
                out.push_str(colour);
                out.push_str(tag);
                out.push_str(RESET);
                out.push_str(&line[tag.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// The line starts with `tag` as a word of its own (`FAIL`, `FAIL:`, `FAIL  port.state`), not
/// as the start of another word (`FAILOVER`, `information`).
fn starts_with_tag(line: &str, tag: &str) -> bool {
    line.strip_prefix(tag).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', ':', '\n']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn only_a_terminal_without_no_color_gets_colour() {
        assert!(wanted(true, None, Some(OsStr::new("xterm-256color"))));
        assert!(wanted(true, Some(OsStr::new("")), None), "an empty NO_COLOR does not count");
        assert!(!wanted(false, None, None), "never in a pipe or a file");
        assert!(!wanted(true, Some(OsStr::new("1")), None));
        assert!(!wanted(true, None, Some(OsStr::new("dumb"))));
    }

    #[test]
    fn tags_and_verdicts_are_painted_and_nothing_else() {
        let text = "FAIL  port.state          mlx5_0/1     DOWN\n      what to do: FAIL nothing here\nwarn  link.trained\nok    devices.count\ninformation\nFAILOVER\n\nPASS: 12 checks, 0 errors, 1 warning\n";
        let painted = paint(text);
        assert!(painted.starts_with("\x1b[1;31mFAIL\x1b[0m  port.state"), "{painted:?}");
        assert!(painted.contains("\n      what to do: FAIL nothing here\n"), "only a leading tag: {painted:?}");
        assert!(painted.contains("\x1b[33mwarn\x1b[0m  link.trained\n"));
        assert!(painted.contains("\x1b[32mok\x1b[0m    devices.count\n"));
        assert!(painted.contains("\ninformation\nFAILOVER\n"), "not a tag: {painted:?}");
        assert!(painted.ends_with("\x1b[32mPASS\x1b[0m: 12 checks, 0 errors, 1 warning\n"));
        assert_eq!(paint("FAIL"), "\x1b[1;31mFAIL\x1b[0m");
        // Without the colours it is the same text.
        let plain = painted.replace(RED, "").replace(YELLOW, "").replace(GREEN, "").replace(RESET, "");
        assert_eq!(plain, text);
    }
}
