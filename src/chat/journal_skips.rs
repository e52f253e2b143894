//! Context journals skipped at a chat's read (`ChatStore::replay`: a bad name, a named
//! pipe, a device, a directory, a symlink), kept until the chat's next send tells the
//! user in a `journal_skipped` notice (docs/PROTOCOL.md "Notices of a send"). A log
//! line alone is a warning nobody reads, and a skipped journal means context adds the
//! user made are missing from the chat.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Skips by chat directory, with why; one entry per chat, the latest read's.
static SKIPS: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

/// Records that the journal of the chat in `dir` was skipped, and why.
pub(super) fn record(dir: &Path, why: String) {
    let mut skips = SKIPS.lock().unwrap_or_else(|p| p.into_inner());
    skips.retain(|(d, _)| d != dir);
    skips.push((dir.to_path_buf(), why));
}

/// Why the journal of the chat in `dir` was skipped since the last call, if it was:
/// each skip is told once.
pub fn take(dir: &Path) -> Option<String> {
    let mut skips = SKIPS.lock().unwrap_or_else(|p| p.into_inner());
    let at = skips.iter().position(|(d, _)| d == dir)?;
    Some(skips.remove(at).1)
}
