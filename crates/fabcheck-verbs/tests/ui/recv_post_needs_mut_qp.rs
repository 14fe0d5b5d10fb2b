//! Receives too: re-posting a receive list needs the QP exclusively.
use fabcheck_verbs::{QueuePair, RecvList};

fn post_shared(qp: &QueuePair, list: &mut RecvList) {
    list.post(qp, 0, 1).unwrap();
}

fn main() {
    let _ = post_shared;
}
