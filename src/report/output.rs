//! The one output path: where and how a command's result goes. The format (`--format`, or a
//! command's `--json`), the destination (stdout, or `--output FILE` written atomically so
//! node_exporter's textfile collector never reads half a file), the stamp, `--fail-on`, and the
//! side files (`--csv`, `--svg`, `--html`). An [`Output`] value `main` builds before the command
//! runs and hands down.
//!
//! Nothing here exits: every failure to deliver is a typed [`Delivery`] (or, for a side file, a
//! [`Failure`]) returned to `main`, which alone chooses the exit code. Writes to stdout and stderr
//! never panic (`println!` does on a broken pipe): a reader gone away is a quiet exit 2.

use super::document::{Document, Stamp};
use crate::error::{Delivery, Failure, Outcome};
use crate::outcome::Verdict;
use crate::sys::atomic::{AtomicFile, WriteError};
use std::cell::Cell;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Human,
    Json,
    Oneline,
    Prom,
    Junit,
}

/// The output settings: the format, the destination, `--fail-on`, the command's own `--json`,
/// `check --max-len` and whether the human view is coloured. Built once in `main.rs` from the
/// command line and handed down to the command that delivers (no process-wide global); it
/// remembers whether a document was delivered, for [`Output::deliver_failure`].
#[derive(Debug, Default)]
pub struct Output {
    format: Format,
    output: Option<PathBuf>,
    fail_on_warning: bool,
    /// The command's own `--json` was given: a run that cannot run still writes its JSON
    /// error document.
    json_flag: bool,
    /// The human view on a terminal is coloured (never in a file, a pipe, or with NO_COLOR).
    colour: bool,
    /// `check --max-len`: the oneline line's most bytes.
    max_len: Cell<Option<usize>>,
    /// Whether a document was delivered: a run that then ends with exit 2 (a mesh or soak
    /// window interrupted, a side file) has said its verdict, and [`Output::deliver_failure`]
    /// leaves it in place.
    delivered: Cell<bool>,
}

impl Output {
    /// The format, the output file, whether warnings fail the run and whether the command's
    /// own `--json` was given.
    pub fn new(format: Format, output: Option<PathBuf>, fail_on_warning: bool, json_flag: bool) -> Output {
        crate::sys::stdio::note_stdout();
        let colour = output.is_none() && super::colour::for_stdout();
        Output { format, output, fail_on_warning, json_flag, colour, ..Output::default() }
    }

    /// Cuts `--format oneline`'s line to `max` bytes (`check --max-len`).
    pub fn limit_oneline(&self, max: usize) {
        self.max_len.set(Some(max));
    }

    /// The oneline line as `--max-len` allows.
    fn limited(&self, line: String) -> String {
        match self.max_len.get() {
            Some(max) => super::oneline::cut(&line, max),
            None => line,
        }
    }

    /// `--fail-on warning`: a warning fails the run (its document's verdict too).
    pub fn fail_on_warning(&self) -> bool {
        self.fail_on_warning
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// Whether a machine format was asked for: commands then build their document, not the
    /// human view.
    pub fn machine(&self) -> bool {
        self.format != Format::Human
    }

    /// The format a command's document is written in: `--format`, or JSON for a command's own
    /// `--json` when `--format` was left at human.
    pub fn chosen(&self, json_flag: bool) -> Format {
        match self.format {
            Format::Human if json_flag => Format::Json,
            f => f,
        }
    }

    /// Whether `--output` can be written, asked before the command runs (nothing is created).
    pub fn precheck(&self) -> Result<(), Delivery> {
        match self.output.as_deref() {
            Some(path) => crate::sys::atomic::precheck(path).map_err(Delivery::File),
            None => Ok(()),
        }
    }
}

/// What a document's verdict becomes under `--fail-on`, and the run's outcome with it.
pub fn judged(doc: &dyn Document, fail_on_warning: bool) -> (Option<Verdict>, Outcome) {
    let failed = doc.verdict() == Some(Verdict::Fail) || (fail_on_warning && doc.has_warning());
    let verdict = doc.verdict().map(|v| if failed { Verdict::Fail } else { v });
    (verdict, if failed { Outcome::Fail } else { Outcome::Pass })
}

impl Output {
    /// Writes a command's document in the chosen format to stdout or `--output`, and says how the
    /// run ended (its verdict, with `--fail-on`).
    pub fn deliver(&self, doc: &dyn Document, json_flag: bool) -> Result<Outcome, Delivery> {
        let (verdict, outcome) = judged(doc, self.fail_on_warning);
        let mut sink = Writer::open(self.output.as_deref())?;
        let format = self.chosen(json_flag);
        // The human view on a terminal is coloured (never in a file, a pipe, or with NO_COLOR).
        let written = if format == Format::Human && self.colour {
            sink.write_all(super::colour::paint(&crate::sanitise::printable(&doc.human())).as_bytes())
        } else {
            self.render(doc, format, verdict, &mut sink)
        };
        written.map_err(|e| sink.failure(e))?;
        sink.finish()?;
        self.delivered.set(true);
        Ok(outcome)
    }

