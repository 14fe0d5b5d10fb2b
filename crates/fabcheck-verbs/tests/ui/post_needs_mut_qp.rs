//! Posting needs the QP exclusively: two lists cannot post on one QP through shared borrows.
use fabcheck_verbs::{QueuePair, SendList};

fn post_shared(qp: &QueuePair, list: &mut SendList) {
    list.post(qp, 1).unwrap();
}

fn main() {
    let _ = post_shared;
}
