//! One poller at a time: polling needs the CQ exclusively, and a CQ handle cannot be cloned
//! to get a second one.
use fabcheck_verbs::{CompletionQueue, WorkCompletion};

fn poll_shared(cq: &CompletionQueue) {
    let mut wc = WorkCompletion::blank_array::<1>();
    let _ = cq.poll(&mut wc);
}

fn second_poller(cq: &CompletionQueue) -> CompletionQueue {
    cq.clone()
}

fn main() {
    let _ = (poll_shared, second_poller);
}
