//! Chats: the `chat.json` model, ids, and stores of chats (project and global).

pub mod event_page;
pub mod events;
mod excerpt;
pub mod ids;
pub mod journal;
pub mod journal_skips;
mod list_cache;
/// Titles made from the first question without a model.
pub mod local_title;
pub mod model;
pub mod store;

/// A chat as a process addresses it: its store (project or global) and its id. Locks,
/// turns in flight and background results are keyed by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatKey {
    /// In the global store.
    pub global: bool,
    /// Chat id.
    pub id: String,
}
