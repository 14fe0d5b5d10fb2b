//! The CSV files of `fabric`'s design checks (`--plan`, `--rail-map`): RFC 4180 records
//! (fields separated by commas, quoted with `"` when they hold commas, quotes or line breaks,
//! `""` for a quote inside quotes; CRLF or LF line ends), with a header naming the columns.
//!
//! The files are untrusted input: read through the one bounded reader (regular files only,
//! at most [`MAX_BYTES`]), every record bounded to [`MAX_RECORD`] characters, and every error
//! names the file and the line, so an operator can fix a spreadsheet export by hand.

use std::path::Path;
use std::time::Instant;

/// Larger files are refused: a 10k-host plan is well under 2 MiB; 0.4 takes up to 256 MiB, as
/// for `--topology` (a 100,000-node fabric's cabling).
pub const MAX_BYTES: u64 = 256 << 20;
/// The longest record (a node description is at most 64 bytes; four of them fit many times).
pub const MAX_RECORD: usize = 4096;
/// Records parsed between two looks at the deadline.
pub const RECORDS_PER_DEADLINE_CHECK: usize = 1024;

/// Why a CSV file could not be used; `what` is the file's role (`plan`, `rail map`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CsvError {
    #[error("cannot read {what} {path}: {error}")]
    Unreadable { what: &'static str, path: String, error: String },
    #[error("{what} {path} is not a regular file ({kind})")]
    NotAFile { what: &'static str, path: String, kind: &'static str },
    #[error("{what} {path} is larger than {limit} bytes")]
    TooLarge { what: &'static str, path: String, limit: u64 },
    #[error("{path}:{line}: {why}")]
    Syntax { what: &'static str, path: String, line: usize, why: String },
    #[error("{what} {path} has a header but no rows")]
    Empty { what: &'static str, path: String },
    #[error("{what} {path} was not parsed within the deadline (stopped at line {line})")]
    Deadline { what: &'static str, path: String, line: usize },
}

/// One record: the line it starts on and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub line: usize,
    pub fields: Vec<String>,
}

/// A parsed file: the header's columns (lower-cased, trimmed) and the data records
/// (records whose every field is empty, as spreadsheets export blank rows, are left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub path: String,
    pub what: &'static str,
    pub columns: Vec<String>,
    pub rows: Vec<Record>,
}

impl Table {
    /// The index of each of `wanted` in the header, or a syntax error at line 1 naming what is
    /// missing (extra columns are allowed: a plan often carries cable ids and lengths).
    pub fn require(&self, wanted: &[&str]) -> Result<Vec<usize>, CsvError> {
        let missing: Vec<&str> = wanted.iter().copied().filter(|w| !self.columns.iter().any(|c| c == w)).collect();
        if !missing.is_empty() {
            return Err(self.syntax(1, format!("the header lacks {}: it must name the columns {}", missing.join(", "), wanted.join(","))));
        }
        Ok(wanted.iter().map(|w| self.columns.iter().position(|c| c == w).expect("checked above")).collect())
    }

    pub fn syntax(&self, line: usize, why: String) -> CsvError {
        CsvError::Syntax { what: self.what, path: self.path.clone(), line, why }
    }
}

/// Reads `path` through the bounded reader and parses it, giving up once `deadline` has passed.
pub fn load(what: &'static str, path: &Path, deadline: Option<Instant>) -> Result<Table, CsvError> {
    use crate::sys::fs::{read_bytes, ReadError};
    let shown = path.display().to_string();
    let bytes = read_bytes(path, MAX_BYTES).map_err(|e| match e {
        ReadError::NotRegular { kind, .. } => CsvError::NotAFile { what, path: shown.clone(), kind },
        ReadError::TooLarge { .. } => CsvError::TooLarge { what, path: shown.clone(), limit: MAX_BYTES },
        other => CsvError::Unreadable { what, path: shown.clone(), error: other.reason() },
    })?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
            return Err(CsvError::Syntax {
                what,
                path: shown,
                line,
                why: "not text (invalid UTF-8): binary data, or a spreadsheet saved in another format than CSV UTF-8".into(),
            });
        }
    };
    parse_until(what, &shown, &text, || deadline.is_some_and(|d| Instant::now() >= d))
}

