//! What went wrong with a chat's context journal when the chat was read
//! (`ChatStore::replay`): a journal skipped (a bad name, a named pipe, a device, a
//! directory, a symlink) or a replay that stopped early (a line that does not parse, a
//! line or the journal over its cap). Either means context adds the user made are
//! missing from the chat, and a log line alone is a warning nobody reads: kept until
//! the chat is opened (`chat_select`'s `state_warnings`) or, when it was read another
//! way, its next send (a `journal_skipped` or `journal_stopped` notice), whichever comes
//! first, so the user hears of each once (docs/PROTOCOL.md "Notices of a send").

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The notice kind of a journal skipped whole.
pub const KIND_SKIPPED: &str = "journal_skipped";
/// The notice kind of a replay that stopped early.
pub const KIND_STOPPED: &str = "journal_stopped";

/// What the user is told of one chat's journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalNote {
    /// [`KIND_SKIPPED`] or [`KIND_STOPPED`].
    pub kind: &'static str,
    /// The sentence for the user: which journal, why, what was kept.
    pub message: String,
}

/// Notes by chat directory; one per chat, the latest read's.
static NOTES: Mutex<Vec<(PathBuf, JournalNote)>> = Mutex::new(Vec::new());

/// The most notes kept: a search reads every chat, and a project of planted chats
/// must not grow this without bound; the oldest go first.
const MAX_NOTES: usize = 256;

fn record(dir: &Path, note: JournalNote) {
    let mut notes = NOTES.lock().unwrap_or_else(|p| p.into_inner());
    notes.retain(|(d, _)| d != dir);
    if notes.len() >= MAX_NOTES {
        notes.remove(0);
    }
    notes.push((dir.to_path_buf(), note));
}

/// Records that the journal of the chat in `dir` was skipped, and why.
pub(super) fn skipped(dir: &Path, why: &str) {
    let message = format!(
        "The chat's context journal was skipped ({why}): context adds it recorded are \
         not in this chat; add those files again"
    );
    record(
        dir,
        JournalNote {
            kind: KIND_SKIPPED,
            message,
        },
    );
}

/// Records that the replay of the journal `path` of the chat in `dir` stopped at line
/// `line` (1-based) for `why`, with `kept` adds read before it.
pub(super) fn stopped(dir: &Path, path: &Path, line: usize, why: &str, kept: usize) {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let adds = if kept == 1 { "add" } else { "adds" };
    let message = format!(
        "The chat's context journal {name} was read only up to line {line} ({why}): the \
         {kept} context {adds} before it are kept, any recorded after it are not in this \
         chat; add those files again"
    );
    record(
        dir,
        JournalNote {
            kind: KIND_STOPPED,
            message,
        },
    );
}

/// What the user is to hear of the journal of the chat in `dir` since the last call,
/// if anything: each note is told once.
pub fn take(dir: &Path) -> Option<JournalNote> {
    let mut notes = NOTES.lock().unwrap_or_else(|p| p.into_inner());
    let at = notes.iter().position(|(d, _)| d == dir)?;
    Some(notes.remove(at).1)
}
