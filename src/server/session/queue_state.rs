//! What the session keeps of queued sends (`queue.rs`), in a file of its own so that
//! the session's state imports no handler module.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::chat::ChatKey;
use crate::protocol::params;

/// The queued messages of each chat, oldest first, with their request ids, and the
/// chats whose queue waits (their last answer did not end well).
#[derive(Default)]
pub(super) struct Queues {
    pub(super) chats: HashMap<ChatKey, VecDeque<(params::Send, String)>>,
    pub(super) waiting: HashSet<ChatKey>,
}
