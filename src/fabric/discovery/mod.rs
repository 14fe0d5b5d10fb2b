//! What the subnet is: discovered over MADs (`discover`, the fabric's only I/O, through
//! `fabcheck_verbs::mad`), held as plain typed data (`model`), its cables found from its ports
//! (`links`); `fixture` builds constructed fabrics for the rules' tests.

pub mod budget;
pub mod discover;
#[cfg(test)]
pub(crate) mod fixture;
pub mod links;
pub mod model;
pub mod qos;