    /// Writes a document a command renders itself (`accept`: its own formats) to `--output` or
    /// stdout, as [`Output::deliver`] writes the others.
    pub fn deliver_text(&self, text: &str) -> Result<(), Delivery> {
        let mut sink = Writer::open(self.output.as_deref())?;
        sink.write_all(text.as_bytes()).map_err(|e| sink.failure(e))?;
        sink.finish()?;
        self.delivered.set(true);
        Ok(())
    }

    /// A run that could not run (exit 2), said in the machine format a health check reads, so no
    /// consumer keeps the last run's verdict: `oneline` prints `fabcheck COMMAND ERROR: CAUSE` on
    /// stdout, `prom` writes `fabcheck_up 0` and the cause, `junit` a suite with one error case and
    /// JSON (`--format json` or the command's `--json`) a document of the command's schema with
    /// `verdict` `error` and the cause and remedy, each to `--output` (replacing the last run's file)
    /// or stdout. The human view says nothing more (the cause is on stderr). A destination that cannot take it is left as it is:
    /// the exit code and stderr already tell. After a delivered document (a run interrupted after
    /// its report) only `oneline`'s line is added: the document already says what was seen.
    pub fn deliver_failure(&self, command: &str, cause: &str, remedy: &str) {
        if self.format != Format::Oneline && self.delivered.get() {
            return;
        }
        let text = match self.format {
            // With `--output` the file gets the line (a `fabcheck check PASS` left there would be
            // read as this run's, issue #58); else stdout.
            Format::Oneline if self.output.is_some() => self.limited(super::oneline::error_line(command, cause)),
            Format::Oneline => {
                let _ = to_stdout(self.limited(super::oneline::error_line(command, cause)).as_bytes());
                return;
            }
            Format::Prom => super::prom::error_page(command, cause, now_unix()),
            Format::Junit => super::junit::error_document(command, cause, &Stamp::now()),
            Format::Json => match super::json::error_document(command, cause, remedy, &Stamp::now()) {
                Some(text) => text,
                None => return,
            },
            Format::Human if self.json_flag => match super::json::error_document(command, cause, remedy, &Stamp::now()) {
                Some(text) => text,
                None => return,
            },
            // The human view with `--output`: the file says the run could not run, so the last
            // run's text is not read as this one's.
            Format::Human if self.output.is_some() => {
                format!(
                    "fabcheck {command}: could not run: {}\n  what to do: {}\n",
                    crate::sanitise::printable(cause),
                    crate::sanitise::printable(remedy)
                )
            }
            Format::Human => return,
        };
        if let Ok(mut sink) = Writer::open(self.output.as_deref()) {
            if sink.write_all(text.as_bytes()).is_ok() {
                let _ = sink.finish();
            }
        }
    }

    /// The document in `format`, written to `out`. A document that cannot be produced (its
    /// serialisation failed: the spool) is an `io::Error` of kind `Other` from before the first byte.
    fn render(&self, doc: &dyn Document, format: Format, verdict: Option<Verdict>, out: &mut dyn Write) -> io::Result<()> {
        let stamp = Stamp::of(doc.origin());
        let fail_on_warning = self.fail_on_warning;
        let text = match format {
            Format::Human => return out.write_all(crate::sanitise::printable(&doc.human()).as_bytes()),
            Format::Json => return doc.write_json(out, &stamp, verdict),
            Format::Oneline => {
                let mut printer = super::oneline::OnelinePrinter::new(doc.command());
                doc.feed(&mut printer)?;
                self.limited(printer.finish(verdict))
            }
            Format::Prom => {
                let mut printer = super::prom::PromPrinter::new(doc.command(), verdict, fail_on_warning);
                doc.feed(&mut printer)?;
                printer.finish(now_unix())
            }
            Format::Junit => {
                let mut printer = super::junit::JunitPrinter::new(doc.command(), fail_on_warning);
                doc.feed(&mut printer)?;
                printer.finish(&stamp)
            }
        };
        out.write_all(text.as_bytes())
    }
}

/// Now, in Unix seconds (the prom page's run time).
fn now_unix() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as f64
}

