//! The verbs that change an rdma_cm id take `&mut CmId`: two threads cannot drive one id
//! through shared references, so librdmacm never sees two callers on one id at once.
use fabcheck_verbs::CmId;
use std::net::SocketAddr;
use std::time::Duration;

fn race(id: &CmId, peer: SocketAddr) {
    std::thread::scope(|s| {
        s.spawn(|| id.resolve(peer, Duration::from_secs(1)));
        s.spawn(|| id.connect(1, Duration::from_secs(1)));
    });
}

fn the_rest(id: &CmId, local: SocketAddr) {
    let _ = id.bind(local);
    let _ = id.set_tos(0);
    let _ = id.listen(1);
    let _ = id.accept(1, Duration::from_secs(1));
}

fn main() {
    let _ = (race, the_rest);
}
