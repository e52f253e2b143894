//! A ledger read from disk checked against the snapshots bb7 holds. A file id is a
//! 32-bit hash of path and text (`chat::ids`), so a planted `prompt.json` whose text
//! matches a genuine id is a 2^32 search away, cheap for anyone planting a chat in a
//! repository; the id check of `ShownFile::text_matches_id` alone does not keep such a
//! text from the model. Each entry whose version is one the chat still holds (the
//! current snapshot of its context entry, or the model's pending output) must carry
//! that very text; a ledger with an entry that does not is not used, and the next send
//! tells the user (docs/PROTOCOL.md "Notices of a send", kind `ledger_refused`).
//!
//! Versions the chat no longer holds (a snapshot replaced since it was shown) cannot
//! be read against anything and are judged by their id alone.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::ledger::Ledger;
use crate::chat::ids;
use crate::chat::model::Chat;
use crate::context::ChatFiles;

/// The paths of `ledger`'s entries whose text is not what `chat` holds for their
/// version: the snapshot (LF line ends, as the model is shown it) of the context
/// entry with the same path, range and version, or the pending output when the entry
/// shows one and the output on disk has its id. In ledger order, each path once. A
/// snapshot or output that cannot be read is not judged here (the request that needs
/// it fails on it).
pub fn differing(ledger: &Ledger, chat: &Chat, files: ChatFiles<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in ledger.files() {
        let held = if f.pending_output {
            files
                .read_output(&f.path)
                .ok()
                .flatten()
                .filter(|o| ids::file_version(&f.path, o) == f.file_id)
        } else {
            chat.context_files
                .iter()
                .find(|cf| {
                    (cf.path.as_str(), cf.start_line, cf.end_line) == f.key()
                        && cf.version == f.file_id
                })
                .and_then(|cf| files.read_snapshot(cf).ok())
        };
        if held.is_some_and(|h| h != f.text) && !out.contains(&f.path) {
            out.push(f.path.clone());
        }
    }
    out
}

/// Ledgers refused at read, by ledger path, with the paths whose text differed;
/// taken by the next send's notice ([`take_refused`]), so the user hears of each
/// refusal once, whichever request (an estimate, a send) read the ledger. A handful
/// at most: one per chat read in this process.
static REFUSED: Mutex<Vec<(PathBuf, Vec<String>)>> = Mutex::new(Vec::new());

/// Records that the ledger at `path` was refused for the texts of `paths`.
pub fn record_refused(path: &Path, paths: Vec<String>) {
    let mut refused = REFUSED.lock().unwrap_or_else(|p| p.into_inner());
    refused.retain(|(p, _)| p != path);
    refused.push((path.to_path_buf(), paths));
}

/// The paths whose planted texts made the ledger at `path` unused since the last
/// call, if any: once per refusal.
pub fn take_refused(path: &Path) -> Option<Vec<String>> {
    let mut refused = REFUSED.lock().unwrap_or_else(|p| p.into_inner());
    let at = refused.iter().position(|(p, _)| p == path)?;
    Some(refused.remove(at).1)
}
