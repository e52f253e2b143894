#![deny(missing_docs)]
//! bb7: a sidecar that gives an editor a focused, non-agentic LLM chat with explicit
//! context and reviewed edits. The binary speaks line-delimited JSON on stdio
//! (docs/PROTOCOL.md); this library holds everything behind it.

pub mod acp;
pub mod apply;
pub mod chat;
pub mod cli;
pub mod config;
pub mod context;
pub mod debug_log;
pub mod diff;
pub mod edit;
pub mod error;
pub mod filecache;
pub mod front;
pub mod llm;
pub mod mcp;
pub mod output;
pub mod project;
pub mod prompt;
pub mod protocol;
pub mod recovery;
pub mod review;
pub mod server;
pub mod text;
pub mod tokens;
pub mod tools;
pub mod turn;