/// Parses CSV text; `path` only names it in errors. `expired` is asked every
/// [`RECORDS_PER_DEADLINE_CHECK`] records whether time is up (tests count the calls).
pub fn parse_until(what: &'static str, path: &str, text: &str, mut expired: impl FnMut() -> bool) -> Result<Table, CsvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text); // Excel's byte-order mark
    let syntax = |line: usize, why: String| CsvError::Syntax { what, path: path.to_string(), line, why };
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        if records.len() % RECORDS_PER_DEADLINE_CHECK == 0 && expired() {
            return Err(CsvError::Deadline { what, path: path.to_string(), line });
        }
        let start = line;
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut length = 0usize;
        loop {
            // One field.
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        None => return Err(syntax(start, "a quoted field is not closed (a '\"' is missing)".into())),
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            field.push(c);
                        }
                    }
                    length += 1;
                    if length > MAX_RECORD {
                        return Err(syntax(start, format!("a record longer than {MAX_RECORD} characters")));
                    }
                }
                match chars.peek() {
                    None | Some(',') | Some('\n') | Some('\r') => {}
                    Some(_) => return Err(syntax(line, "text after a closing quote: a quote inside a field is written \"\"".into())),
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ',' || c == '\n' || c == '\r' {
                        break;
                    }
                    if c == '"' {
                        return Err(syntax(line, "a quote inside an unquoted field: quote the whole field and write the quote as \"\"".into()));
                    }
                    chars.next();
                    field.push(c);
                    length += 1;
                    if length > MAX_RECORD {
                        return Err(syntax(start, format!("a record longer than {MAX_RECORD} characters")));
                    }
                }
            }
            if let Some(c) = field.chars().find(|c| c.is_control() && *c != '\t' && *c != '\n') {
                return Err(syntax(line, format!("a control character (U+{:04X}): binary data, not CSV", c as u32)));
            }
            fields.push(std::mem::take(&mut field));
            match chars.next() {
                Some(',') => continue,
                Some('\r') => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    line += 1;
                    break;
                }
                Some('\n') => {
                    line += 1;
                    break;
                }
                None => break,
                Some(_) => unreachable!("a field ends at a comma, a line end or the end"),
            }
        }
        records.push(Record { line: start, fields });
    }
    let mut records = records.into_iter();
    let header = records.next().ok_or_else(|| syntax(1, "empty: the first line must be the header".into()))?;
    let columns: Vec<String> = header.fields.iter().map(|c| c.trim().to_ascii_lowercase()).collect();
    for (i, c) in columns.iter().enumerate() {
        if !c.is_empty() && columns[..i].contains(c) {
            return Err(syntax(header.line, format!("the header names the column {c} twice")));
        }
    }
    let mut rows = Vec::new();
    for record in records {
        if record.fields.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        if record.fields.len() != columns.len() {
            return Err(syntax(record.line, format!("{} fields, but the header has {} columns", record.fields.len(), columns.len())));
        }
        rows.push(record);
    }
    let table = Table { path: path.to_string(), what, columns, rows };
    if table.rows.is_empty() {
        return Err(CsvError::Empty { what, path: path.to_string() });
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Table, CsvError> {
        parse_until("plan", "p.csv", text, || false)
    }

    fn line_of(text: &str) -> usize {
        match parse(text) {
            Err(CsvError::Syntax { line, .. }) => line,
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn rfc4180_records() {
        let t = parse("\u{feff}A_Node, a_port ,b_node,b_port\r\n\"leaf, one\",1,\"say \"\"hi\"\"\",2\r\n,,,\r\nx,3,y,4").unwrap();
        assert_eq!(t.columns, ["a_node", "a_port", "b_node", "b_port"]);
        assert_eq!(t.rows.len(), 2, "the blank row is skipped");
        assert_eq!(t.rows[0], Record { line: 2, fields: vec!["leaf, one".into(), "1".into(), "say \"hi\"".into(), "2".into()] });
        assert_eq!(t.rows[1].line, 4);
        assert_eq!(t.require(&["b_port", "a_node"]).unwrap(), vec![3, 0]);
        // A quoted line break: the next record's line number still counts it.
        let t = parse("a,b\n\"x\ny\",1\nz,2\n").unwrap();
        assert_eq!((t.rows[0].fields[0].as_str(), t.rows[1].line), ("x\ny", 4));
    }

    #[test]
    fn bad_csv_names_the_line() {
        assert_eq!(line_of("a,b\n1,2\n\"open,3\n"), 3);
        assert_eq!(line_of("a,b\n1,2,3\n"), 2);
        assert_eq!(line_of("a,b\nx\"y,2\n"), 2);
        assert_eq!(line_of("a,b\n\"x\"y,2\n"), 2);
        assert_eq!(line_of("a,b\n1,2\nx\u{0},2\n"), 3);
        assert_eq!(line_of("a,a\n1,2\n"), 1);
        assert_eq!(line_of(&format!("a,b\n{},2\n", "x".repeat(MAX_RECORD + 1))), 2);
        assert_eq!(line_of(""), 1);
        assert!(matches!(parse("a,b\n\n"), Err(CsvError::Empty { .. })));
        let t = parse("a,b\n1,2\n").unwrap();
        match t.require(&["a", "c"]) {
            Err(CsvError::Syntax { line: 1, why, .. }) => assert!(why.contains("lacks c"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deadline_is_asked_per_batch_of_records() {
        let text = format!("a,b\n{}", "1,2\n".repeat(3 * RECORDS_PER_DEADLINE_CHECK));
        let mut asked = 0;
        parse_until("plan", "p", &text, || {
            asked += 1;
            false
        })
        .unwrap();
        assert_eq!(asked, 4, "once per {RECORDS_PER_DEADLINE_CHECK} records, the first at the start");
        assert!(matches!(parse_until("plan", "p", &text, || true), Err(CsvError::Deadline { line: 1, .. })));
    }
}
