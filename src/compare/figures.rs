//! A document's figures as `compare` keeps them, whichever command wrote it: fixed-size
//! entries keyed by interned names (`read` fills them from a pair or mesh document,
//! `collective` from a collective one).

use super::{Figure, Name};
use std::collections::HashMap;
use std::sync::Arc;

/// Names stored once each.
#[derive(Debug, Default)]
pub struct Names {
    all: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

impl Names {
    pub(super) fn id(&mut self, name: &str) -> u32 {
        // A document is outside input: a test, host or device name holding a newline or an
        // escape sequence is kept one line, escaped, for every printer (issue #58).
        let name = &*crate::sanitise::one_line(name);
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let arc: Arc<str> = Arc::from(name);
        let id = self.all.len() as u32;
        self.all.push(Arc::clone(&arc));
        self.index.insert(arc, id);
        id
    }

    pub fn get(&self, id: u32) -> &str {
        &self.all[id as usize]
    }

    pub fn name(&self, id: u32) -> Name {
        Name(Arc::clone(&self.all[id as usize]))
    }
}

/// One figure: its key (names by id, the two ends in a fixed order) and its value.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub a: u32,
    pub b: u32,
    pub test: u32,
    pub direction: u32,
    pub size: u64,
    pub figure: Figure,
    pub value: f64,
}

/// Every figure of a document, in key order, one per key (a later record's replaces an
/// earlier one's: a retest or zoom-in stands for its pair).
#[derive(Debug, Default)]
pub struct Figures {
    pub names: Names,
    pub entries: Vec<Entry>,
}

impl Figures {
    /// The order of keys: by the names' text, then size and figure (as `Key`'s `Ord`).
    pub fn order(&self, x: &Entry, y: &Entry) -> std::cmp::Ordering {
        let n = |id| self.names.get(id);
        (n(x.a), n(x.b), n(x.test), n(x.direction), x.size, x.figure).cmp(&(n(y.a), n(y.b), n(y.test), n(y.direction), y.size, y.figure))
    }

    /// Sorts, keeping the last figure of each key.
    pub(super) fn finish(mut self) -> Figures {
        let mut entries = std::mem::take(&mut self.entries);
        // Stable: equal keys stay in document order, and the last of each run is kept.
        entries.sort_by(|x, y| self.order(x, y));
        let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
        for e in entries {
            match kept.last_mut() {
                Some(last) if self.order(last, &e).is_eq() => *last = e,
                _ => kept.push(e),
            }
        }
        kept.shrink_to_fit();
        self.entries = kept;
        self
    }
}
