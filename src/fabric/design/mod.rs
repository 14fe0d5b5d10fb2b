//! The fabric as designed, and the design judged: the expected cabling from an ibnetdiscover
//! file (`topology`, its maps hashed by `fast_hash`) or a cabling plan (`plan`, over the
//! bounded RFC 4180 reader `csv`; `planned`: its cabling between discovered switches), rails
//! (`rails`), switch tiers and fat-tree rules (`tiers`, within the `groups` of two tiers), a
//! Dragonfly+'s global links per pair of groups (`dragonfly`), identities that must be unique
//! (`duplicate`). Pure: plain files and the discovered model in, findings out.

pub mod csv;
pub mod dragonfly;
pub mod duplicate;
pub mod fast_hash;
pub mod groups;
pub mod plan;
pub mod planned;
pub mod rails;
pub mod tiers;
pub mod topology;
