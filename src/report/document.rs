//! The one shape every command's result has: a schema'd JSON document with a verdict and
//! findings, a human view, the typed items the machine printers take, and the stamp.
//! `report::output` writes any [`Document`] in any format to stdout or `--output`, so no
//! command can lose `--format`, `--output`, `--fail-on` or the stamp by printing on its own (as
//! 0.2's mesh did).

use super::sink::{Command, Sink};
use crate::outcome::Verdict;
use serde::Serialize;
use std::io::{self, Write};

/// `host`, `fabcheck_version` and `time` (RFC 3339, UTC): every JSON document carries them.
#[derive(Debug, Clone, Serialize)]
pub struct Stamp {
    pub host: String,
    pub fabcheck_version: &'static str,
    pub time: String,
}

impl Stamp {
    /// The host a document is about: a bundle's origin (the host its manifest names), else
    /// this one; this build, now.
    pub fn of(origin: Option<&str>) -> Stamp {
        let stamp = Stamp::now();
        match origin {
            Some(host) => Stamp { host: host.to_string(), ..stamp },
            None => stamp,
        }
    }

    /// This host, this build, now.
    pub fn now() -> Stamp {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        Stamp { host: crate::sys::os::hostname(), fabcheck_version: env!("CARGO_PKG_VERSION"), time: crate::sys::time::rfc3339(secs) }
    }
}

/// A command's result.
pub trait Document {
    /// The command it is the result of.
    fn command(&self) -> Command;

    /// The verdict as judged (`None`: the document has none, as `devices`).
    fn verdict(&self) -> Option<Verdict>;

    /// Whether any finding is a warning (`--fail-on warning` then fails the run).
    fn has_warning(&self) -> bool;

    /// The host of the bundle it was read from, when the bundle names it (`--sysfs-root` with a
    /// manifest): the stamp then names that host, not the one it is read on.
    fn origin(&self) -> Option<&str> {
        None
    }

    /// The human view (control characters are escaped when it is written).
    fn human(&self) -> String;

    /// Writes the stamped JSON document, pretty, with `verdict` standing for the document's
    /// (after `--fail-on`); most documents through [`super::json::write_sorted`], mesh
    /// streaming its pair records.
    fn write_json(&self, out: &mut dyn Write, stamp: &Stamp, verdict: Option<Verdict>) -> io::Result<()>;

    /// Hands the machine printers what the document says, item by item, in the document's
    /// order. An error: the document cannot be produced (mesh's pair-record spool failed).
    fn feed(&self, sink: &mut dyn Sink) -> io::Result<()>;
}
