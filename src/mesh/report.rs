//! The mesh's result as a [`Document`] that `report::output` writes in every format. The pair
//! records are streamed from the spool into the JSON, so a mesh of two million pairs is never
//! one string in memory.

use super::analysis::{Criteria, PairMeasure, Suspect};
use super::doc::{MeshDoc, PairRecord, PatternDoc, Timing, Unreachable};
use super::spool;
use super::text::{self, Counts};
use crate::outcome::Verdict;
use crate::report::{Document, Stamp};
use serde::Serialize;
use std::io::{self, Write};

/// A finished mesh: the document (its `pairs` left empty: they are in `pairs`, streamed), and
/// what the human view needs.
pub struct MeshReport {
    pub doc: MeshDoc,
    pub(super) pairs: spool::Pairs,
    pub(super) counts: Counts,
    /// First pass, zoom-in, then retests: a later measure of a pair stands for it.
    pub(super) measured: Vec<PairMeasure>,
    pub(super) criteria: Criteria,
    pub(super) quiet: bool,
}

impl MeshReport {
    /// Which figures of each pair its latest measure found bad, judged as the analysis judged
    /// them: against the first pass's medians (a retest holds only bad pairs).
    fn blames(&self) -> impl Fn(&str, &str) -> crate::outcome::PairBlame + '_ {
        let index: std::collections::HashMap<&str, usize> = self.doc.endpoints.iter().enumerate().map(|(i, e)| (e.as_str(), i)).collect();
        let first = &self.measured[..self.counts.first.min(self.measured.len())];
        let (mb, ml) = super::analysis::medians(first);
        let mut latest: std::collections::HashMap<(usize, usize), &PairMeasure> = std::collections::HashMap::new();
        for m in &self.measured {
            latest.insert((m.a.min(m.b), m.a.max(m.b)), m);
        }
        move |a, b| match (index.get(a), index.get(b)) {
            (Some(&a), Some(&b)) => latest.get(&(a.min(b), a.max(b))).map(|m| super::analysis::blame(m, &self.criteria, mb, ml)).unwrap_or_default(),
            _ => Default::default(),
        }
    }

    /// A mesh document read back (its pair records in memory), to be printed again: the
    /// machine formats and the JSON; its human view has no measures to draw.
    pub fn replay(mut doc: MeshDoc) -> MeshReport {
        let records = std::mem::take(&mut doc.pairs);
        // The measures again from the records, the first pass first (as a run keeps them), so
        // the printers judge each pair's figures as the run did.
        let index: std::collections::HashMap<&str, usize> = doc.endpoints.iter().enumerate().map(|(i, e)| (e.as_str(), i)).collect();
        let measure_of = |r: &PairRecord| Some(PairMeasure::of(*index.get(r.a.as_str())?, *index.get(r.b.as_str())?, &r.results, r.error.is_some()));
        let first: Vec<PairMeasure> = records.iter().filter(|r| !r.retest && !r.zoom).filter_map(measure_of).collect();
        let later: Vec<PairMeasure> = records.iter().filter(|r| r.retest || r.zoom).filter_map(measure_of).collect();
        let counts = Counts { first: first.len(), ..Counts::default() };
        let measured = first.into_iter().chain(later).collect();
        MeshReport { doc, pairs: spool::Pairs::Memory(records), counts, measured, criteria: Criteria::default(), quiet: false }
    }

    /// The document as it is serialised: the same keys in the same order as 0.2's, then the
    /// stamp, with the pair records read from the spool.
    fn out<'a>(&'a self, stamp: Option<&'a Stamp>, verdict: Option<Verdict>) -> Out<'a> {
        let doc = &self.doc;
        Out {
            schema: &doc.schema,
            verdict: verdict.unwrap_or(doc.verdict),
            endpoints: &doc.endpoints,
            hosts: &doc.hosts,
            pairs: &self.pairs,
            suspects: &doc.suspects,
            unreachable: &doc.unreachable,
            pattern: doc.pattern.as_ref(),
            timing: doc.timing.as_ref(),
            stamp,
        }
    }
}

