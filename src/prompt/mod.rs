//! Prompt assembly: the system prompt with user instructions, and the structured user
//! message laid out for the provider's prompt cache (`assemble.rs`, with what earlier
//! requests showed in `ledger.rs`, fences in `quote.rs` and breakpoints and prices in
//! `cache.rs`).

pub mod assemble;
mod attachments;
pub mod cache;
pub mod files;
pub mod instructions;
pub mod ledger;
mod ledger_check;
pub mod ledger_record;
pub mod ledger_snapshots;
pub mod quote;
mod retry;
pub mod rules;

/// The embedded system prompt (`prompts/system.md`).
pub const SYSTEM_PROMPT: &str = include_str!("../../prompts/system.md");

/// Appended to the system prompt when the chat's retrieval tools are on
/// (`prompts/tools.md`).
pub const TOOLS_PROMPT: &str = include_str!("../../prompts/tools.md");

/// The embedded title prompt (`prompts/title.md`).
pub const TITLE_PROMPT: &str = include_str!("../../prompts/title.md");

/// Appended to the system prompt when the model writes its edits as SEARCH/REPLACE
/// blocks instead of calling tools (`prompts/blocks.md`).
pub const BLOCKS_PROMPT: &str = include_str!("../../prompts/blocks.md");
