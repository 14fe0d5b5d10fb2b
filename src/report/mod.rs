//! Output: human tables and the contract's JSON documents, over serialize-only types.

pub mod check;
pub mod devices;
pub mod gpu;

use serde::Serialize;

/// Prints one JSON document on stdout.
pub fn print_json<T: Serialize>(doc: &T) {
    match serde_json::to_string_pretty(doc) {
        Ok(text) => println!("{text}"),
        Err(err) => eprintln!("fabcheck: cannot serialise the result: {err}"),
    }
}

/// Prints a human report on stdout. Names and values read from sysfs or from agents may hold
/// control bytes (an escape sequence in a device name can rewrite the terminal): every control
/// character but newline and tab is shown escaped.
pub fn print_human(text: &str) {
    print!("{}", printable(text));
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
