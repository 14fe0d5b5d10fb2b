//! A QP is destroyed once: it cannot be copied or cloned.
use fabcheck_verbs::QueuePair;

fn twice(qp: &QueuePair) -> QueuePair {
    qp.clone()
}

fn main() {
    let _ = twice;
}
