//! A model turn: running its stream in the background ([`stream`]) and deciding what it
//! leaves behind ([`complete`]), a pure function of the turn's outcome and its planned
//! file writes that the server applies to the chat.

pub mod call_limits;
pub mod complete;
mod liveness;
mod retrieval;
pub mod route;
pub mod spec;
pub mod stream;