#[derive(Serialize)]
struct Out<'a> {
    schema: &'a str,
    verdict: Verdict,
    endpoints: &'a [String],
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    hosts: &'a std::collections::BTreeMap<String, String>,
    pairs: &'a spool::Pairs,
    suspects: &'a [Suspect],
    #[serde(skip_serializing_if = "<[Unreachable]>::is_empty")]
    unreachable: &'a [Unreachable],
    #[serde(skip_serializing_if = "Option::is_none")]
    pattern: Option<&'a PatternDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timing: Option<&'a Timing>,
    /// `host`, `fabcheck_version`, `time`: last, after 0.2's keys.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    stamp: Option<&'a Stamp>,
}

impl Document for MeshReport {
    fn command(&self) -> crate::report::Command {
        crate::report::Command::Mesh
    }

    fn verdict(&self) -> Option<Verdict> {
        Some(self.doc.verdict)
    }

    /// A flaky link (bad, then good on retest) is the lesser suspect: the one `--fail-on
    /// warning` is about. (Every suspect fails the verdict today.)
    fn has_warning(&self) -> bool {
        self.doc.suspects.iter().any(|s| s.is_flaky() || !s.is_error())
    }

    fn human(&self) -> String {
        text::human(&self.doc, self.counts, &self.measured, &self.criteria, self.quiet)
    }

    /// Streamed: pretty, the pair records one at a time from the spool. A spool that failed
    /// (a full TMPDIR) is an error before the first byte, not a truncated document.
    fn write_json(&self, out: &mut dyn Write, stamp: &Stamp, verdict: Option<Verdict>) -> io::Result<()> {
        if let Some(why) = self.pairs.failed() {
            return Err(io::Error::other(why.to_string()));
        }
        serde_json::to_writer_pretty(&mut *out, &self.out(Some(stamp), verdict))?;
        out.write_all(b"\n")
    }

