//! Output: human tables and the contract's JSON documents, over serialize-only types; every
//! command's result is a [`Document`] that [`output`] writes in the chosen format and place.

pub mod check;
pub mod colour;
pub mod csv;
pub mod devices;
pub mod document;
pub mod gpu;
pub mod json;
pub mod junit;
pub mod loss;
pub mod oneline;
pub mod output;
pub mod prom;
pub mod sink;

pub use document::{Document, Stamp};
pub use output::{machine, Format};
pub use sink::{Command, Sink};

/// Escapes text for HTML and SVG, in content and in attribute values.
pub fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// `text` with control characters other than newline and tab written as `\u{..}` escapes.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars().map(|c| if c.is_control() && c != '\n' && c != '\t' { c.escape_unicode().to_string() } else { c.to_string() }).collect(),
    )
}

/// A value from outside (a name, a version, a message that quotes one) for one line of human
/// output: every control character, newline and tab included, written as a `\u{..}` escape, so a
/// name holding a newline cannot forge a line of its own.
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect())
}

#[cfg(test)]
mod tests {
    use super::{one_line, printable};

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
}
