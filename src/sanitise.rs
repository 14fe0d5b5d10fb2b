//! The one place text from outside (a device or host name, a firmware string, an agent's error,
//! a tool's answer) is made safe for where it is written. Every printer and side file goes
//! through one of these; nothing else escapes text.
//!
//! - a terminal or log: [`printable`] (a report: newlines and tabs kept) and [`one_line`] (a
//!   value inside a line: those escaped too, so a name cannot forge a line);
//! - XML (JUnit, the HTML heat map, the SVG plot): [`xml`];
//! - a line a shell `eval`s (NHC's drain reason, the prom page's cause label): [`for_eval`];
//! - a CSV cell a spreadsheet opens: [`csv_field`].
//!
//! A leaf: it imports nothing of fabcheck.
//!
//! Peers' messages are made one-line strings as they arrive ([`json_strings`], in
//! `control::protocol::decode_from_peer`), so every printer after that holds them safe.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with control characters other than newline and tab written as `\u{..}` escapes
/// (an escape sequence from a device name cannot move the cursor or clear the screen).
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |c| (c.is_control() && c != '\n' && c != '\t') || is_hidden(c))
}

/// Characters that are not control characters but must not reach a terminal or a document
/// raw either: the non-characters U+FFFE and U+FFFF (XML forbids them; some terminals take
/// them as a byte-order mark) and the bidirectional overrides and isolates (U+202A..U+202E,
/// U+2066..U+2069), which make a line read differently from what it holds.
fn is_hidden(c: char) -> bool {
    matches!(c, '\u{fffe}' | '\u{ffff}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A value from outside for one line of human output: every control character, newline and tab
/// included, written as a `\u{..}` escape, so a name holding a newline cannot forge a line.
pub fn one_line(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c.is_control() || is_hidden(c))
}

/// Every string of a JSON value from a peer (an agent's reply: host and device names, counter
/// names, error causes), object keys included, made [`one_line`]: whatever a printer, table,
/// log or document later does with them, none holds a line break, an escape sequence or a
/// hidden character (issue #58). Applied once, where the message arrives.
pub fn json_strings(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Cow::Owned(clean) = one_line(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(json_strings),
        Value::Object(map) => {
            if map.keys().any(|k| matches!(one_line(k), Cow::Owned(_))) {
                let old = std::mem::take(map);
                for (k, v) in old {
                    map.insert(one_line(&k).into_owned(), v);
                }
            }
            map.values_mut().for_each(json_strings);
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            let _ = write!(out, "{}", c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text for XML content and attribute values (JUnit, HTML, SVG). Control characters other than
/// tab, newline and carriage return, and the non-characters XML 1.0 forbids (U+FFFE, U+FFFF),
/// are written as `\u{..}` escapes: a device named `mlx5_\u{ffff}` cannot make a document
/// invalid.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}') => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// One line that a shell may `eval` (NHC does, for its drain reason): quotes, `$`, backticks
/// and backslashes are replaced by `_`, control characters by a space (replaced, not escaped:
/// an escape is one more thing a consumer's quoting can get wrong). An apostrophe is left out,
/// and a possessive `'s` with it, so the reason stays readable (issue #57: `mlx5_0's port 1`
/// is `mlx5_0 port 1`, not `mlx5_0_s port 1`).
pub fn for_eval(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut line = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\'' => {
                let possessive = i > 0
                    && chars[i - 1].is_alphanumeric()
                    && chars.get(i + 1) == Some(&'s')
                    && chars.get(i + 2).is_none_or(|c| !c.is_alphanumeric());
                i += if possessive { 2 } else { 1 };
                continue;
            }
            '"' | '`' | '$' | '\\' => line.push('_'),
            c if c.is_control() || is_hidden(c) => line.push(' '),
            c => line.push(c),
        }
        i += 1;
    }
    line.trim_end().to_string()
}

/// One CSV field as RFC 4180 writes it (quoted when it holds a comma, a quote or a line break,
/// its quotes doubled). A text a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab
/// or a carriage return first, as OWASP's CSV injection advice lists them) and that is not a
/// number gets a leading `'`, so a host that names itself `=HYPERLINK(...)` stays a name.
pub fn csv_field(text: &str) -> Cow<'_, str> {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']) && text.parse::<f64>().is_err();
    let text: Cow<'_, str> = if formula { Cow::Owned(format!("'{text}")) } else { Cow::Borrowed(text) };
    if text.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", text.replace('"', "\"\"")))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_on_their_line() {
        assert_eq!(one_line("mlx5_0"), "mlx5_0");
        assert_eq!(one_line("mlx5_0\nPASS  forged\t"), "mlx5_0\\u{a}PASS  forged\\u{9}");
    }

    #[test]
    fn control_bytes_are_escaped() {
        assert_eq!(printable("mlx5_0\n  fw 1.2\t"), "mlx5_0\n  fw 1.2\t");
        assert_eq!(printable("evil\u{1b}[2Jname\r"), "evil\\u{1b}[2Jname\\u{d}");
    }

    #[test]
    fn xml_text_is_always_well_formed() {
        assert_eq!(xml("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
        assert_eq!(xml("mlx5_\u{ffff}\u{1b}\tx\n"), "mlx5_\\u{ffff}\\u{1b}\tx\n");
    }

    #[test]
    fn an_eval_of_the_line_runs_nothing() {
        assert_eq!(for_eval("a'b\"c`d$e\\f\ng "), "ab_c_d_e_f g");
        assert_eq!(for_eval("mlx5_0's port 1 isn't up; the kernel's"), "mlx5_0 port 1 isnt up; the kernel");
        assert_eq!(for_eval("'s'"), "s");
    }

    #[test]
    fn csv_fields_are_quoted_and_never_formulas() {
        assert_eq!(csv_field("a"), "a");
        assert_eq!(csv_field("b,c"), "\"b,c\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("-1.5"), "-1.5", "a number stays a number");
        assert_eq!(csv_field("+cmd|' /C calc'!A0"), "'+cmd|' /C calc'!A0");
    }

    #[test]
    fn hidden_characters_are_escaped_too() {
        assert_eq!(one_line("a\u{fffe}b\u{202e}c"), "a\\u{fffe}b\\u{202e}c");
        assert_eq!(printable("x\u{2066}y\n"), "x\\u{2066}y\n");
    }

    #[test]
    fn a_peers_json_holds_no_raw_control_anywhere() {
        let mut v = serde_json::json!({"host": "n1\nPASS forged", "counters": {"rx\u{1b}]52;c;eA==\u{7}": 1}, "list": ["ok", "\r"], "n": 3});
        json_strings(&mut v);
        let text = v.to_string();
        assert!(!text.contains("\\n") || text.contains("\\\\u{a}"), "{text}");
        assert_eq!(v["host"], "n1\\u{a}PASS forged");
        assert_eq!(v["counters"]["rx\\u{1b}]52;c;eA==\\u{7}"], 1);
        assert_eq!(v["list"][1], "\\u{d}");
        assert_eq!(v["n"], 3);
    }
}