/// Where the result goes: stdout or the `--output` file. It remembers the first error of the
/// destination itself, so a failure is blamed on the destination or on the document rightly.
struct Writer {
    out: Destination,
    failed: Option<io::Error>,
}

enum Destination {
    Stdout(io::BufWriter<io::StdoutLock<'static>>),
    File(AtomicFile),
}

impl Writer {
    fn open(output: Option<&Path>) -> Result<Writer, Delivery> {
        let out = match output {
            None if crate::sys::stdio::stdout_closed() => {
                return Err(Delivery::Stdout(io::Error::from_raw_os_error(libc::EBADF)));
            }
            None => Destination::Stdout(io::BufWriter::with_capacity(1 << 16, io::stdout().lock())),
            Some(path) => Destination::File(AtomicFile::create(path).map_err(Delivery::File)?),
        };
        Ok(Writer { out, failed: None })
    }

    /// What a failed render means: the destination's own error if it had one, else the document's.
    fn failure(&mut self, e: io::Error) -> Delivery {
        match (self.failed.take(), &self.out) {
            (Some(own), Destination::Stdout(_)) => stdout_failure(own),
            (Some(own), Destination::File(f)) => Delivery::File(WriteError { path: f.target().to_path_buf(), doing: "write", source: own }),
            (None, _) => Delivery::Document(e.to_string()),
        }
    }

    fn finish(self) -> Result<(), Delivery> {
        match self.out {
            Destination::Stdout(mut w) => w.flush().map_err(stdout_failure),
            Destination::File(f) => f.commit().map_err(Delivery::File),
        }
    }
}

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = match &mut self.out {
            Destination::Stdout(w) => w.write(buf),
            Destination::File(f) => f.write(buf),
        };
        r.inspect_err(|e| self.failed = Some(io::Error::new(e.kind(), e.to_string())))
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = match &mut self.out {
            Destination::Stdout(w) => w.flush(),
            Destination::File(f) => f.flush(),
        };
        r.inspect_err(|e| self.failed = Some(io::Error::new(e.kind(), e.to_string())))
    }
}

fn stdout_failure(e: io::Error) -> Delivery {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Delivery::BrokenPipe
    } else {
        Delivery::Stdout(e)
    }
}

/// Writes bytes that are the result itself to stdout (`completions`, `manpage`).
pub fn to_stdout(bytes: &[u8]) -> Result<(), Delivery> {
    if crate::sys::stdio::stdout_closed() {
        return Err(Delivery::Stdout(io::Error::from_raw_os_error(libc::EBADF)));
    }
    let mut out = io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(stdout_failure)
}

/// Writes a line to stderr. An error there cannot be told to anyone: it is dropped, never a panic
/// (`eprintln!` panics when stderr is `/dev/full` or closed).
pub fn to_stderr(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}").and_then(|()| err.flush());
}

/// A side file made whole before it is written (`pair --csv`, `--svg`, `mesh --html`).
#[derive(Debug, Clone)]
pub struct SideFile {
    pub path: PathBuf,
    /// What it is, in words (`the CSV`), and the flag that asked for it.
    pub what: &'static str,
    pub flag: &'static str,
    pub bytes: Vec<u8>,
}

impl SideFile {
    /// Writes it, as [`side_file`].
    pub fn write(&self, pass: bool) -> Result<(), Failure> {
        side_file(&self.path, self.what, self.flag, &self.bytes, pass)
    }
}

/// Writes a side file (`--csv`, `--svg`, `--html`) after the results, as `--output` is written.
/// One that cannot be written makes a passing run exit 2 (it could not do all it was asked, and
/// CI notices the missing file); a failed run stays a failed run (exit 1), with the error on stderr.
pub fn side_file(path: &Path, what: &str, flag: &str, bytes: &[u8], pass: bool) -> Result<(), Failure> {
    match crate::sys::atomic::write(path, bytes) {
        Ok(()) => Ok(()),
        Err(e) => side_file_failed(path, what, flag, &e.to_string(), pass),
    }
}

