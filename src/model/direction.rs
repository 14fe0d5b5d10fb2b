//! Which way a test's traffic goes between the pair's two ends, A and B.

use super::Role;
use crate::model::Unparsed;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    #[serde(rename = "a->b")]
    AtoB,
    #[serde(rename = "b->a")]
    BtoA,
    #[serde(rename = "bidi")]
    Bidi,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::AtoB => "a->b",
            Direction::BtoA => "b->a",
            Direction::Bidi => "bidi",
        }
    }

    /// Roles of A and B.
    pub fn roles(self) -> (Role, Role) {
        match self {
            Direction::AtoB => (Role::Active, Role::Passive),
            Direction::BtoA => (Role::Passive, Role::Active),
            Direction::Bidi => (Role::Both, Role::Both),
        }
    }

    /// `--direction`: ab, ba, both (each way), bidi, all (each way and bidi). The JSON's
    /// `a->b` / `b->a` are accepted too, but unquoted they are shell redirections.
    pub fn parse_list(text: &str) -> Result<Vec<Direction>, Unparsed> {
        Ok(match text {
            "a->b" | "ab" => vec![Direction::AtoB],
            "b->a" | "ba" => vec![Direction::BtoA],
            "both" => vec![Direction::AtoB, Direction::BtoA],
            "bidi" => vec![Direction::Bidi],
            "all" => vec![Direction::AtoB, Direction::BtoA, Direction::Bidi],
            other => return Err(format!("--direction '{other}': one of ab, ba, both, bidi, all").into()),
        })
    }
}
