//! Pair records kept out of memory while a mesh runs, and streamed into the JSON document.
//!
//! A record holds every test's full result: about half a kilobyte in memory, more as pretty
//! JSON. All-pairs at 2,000 endpoints is two million records, which would not fit the
//! controller's budget (under 1 GiB) held in a `Vec` and then again as one JSON string. So each
//! record is written as one compact JSON line to a temporary file, removed from the directory as
//! soon as it is created (nothing is left behind, even if the run is killed), and read back one
//! at a time while the document is written to stdout. When no temporary file can be made, the
//! records stay in memory.

use super::doc::PairRecord;
use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};
use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Seek, Write};

pub(super) enum Spool {
    File { writer: BufWriter<File>, reader: File, count: usize, failed: Option<String> },
    Memory(Vec<PairRecord>),
}

impl Spool {
    pub(super) fn new() -> Spool {
        match temp_file() {
            Ok((writer, reader)) => Spool::File { writer: BufWriter::new(writer), reader, count: 0, failed: None },
            Err(e) => {
                tracing::debug!(error = %e, "no temporary file for the pair records: keeping them in memory");
                Spool::Memory(Vec::new())
            }
        }
    }

    pub(super) fn push(&mut self, record: PairRecord) {
        match self {
            Spool::Memory(v) => v.push(record),
            Spool::File { writer, count, failed, .. } => {
                if failed.is_some() {
                    return;
                }
                let line = serde_json::to_string(&record).unwrap_or_else(|_| "{}".into());
                match writer.write_all(line.as_bytes()).and_then(|()| writer.write_all(b"\n")) {
                    Ok(()) => *count += 1,
                    Err(e) => *failed = Some(format!("the pair records' temporary file (in {}): {e}", std::env::temp_dir().display())),
                }
            }
        }
    }

    /// The records, in the order pushed, ready to serialize once.
    pub(super) fn into_pairs(self) -> Pairs {
        match self {
            Spool::Memory(v) => Pairs::Memory(v),
            Spool::File { mut writer, mut reader, count, failed } => {
                let ready = writer.flush().and_then(|()| reader.rewind());
                let failed = failed.or_else(|| ready.err().map(|e| format!("the pair records' temporary file: {e}")));
                Pairs::File { reader: RefCell::new(BufReader::new(reader)), count, failed }
            }
        }
    }
}

/// A file in the temporary directory, open for writing and for reading, and already unlinked.
fn temp_file() -> io::Result<(File, File)> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let path = std::env::temp_dir().join(format!("fabcheck-mesh-{}-{nanos}.jsonl", std::process::id()));
    let writer = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
    let reader = File::open(&path);
    let _ = std::fs::remove_file(&path);
    Ok((writer, reader?))
}

/// The `pairs` of the JSON document.
pub(super) enum Pairs {
    File { reader: RefCell<BufReader<File>>, count: usize, failed: Option<String> },
    Memory(Vec<PairRecord>),
}

impl Pairs {
    /// Why the records cannot be read back, when they cannot (a full or failing TMPDIR): the
    /// document must then not be written at all, rather than cut short.
    pub(super) fn failed(&self) -> Option<&str> {
        match self {
            Pairs::File { failed, .. } => failed.as_deref(),
            Pairs::Memory(_) => None,
        }
    }
}

impl Pairs {
    /// Each record in the order pushed, read back one at a time.
    pub(super) fn for_each(&self, mut each: impl FnMut(PairRecord)) -> io::Result<()> {
        match self {
            Pairs::Memory(v) => v.iter().cloned().for_each(each),
            Pairs::File { reader, count, failed } => {
                if let Some(e) = failed {
                    return Err(io::Error::other(e.clone()));
                }
                let mut reader = reader.borrow_mut();
                reader.seek(std::io::SeekFrom::Start(0))?;
                let mut line = String::new();
                for _ in 0..*count {
                    line.clear();
                    reader.read_line(&mut line)?;
                    each(serde_json::from_str(&line).map_err(io::Error::other)?);
                }
            }
        }
        Ok(())
    }
}

impl Serialize for Pairs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Pairs::Memory(v) => v.serialize(s),
            Pairs::File { reader, count, failed } => {
                if let Some(e) = failed {
                    return Err(S::Error::custom(e));
                }
                let mut seq = s.serialize_seq(Some(*count))?;
                let mut reader = reader.borrow_mut();
                // From the first record every time: the document may be read more than once
                // (`--baseline` compares it, then it is written).
                std::io::Seek::seek(&mut *reader, std::io::SeekFrom::Start(0)).map_err(S::Error::custom)?;
                let mut line = String::new();
                for _ in 0..*count {
                    line.clear();
                    reader.read_line(&mut line).map_err(S::Error::custom)?;
                    let record: PairRecord = serde_json::from_str(&line).map_err(S::Error::custom)?;
                    seq.serialize_element(&record)?;
                }
                seq.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;

    fn record(i: usize) -> PairRecord {
        PairRecord {
            a: format!("n{i}"),
            b: "n0".into(),
            verdict: Verdict::Pass,
            results: Vec::new(),
            error: None,
            retest: i.is_multiple_of(2),
            zoom: false,
            rail: None,
            judged_against_gbps: None,
        }
    }

    #[test]
    fn records_come_back_in_order_from_the_file_or_memory() {
        for mut spool in [Spool::new(), Spool::Memory(Vec::new())] {
            for i in 0..100 {
                spool.push(record(i));
            }
            let pairs = spool.into_pairs();
            let text = serde_json::to_string(&pairs).unwrap();
            let back: Vec<PairRecord> = serde_json::from_str(&text).unwrap();
            assert_eq!(back.len(), 100);
            // Read again (`--baseline` reads the document before it is written): the same.
            assert_eq!(serde_json::to_string(&pairs).unwrap(), text);
            assert!(back.iter().enumerate().all(|(i, r)| r.a == format!("n{i}") && r.retest == (i % 2 == 0)));
        }
    }

    #[test]
    fn a_spool_that_cannot_be_written_says_so_before_the_document_is() {
        // A full TMPDIR: 0.2 wrote a truncated document and exited 0.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let mut spool = Spool::File { writer: BufWriter::new(full), reader: File::open("/dev/null").unwrap(), count: 0, failed: None };
        for i in 0..100 {
            spool.push(record(i));
        }
        let pairs = spool.into_pairs();
        let why = pairs.failed().expect("the failure is kept");
        assert!(why.contains("No space left") && why.contains("temporary file"), "{why}");
        assert!(serde_json::to_string(&pairs).is_err());
        assert!(Spool::Memory(Vec::new()).into_pairs().failed().is_none());
    }
}
