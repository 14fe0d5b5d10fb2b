//! CSV as RFC 4180 writes it (comma separated, `\n` line ends, a field quoted when it holds a
//! comma, a quote or a line break, its quotes doubled), for the side files of `pair --csv` and
//! `mesh --csv`.

/// One field, quoted when it must be, never a formula ([`crate::sanitise::csv_field`]).
pub use crate::sanitise::csv_field as field;

/// One line of fields, with its line end.
pub fn row<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = fields.iter().map(|f| field(f.as_ref()).into_owned()).collect::<Vec<_>>().join(",");
    out.push('\n');
    out
}

/// A figure in a CSV cell: three decimals without trailing zeros, empty when absent.
pub fn number(value: Option<f64>) -> String {
    value.filter(|v| v.is_finite()).map(crate::units::three).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(row(&["a", "b,c", "say \"hi\"", ""]), "a,\"b,c\",\"say \"\"hi\"\"\",\n");
        assert_eq!(number(Some(190.00049)), "190");
        assert_eq!(number(Some(1.23456)), "1.235");
        assert_eq!(number(None), "");
        assert_eq!(number(Some(f64::NAN)), "");
    }
}
