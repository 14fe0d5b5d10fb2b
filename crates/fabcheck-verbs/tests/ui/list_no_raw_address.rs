//! No list can be made to point anywhere but into its region: its fields are private and no
//! method takes a raw address.
use fabcheck_verbs::{MemoryRegion, SendList, SendOp};

fn forge(mr: &MemoryRegion) {
    let mut list = SendList::new(1, SendOp::Send, mr, 0, 8, None, false).unwrap();
    list.set_local_addr(0, 0xdead_beef);
    list.sges[0].addr = 0xdead_beef;
}

fn main() {
    let _ = forge;
}
