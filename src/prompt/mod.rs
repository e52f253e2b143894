//! Prompt assembly: the system prompt with user
//! instructions, and the single structured user message.

pub mod assemble;
pub mod instructions;

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
