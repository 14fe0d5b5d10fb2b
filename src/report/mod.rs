//! Output: human tables and the contract's JSON documents, over serialize-only types.

pub mod check;
pub mod csv;
pub mod devices;
pub mod formats;
pub mod gpu;
pub mod loss;
pub mod output;

pub use output::{machine, Format};

use serde::Serialize;

/// Prints one document in the chosen machine format (JSON by default), stamped with the host,
/// fabcheck's version and the time, on stdout or to `--output`.
pub fn print_json<T: Serialize>(doc: &T) {
    let mut value = match serde_json::to_value(doc) {
        Ok(v) => v,
        Err(err) => return eprintln!("fabcheck: cannot serialise the result: {err}"),
    };
    output::stamp(&mut value);
    let warned = formats::findings(&value).iter().any(|f| f.1 == "warning");
    output::note_warning(warned);
    if warned && output::fail_on_warning() && value.get("verdict").is_some() {
        value["verdict"] = "fail".into();
    }
    let text = match output::format() {
        Format::Oneline => formats::oneline::render(&value),
        Format::Prom => formats::prom::render(&value),
        Format::Junit => formats::junit::render(&value),
        Format::Json | Format::Human => serde_json::to_string_pretty(&value).map(|t| t + "\n").unwrap_or_default(),
    };
    output::emit(&text);
}

/// Prints a human report on stdout (or to `--output`). Names and values read from sysfs or from
/// agents may hold control bytes (an escape sequence in a device name can rewrite the terminal):
/// every control character but newline and tab is shown escaped.
pub fn print_human(text: &str) {
    output::emit(&printable(text));
}

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

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_bytes_are_escaped() {
        assert_eq!(printable("mlx5_0\n  fw 1.2\t"), "mlx5_0\n  fw 1.2\t");
        assert_eq!(printable("evil\u{1b}[2Jname\r"), "evil\\u{1b}[2Jname\\u{d}");
    }
}