    /// Suspects and unreachable endpoints as findings (`mesh.suspect`, `mesh.unreachable`),
    /// each pair's latest measure (a retest or zoom-in stands for the first pass's) in the order
    /// the pairs were first measured, and the counts.
    fn feed(&self, sink: &mut dyn crate::report::Sink) -> io::Result<()> {
        use crate::outcome::{Finding, FindingId, Measure, Severity, Subject, SuspectKind, Tally};
        let doc = &self.doc;
        // Endpoints by the host their agent said, as the terminal names them (the JSON keeps
        // the address, with the host beside it).
        let names = super::names::Names::of_doc(doc);
        for s in &doc.suspects {
            sink.finding(&s.finding(names.subject(&s.subject)));
        }
        for u in &doc.unreachable {
            sink.finding(&Finding::new(FindingId::MeshUnreachable, Severity::Error, names.of(&u.endpoint), u.error.clone(), ""));
        }
        let blame = self.blames();
        let mut latest: Vec<PairRecord> = Vec::new();
        let mut at: std::collections::HashMap<(String, String), usize> = std::collections::HashMap::new();
        let mut railed = false;
        self.pairs.for_each(|p| {
            railed |= p.rail.is_some();
            let key = if p.a <= p.b { (p.a.clone(), p.b.clone()) } else { (p.b.clone(), p.a.clone()) };
            match at.get(&key) {
                Some(&i) => latest[i] = p,
                None => {
                    at.insert(key, latest.len());
                    latest.push(p);
                }
            }
        })?;
        // Each endpoint's name worked out once, not once per pair (a mesh has n² of them).
        let named: std::collections::HashMap<&str, String> = doc.endpoints.iter().map(|e| (e.as_str(), names.of(e))).collect();
        let name = |e: &str| named.get(e).cloned().unwrap_or_else(|| names.of(e));
        for p in &latest {
            let subject = Subject::Pair { a: name(&p.a), b: name(&p.b) };
            let blame = blame(&p.a, &p.b);
            sink.measure(&Measure::MeshPair {
                subject: &subject,
                rail: p.rail,
                verdict: p.verdict,
                results: &p.results,
                error: p.error.as_deref(),
                blame,
            });
        }
        let mut kinds: Vec<(SuspectKind, usize)> =
            [SuspectKind::Node, SuspectKind::Link, SuspectKind::Switch, SuspectKind::Uplink, SuspectKind::Config]
                .into_iter()
                .map(|k| (k, 0))
                .collect();
        if railed {
            kinds.push((SuspectKind::Rail, 0));
        }
        for s in &doc.suspects {
            match kinds.iter_mut().find(|(k, _)| *k == s.kind) {
                Some(k) => k.1 += 1,
                None => kinds.push((s.kind, 1)),
            }
        }
        kinds.into_iter().for_each(|(kind, count)| sink.tally(&Tally::Suspects { kind, count }));
        sink.tally(&Tally::Unreachable(doc.unreachable.len()));
        sink.tally(&Tally::Endpoints(doc.endpoints.len()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(pairs: spool::Pairs) -> MeshReport {
        let doc = MeshDoc {
            schema: "fabcheck.mesh.v1".into(),
            verdict: Verdict::Pass,
            endpoints: vec!["n1".into(), "n2".into()],
            hosts: Default::default(),
            pairs: Vec::new(),
            suspects: Vec::new(),
            unreachable: Vec::new(),
            pattern: None,
            timing: None,
        };
        MeshReport { doc, pairs, counts: Counts::default(), measured: Vec::new(), criteria: Criteria::default(), quiet: false }
    }

    #[test]
    fn the_streamed_document_carries_the_stamp_and_the_verdict_given() {
        let record = PairRecord {
            a: "n1".into(),
            b: "n2".into(),
            verdict: Verdict::Pass,
            results: Vec::new(),
            error: None,
            retest: false,
            zoom: false,
            rail: None,
            judged_against_gbps: None,
        };
        let r = report(spool::Pairs::Memory(vec![record]));
        let stamp = Stamp { host: "h".into(), fabcheck_version: "0.0.0", time: "2026-12-01T00:00:00Z".into() };
        let mut out = Vec::new();
        r.write_json(&mut out, &stamp, Some(Verdict::Fail)).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!((doc["verdict"].as_str(), doc["host"].as_str(), doc["time"].as_str()), (Some("fail"), Some("h"), Some("2026-12-01T00:00:00Z")));
        assert_eq!(doc["pairs"][0]["b"], "n2");
        assert!(out.ends_with(b"}\n"));
    }

    #[test]
    fn a_failed_spool_writes_nothing() {
        let failed = spool::Pairs::File {
            reader: std::cell::RefCell::new(std::io::BufReader::new(std::fs::File::open("/dev/null").unwrap())),
            count: 3,
            failed: Some("the pair records' temporary file (in /tmp): No space left on device".into()),
        };
        let r = report(failed);
        let mut out = Vec::new();
        let stamp = Stamp::now();
        let err = r.write_json(&mut out, &stamp, None).unwrap_err();
        assert!(err.to_string().contains("No space left") && out.is_empty(), "{err}");
        assert!(r.feed(&mut crate::report::oneline::OnelinePrinter::new(crate::report::Command::Mesh)).is_err());
    }

    #[test]
    fn a_flaky_link_is_the_warning_fail_on_warning_is_about() {
        use super::super::analysis::SuspectKind;
        let mut r = report(spool::Pairs::Memory(Vec::new()));
        assert_eq!(crate::report::output::judged(&r, true), (Some(Verdict::Pass), crate::error::Outcome::Pass));
        let mut flaky = Suspect::new(SuspectKind::Link, "n1<->n2", "flaky: bad, then good on retest");
        flaky.flaky = true;
        r.doc.suspects.push(flaky);
        assert!(r.has_warning());
        assert_eq!(crate::report::output::judged(&r, true).1, crate::error::Outcome::Fail);
    }
}
