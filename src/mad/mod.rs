//! InfiniBand management datagrams above the verbs crate's raw MADs: the attributes as typed
//! values (`attributes`), their decoding from payloads (`decode`, pure; the multicast and QoS
//! tables in `tables`), and a node's PerfMgt agent asked only for what it has (`agent`).
//! Below both `probe` (a node's own ports) and `fabric` (the whole subnet).

pub mod agent;
pub mod attributes;
pub mod decode;
pub mod tables;
