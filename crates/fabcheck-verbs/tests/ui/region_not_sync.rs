//! A region's byte accessors are volatile, not atomic, so a region is not shared between
//! threads.
use fabcheck_verbs::MemoryRegion;

fn share<T: Sync>(_: &T) {}

fn f(mr: &MemoryRegion) {
    share(mr);
}

fn main() {
    let _ = f;
}
