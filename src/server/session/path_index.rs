//! The set of whole-file paths in the active chat's context, for `context_add`'s
//! duplicate check without a scan per add.

use crate::chat::model::Chat;

/// A context's length and its last entry's path and start line.
type ContextMark = (usize, Option<(String, Option<u64>)>);

/// The set of whole-file paths in a chat's context, kept while the context is as it
/// was when the set was made: its length and its last entry tell (entries are only
/// appended at the end or removed, so any other change moves one of the two). A set
/// that is not current is made again from the entries.
#[derive(Debug, Default)]
pub(super) struct PathIndex {
    seen: Option<ContextMark>,
    paths: std::collections::HashSet<String>,
}

impl PathIndex {
    fn mark(chat: &Chat) -> ContextMark {
        let last = chat
            .context_files
            .last()
            .map(|c| (c.path.clone(), c.start_line));
        (chat.context_files.len(), last)
    }

    /// The set for `chat`'s context, made again when it is not current.
    pub(super) fn current(&mut self, chat: &Chat) -> &std::collections::HashSet<String> {
        let mark = Self::mark(chat);
        if self.seen.as_ref() != Some(&mark) {
            self.paths = chat
                .context_files
                .iter()
                .filter(|c| !c.is_section())
                .map(|c| c.path.clone())
                .collect();
            self.seen = Some(mark);
        }
        &self.paths
    }

    /// Records that `path` was just appended to `chat`'s context.
    pub(super) fn added(&mut self, chat: &Chat, path: String) {
        self.paths.insert(path);
        self.seen = Some(Self::mark(chat));
    }
}
