//! Opening a chat after a crash (docs/ARCHITECTURE.md, "Durability"): whatever a
//! killed process left half-done is finished or discarded here, never served as an
//! error. Every write is ordered so that a crash leaves at most:
//!
//! - a staged output commit: finished when its journal exists, else discarded
//!   ([`ChatFiles::recover_staged`]);
//! - a context entry whose snapshot was already removed (a removal that did not reach
//!   `chat.json`): the removal is finished;
//! - stray temporary files of an interrupted atomic write, which nothing reads.

use crate::chat::model::Chat;
use crate::chat::store::ChatStore;
use crate::context::{ChatFiles, event_for, push_event};
use crate::error::Result;

/// Loads chat `id`, first finishing or discarding what a crash interrupted, and saves
/// it again when that changed it. Errors only when the chat itself cannot be read.
pub fn open_chat(store: &ChatStore, id: &str) -> Result<Chat> {
    let files = ChatFiles::new(store, id);
    // A staging directory that cannot be cleaned up is left for the next open; the
    // chat itself is whole either way.
    if let Err(e) = files.recover_staged() {
        tracing::warn!(chat = id, error = %e, "could not finish a staged output commit");
    }
    let mut chat = store.load(id)?;
    if drop_missing_snapshots(&mut chat, files) {
        store.save(&chat)?;
    }
    Ok(chat)
}

/// Removes context entries whose snapshot file is gone, recording each as removed so
/// the model learns the file left its context. Returns whether anything changed.
pub fn drop_missing_snapshots(chat: &mut Chat, files: ChatFiles) -> bool {
    let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut chat.context_files)
        .into_iter()
        .partition(|cf| {
            let is_file = |p: std::path::PathBuf| p.symlink_metadata().is_ok_and(|m| m.is_file());
            // Where bb7 keeps it, or where the reference BB-7 did.
            files.snapshot_path(cf).is_ok_and(is_file)
                || files
                    .reference_snapshot_path(cf)
                    .is_ok_and(|p| p.is_some_and(is_file))
        });
    chat.context_files = keep;
    for cf in &gone {
        let action = if cf.is_section() {
            "UserRemoveSection"
        } else {
            "UserRemoveFile"
        };
        push_event(chat, event_for(action, cf));
    }
    !gone.is_empty()
}
