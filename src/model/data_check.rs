//! `pair --validate`: what a receiver found when it checked the bytes that arrived against
//! the test's seeded pattern (as a side's result carries it).

use serde::{Deserialize, Serialize};

/// One side's check of the data it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataCheck {
    /// The pattern's seed (the controller's, in the spec).
    pub seed: u64,
    /// Messages (or final buffers) checked.
    pub checked: u64,
    /// Of those, how many differed from the pattern.
    pub bad: u64,
    /// The first difference found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<DataMismatch>,
}

/// Where the first bad message differed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataMismatch {
    /// The message's number since the test began (0 = the first, warm-up included); `None`: the buffer a
    /// one-sided test left at its end (the last message written or read into it).
    pub message: Option<u64>,
    /// Byte offset in the message of the first byte that differs.
    pub offset: u64,
    pub expected: u8,
    pub got: u8,
    /// Bytes that differ in the message.
    pub bytes: u64,
}

impl DataMismatch {
    /// The bits that differ in the first bad byte.
    pub fn bits(&self) -> u8 {
        self.expected ^ self.got
    }
}
