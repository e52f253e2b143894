//! Opening a chat after a crash (docs/ARCHITECTURE.md, "Durability"): whatever a
//! killed process left half-done is finished or discarded here, never served as an
//! error. Every write is ordered so that a crash leaves at most:
//!
//! - a staged output commit: finished when its journal exists, else discarded
//!   ([`ChatFiles::recover_staged`]);
//! - a context entry whose snapshot was already removed (a removal that did not reach
//!   `chat.json`): the removal is finished;
//! - stray temporary files of an interrupted atomic write, which nothing reads.
//!
//! A power loss can also leave what a writer had not flushed yet (Durability 8): a chat
//! carrying a dead process's `.unflushed-{pid}` marker has every snapshot checked
//! against the version `chat.json` records, and a snapshot that is missing, empty or
//! torn drops its entry like a removal; a `chat.json` that came back empty is rebuilt
//! from the index as an empty chat, since a chat's first save is its only one that
//! replaces no older file.

use std::path::PathBuf;

use crate::chat::model::{CHAT_VERSION, Chat, ContextFile};
use crate::chat::store::ChatStore;
use crate::context::{ChatFiles, event_for, push_event};
use crate::error::Result;
use crate::project::flush_queue;

/// Loads chat `id`, first finishing or discarding what a crash interrupted, and saves
/// it again when that changed it. Errors only when the chat itself cannot be read.
pub fn open_chat(store: &ChatStore, id: &str) -> Result<Chat> {
    let files = ChatFiles::new(store, id);
    // A staging directory that cannot be cleaned up is left for the next open; the
    // chat itself is whole either way.
    if let Err(e) = files.recover_staged() {
        tracing::warn!(chat = id, error = %e, "could not finish a staged output commit");
    }
    let markers = flush_queue::foreign_markers(&store.chat_dir(id)?);
    let (mut chat, mut changed) = match store.load(id) {
        Ok(chat) => (chat, false),
        Err(e) => match rebuild_unflushed(store, id, &markers) {
            Some(chat) => (chat, true),
            None => return Err(e),
        },
    };
    changed |= drop_missing_snapshots(&mut chat, files);
    if !markers.is_empty() {
        changed |= drop_torn_snapshots(&mut chat, files);
    }
    if changed {
        store.save(&chat)?;
    }
    if !markers.is_empty() {
        flush_queue::clear_dead_markers(&markers);
    }
    Ok(chat)
}

/// An empty chat in place of a `chat.json` that a power loss left empty before its
/// first flush (only a chat's first save creates the file; later saves replace it, and
/// a journaling file system keeps the old or the new one). `None` when the file holds
/// anything, or when no writer died mid-flush: then the damage is reported.
fn rebuild_unflushed(store: &ChatStore, id: &str, markers: &[(PathBuf, u32)]) -> Option<Chat> {
    if markers.is_empty() {
        return None;
    }
    let bytes = crate::project::fsutil::read_state(
        &store.chat_path(id, "chat.json").ok()?,
        crate::project::state_file::CHAT_CAP,
    )
    .ok()?;
    if bytes.iter().any(|&b| b != 0 && !b.is_ascii_whitespace()) {
        return None;
    }
    let entry = store.read_index().chats.into_iter().find(|e| e.id == id);
    let (name, created) = match entry {
        Some(e) => (e.name, e.created),
        None => (
            crate::chat::ids::default_chat_name(),
            crate::chat::ids::now_rfc3339(),
        ),
    };
    tracing::warn!(
        chat = id,
        "rebuilt a chat.json that a power loss left empty"
    );
    Some(Chat {
        version: CHAT_VERSION,
        id: id.to_owned(),
        name,
        created,
        ..Chat::default()
    })
}

/// Drops context entries whose snapshot does not hold the version `chat.json` records
/// (a power loss before the flush left it empty or torn), recording each as removed.
/// Reads every snapshot, so it runs only for a chat whose writer died mid-flush.
pub fn drop_torn_snapshots(chat: &mut Chat, files: ChatFiles) -> bool {
    let before = chat.context_files.len();
    let (keep, torn): (Vec<_>, Vec<_>) = std::mem::take(&mut chat.context_files)
        .into_iter()
        .partition(|cf| match files.read_snapshot_exact(cf) {
            Ok(text) => {
                let version = match (cf.start_line, cf.end_line) {
                    (Some(s), Some(e)) => crate::chat::ids::section_version(&cf.path, s, e, &text),
                    _ => crate::chat::ids::file_version(&cf.path, &text),
                };
                version == cf.version
            }
            // Unreadable now (a permission error) is not torn: the entry stays, and the
            // next open checks it again (Durability 9).
            Err(e) => e.code == crate::error::ErrorCode::Io,
        });
    chat.context_files = keep;
    for cf in &torn {
        tracing::warn!(chat = %chat.id, path = %cf.path, "dropped a snapshot a power loss left torn");
        push_event(chat, event_for(removal(cf), cf));
    }
    chat.context_files.len() != before
}

fn removal(cf: &ContextFile) -> &'static str {
    if cf.is_attachment() {
        "UserRemoveAttachment"
    } else if cf.is_section() {
        "UserRemoveSection"
    } else {
        "UserRemoveFile"
    }
}

/// Removes context entries whose snapshot file is gone, recording each as removed so
/// the model learns the file left its context. Returns whether anything changed.
pub fn drop_missing_snapshots(chat: &mut Chat, files: ChatFiles) -> bool {
    let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut chat.context_files)
        .into_iter()
        .partition(|cf| {
            // Where bb7 keeps it, or where the reference BB-7 did. Only a snapshot known
            // to be gone drops its entry: one that cannot be looked at (EACCES on
            // `context/`) is kept (Durability 9).
            snapshot_presence(files.snapshot_path(cf).ok()) != Presence::Gone
                || files
                    .reference_snapshot_path(cf)
                    .is_ok_and(|p| snapshot_presence(p) != Presence::Gone)
        });
    chat.context_files = keep;
    for cf in &gone {
        push_event(chat, event_for(removal(cf), cf));
    }
    !gone.is_empty()
}

/// What looking at a snapshot file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presence {
    /// A regular file.
    Present,
    /// Known to be absent (or not a regular file, which bb7 never writes there).
    Gone,
    /// The look failed for another reason (a permission error, an I/O error): nothing
    /// may be concluded, so nothing is dropped.
    Unknown,
}

fn snapshot_presence(path: Option<PathBuf>) -> Presence {
    let Some(path) = path else {
        return Presence::Gone;
    };
    match path.symlink_metadata() {
        Ok(m) if m.is_file() => Presence::Present,
        Ok(_) => Presence::Gone,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Presence::Gone,
        Err(_) => Presence::Unknown,
    }
}
