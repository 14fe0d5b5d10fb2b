//! Why a test spec or its conditions are refused: one variant per limit, so a caller can tell
//! which limit was hit without reading the words (the words are what the agent and the plan
//! have always said, and stay so).

use super::{MAX_DURATION_MS, MAX_INLINE, MAX_ITERS, MAX_QPS, MAX_SIZE, MIN_REPORT_EVERY_MS};

/// The limits [`super::TestSpec::validate`] and [`super::Conditions::validate`] enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("size must be at least 1 byte")]
    EmptyMessage,
    #[error("size {size} exceeds the limit of {MAX_SIZE} bytes")]
    MessageTooLarge { size: u32 },
    #[error("qps must be 1..{MAX_QPS}")]
    QpCount,
    #[error("latency tests use one QP")]
    LatencyWithManyQps,
    #[error("iterations must be 1..{MAX_ITERS}")]
    Iterations,
    #[error("warm-up too long")]
    Warmup,
    #[error("duration must be 1 ms..{} s", MAX_DURATION_MS / 1000)]
    Duration,
    #[error("tx_depth must be 1..8192 and cq_mod 1..tx_depth")]
    Depth,
    #[error("post_list must divide cq_mod")]
    PostList,
    #[error("stall timeout must be 1 ms..600 s")]
    StallTimeout,
    #[error("service level must be 0..15")]
    ServiceLevel,
    #[error("P_Key index must be 0..127")]
    PkeyIndex,
    #[error("MTU must be 256, 512, 1024, 2048 or 4096")]
    Mtu,
    #[error("atomic tests move 8 bytes per operation")]
    AtomicSize,
    #[error("inline data must be 0..{MAX_INLINE} bytes")]
    Inline,
    #[error("the progress interval must be {MIN_REPORT_EVERY_MS} ms..{} s", MAX_DURATION_MS / 1000)]
    ReportEvery,
}

/// A value as a person wrote it (a flag, an endpoint, a profile, hostfile or plan line) that is
/// not what it should be, in the words that say what it should be. Nothing acts on it but the
/// printing: the command line says it, `--profile` names the line, a plan the row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unparsed(pub String);

impl From<String> for Unparsed {
    fn from(words: String) -> Unparsed {
        Unparsed(words)
    }
}

impl From<&str> for Unparsed {
    fn from(words: &str) -> Unparsed {
        Unparsed(words.to_string())
    }
}

/// The words, to read or search (`err.contains(..)` in tests).
impl std::ops::Deref for Unparsed {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<Unparsed> for String {
    fn from(e: Unparsed) -> String {
        e.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are part of the protocol's error replies and the plan's refusals: the type
    /// must not change them.
    #[test]
    fn the_words_are_the_ones_agents_have_always_sent() {
        let cases = [
            (SpecError::EmptyMessage, "size must be at least 1 byte".to_string()),
            (SpecError::MessageTooLarge { size: 1 << 30 }, format!("size {} exceeds the limit of 67108864 bytes", 1u32 << 30)),
            (SpecError::QpCount, "qps must be 1..64".into()),
            (SpecError::LatencyWithManyQps, "latency tests use one QP".into()),
            (SpecError::Iterations, "iterations must be 1..100000000".into()),
            (SpecError::Warmup, "warm-up too long".into()),
            (SpecError::Duration, "duration must be 1 ms..604800 s".into()),
            (SpecError::Depth, "tx_depth must be 1..8192 and cq_mod 1..tx_depth".into()),
            (SpecError::PostList, "post_list must divide cq_mod".into()),
            (SpecError::StallTimeout, "stall timeout must be 1 ms..600 s".into()),
            (SpecError::ServiceLevel, "service level must be 0..15".into()),
            (SpecError::PkeyIndex, "P_Key index must be 0..127".into()),
            (SpecError::AtomicSize, "atomic tests move 8 bytes per operation".into()),
            (SpecError::Inline, "inline data must be 0..1024 bytes".into()),
            (SpecError::ReportEvery, "the progress interval must be 100 ms..604800 s".into()),
        ];
        for (error, words) in cases {
            assert_eq!(error.to_string(), words, "{error:?}");
        }
    }
}
