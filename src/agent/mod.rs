//! The agent, in its own room: what runs on a tested node. `fabcheck agent` serves one
//! controller over stdio (started locally, over ssh or srun); `fabcheck serve` serves
//! controllers over TCP, behind a hello deadline, a token and caps.
//!
//! The decisions are pure and tested without devices or sockets: the request state machine
//! (`machine`), the registered-memory budget (`budget`), the hello deadline (`hello`), the
//! connections that have said nothing yet (`lobby`), the places before and after
//! authentication (`admission`), when a hello is judged (`guesses`),
//! the token's comparison (`token`) and what is logged of wrong ones (`token_log`). `session`
//! and `serve` are the I/O around them; `session` is where the agent meets `perf`, which the
//! controller side (`control`) never imports.

pub mod admission;
pub mod budget;
pub mod check_answer;
pub mod guesses;
pub mod hello;
pub mod lobby;
pub mod machine;
pub mod serve;
pub mod session;
pub mod token;
pub mod token_log;
