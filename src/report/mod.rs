//! Output: human tables and the contract's JSON documents, over serialize-only types; every
//! command's result is a [`Document`] that [`output`] writes in the chosen format and place.

pub mod colour;
pub mod csv;
pub mod document;
pub mod json;
pub mod judged;
pub mod junit;
pub mod loss;
pub mod oneline;
pub mod output;
pub mod prom;
pub mod sink;

pub use document::{Document, Stamp};
pub use judged::{Judged, JudgedDoc};
pub use output::{Format, Output};
pub use sink::{Command, Sink};
