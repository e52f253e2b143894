//! What bb7's fronts share: the command line (`cli`) and `bb7 acp` (`acp`) each drive
//! an in-process stdio server through [`Client`] (`client.rs`), and find the project
//! the way git finds its repository (`root.rs`). Neither front imports the other.

pub mod client;
pub mod export;
pub mod markdown;
pub mod mcp_line;
pub mod root;

pub use client::{Client, Failure, Res, Titled, exit};
