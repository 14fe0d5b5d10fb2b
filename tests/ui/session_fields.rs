//! A session's fields are private to `perf`: nobody outside can take or drop a part of it
//! (its QPs, its region) while a measured loop uses it.
use fabcheck::perf::session::Session;
use fabcheck_verbs::QueuePair;

fn take(s: Session) -> Vec<QueuePair> {
    s.qps
}

fn main() {
    let _ = take;
}