/// A side file could not be written: exit 2 for a passing run, a line on stderr for a failed one.
fn side_file_failed(path: &Path, what: &str, flag: &str, error: &str, pass: bool) -> Result<(), Failure> {
    let failure = Failure::new(
        format!("the results above stand, but {what} could not be written to {}: {error}", path.display()),
        format!("give a writable path to {flag}"),
    );
    if pass {
        return Err(failure);
    }
    to_stderr(&format!("fabcheck: {}\n  what to do: {}", crate::sanitise::one_line(&failure.cause), crate::sanitise::one_line(&failure.remedy)));
    Ok(())
}

/// A side file written as the run goes (mesh's `--csv`: a large mesh's rows never sit in memory),
/// through [`AtomicFile`]: renamed into place by [`StreamedFile::finish`], removed if the run ends
/// early. The first error is kept and reported at the end, when the results are out.
pub struct StreamedFile {
    path: PathBuf,
    what: &'static str,
    flag: &'static str,
    out: Result<AtomicFile, WriteError>,
}

impl StreamedFile {
    pub fn create(path: &Path, what: &'static str, flag: &'static str) -> StreamedFile {
        let out = AtomicFile::create(path);
        StreamedFile { path: path.to_path_buf(), what, flag, out }
    }

    pub fn write(&mut self, text: &str) {
        if let Ok(f) = &mut self.out {
            if let Err(e) = f.write_all(text.as_bytes()) {
                self.out = Err(WriteError { path: self.path.clone(), doing: "write", source: e });
            }
        }
    }

    /// Renames the file into place; as [`side_file`] when it cannot be.
    pub fn finish(self, pass: bool) -> Result<(), Failure> {
        let done = self.out.and_then(|f| f.commit());
        match done {
            Ok(()) => Ok(()),
            Err(e) => side_file_failed(&self.path, self.what, self.flag, &e.to_string(), pass),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Doc {
        verdict: Option<Verdict>,
        warned: bool,
        broken: bool,
    }

    impl Document for Doc {
        fn verdict(&self) -> Option<Verdict> {
            self.verdict
        }
        fn has_warning(&self) -> bool {
            self.warned
        }
        fn human(&self) -> String {
            "human\u{1b}[2J\n".into()
        }
        fn command(&self) -> super::super::sink::Command {
            super::super::sink::Command::Check
        }
        fn write_json(&self, out: &mut dyn Write, stamp: &Stamp, verdict: Option<Verdict>) -> io::Result<()> {
            if self.broken {
                return Err(io::Error::other("the pair records' temporary file: No space left on device"));
            }
            let doc = serde_json::json!({"schema":"fabcheck.check.v1","verdict":self.verdict,"findings":[]});
            super::super::json::write_sorted(out, &doc, stamp, verdict)
        }
        fn feed(&self, _sink: &mut dyn super::super::sink::Sink) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn fail_on_warning_is_the_documents_verdict() {
        let warned = Doc { verdict: Some(Verdict::Pass), warned: true, broken: false };
        assert_eq!(judged(&warned, false), (Some(Verdict::Pass), Outcome::Pass));
        assert_eq!(judged(&warned, true), (Some(Verdict::Fail), Outcome::Fail));
        let devices = Doc { verdict: None, warned: false, broken: false };
        assert_eq!(judged(&devices, true), (None, Outcome::Pass));
        let mut out = Vec::new();
        Output::default().render(&warned, Format::Json, Some(Verdict::Fail), &mut out).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!((doc["verdict"].as_str(), doc["fabcheck_version"].as_str()), (Some("fail"), Some(env!("CARGO_PKG_VERSION"))));
        let mut out = Vec::new();
        Output::default().render(&warned, Format::Human, None, &mut out).unwrap();
        assert_eq!(out, b"human\\u{1b}[2J\n", "control bytes escaped in the human view");
    }

    #[test]
    fn a_document_that_cannot_be_produced_is_a_delivery_failure_not_the_destinations() {
        let broken = Doc { verdict: Some(Verdict::Pass), warned: false, broken: true };
        let dir = std::env::temp_dir().join(format!("fabcheck-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        let mut sink = Writer::open(Some(&path)).unwrap();
        let err = Output::default().render(&broken, Format::Json, None, &mut sink).unwrap_err();
        assert!(matches!(sink.failure(err), Delivery::Document(why) if why.contains("No space left")));
        drop(sink);
        assert!(!path.exists() && std::fs::read_dir(&dir).unwrap().count() == 0, "nothing half-written");
        std::fs::remove_dir_all(&dir).ok();
    }
}
