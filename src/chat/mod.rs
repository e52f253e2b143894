//! Chats: the `chat.json` model, ids, and stores of chats (project and global).

pub mod fork;
pub mod ids;
mod list_cache;
pub mod model;
pub mod store;
