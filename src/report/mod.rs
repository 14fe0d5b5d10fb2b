//! Output: human tables and the contract's JSON documents, over serialize-only types.

pub mod check;
pub mod devices;
pub mod gpu;

use serde::Serialize;

/// Prints one JSON document on stdout.
pub fn print_json<T: Serialize>(doc: &T) {
    match serde_json::to_string_pretty(doc) {
        Ok(text) => println!("{text}"),
        Err(err) => eprintln!("fabcheck: cannot serialise the result: {err}"),
    }
}
