//! A judged document (`pair`'s, `collective`'s): one verdict over its findings, a human view
//! with or without `--quiet`, and its measures; [`Judged`] writes its [`Document`] once for all.

use super::document::{Document, Stamp};
use super::sink::{Command, Sink};
use crate::outcome::Verdict;
use serde::Serialize;
use std::io::{self, Write};

/// A document judged with one verdict over its findings, shown to people with or without
/// `--quiet` (`pair`, `collective`): [`Judged`] makes it a [`Document`].
pub trait JudgedDoc: Serialize {
    const COMMAND: Command;
    /// Its verdict, and the findings it stands on.
    fn judged(&self) -> (Verdict, &[crate::outcome::Finding]);
    /// The human view; `quiet`: only problems and the verdict.
    fn human(&self, quiet: bool) -> String;
    /// What the machine printers take besides the findings (its measures), in order.
    fn measures(&self, _sink: &mut dyn Sink) {}
}

/// A judged document and how its human view is asked for.
pub struct Judged<D> {
    pub doc: D,
    pub quiet: bool,
}

impl<D: JudgedDoc> Document for Judged<D> {
    fn command(&self) -> Command {
        D::COMMAND
    }

    fn verdict(&self) -> Option<Verdict> {
        Some(self.doc.judged().0)
    }

    fn has_warning(&self) -> bool {
        crate::outcome::any_warning(self.doc.judged().1)
    }

    fn human(&self) -> String {
        self.doc.human(self.quiet)
    }

    fn write_json(&self, out: &mut dyn Write, stamp: &Stamp, verdict: Option<Verdict>) -> io::Result<()> {
        super::json::write_sorted(out, &self.doc, stamp, verdict)
    }

    /// The findings, then the measures.
    fn feed(&self, sink: &mut dyn Sink) -> io::Result<()> {
        self.doc.judged().1.iter().for_each(|f| sink.finding(f));
        self.doc.measures(sink);
        Ok(())
    }
}
