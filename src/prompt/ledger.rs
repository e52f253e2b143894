//! What earlier requests of a chat showed the model, so the next request repeats it byte
//! for byte and the provider's prompt cache serves it (docs/ARCHITECTURE.md, "The
//! prompt's layout"). Kept beside `chat.json` as `prompt.json`; it is a cache: a missing,
//! damaged or outdated ledger costs one uncached request, never a wrong prompt, since
//! every request shows the current version of each file it has not shown yet.
//!
//! The ledger holds the whole text of every version it records, megabytes with a large
//! context, so it is not parsed and written on the way to the model: the process keeps
//! the one it last read or wrote ([`Ledger::load`]), and the flush thread serializes and
//! writes a new one after the request went out ([`save`]).

use crate::project::state_file;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::chat::ids::short_sha256;
use crate::chat::model::{ContextFile, Message};
use crate::project::fsutil::{Stamp, file_stamp};

/// The name of the ledger file in a chat's directory.
pub const FILE_NAME: &str = "prompt.json";

/// One file as a request showed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownFile {
    /// Project-relative path (absolute for external files).
    pub path: String,
    /// First line of a section (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line of a section (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// The file id of `text`.
    pub file_id: String,
    /// The model may change it.
    pub writable: bool,
    /// Outside the project.
    #[serde(default)]
    pub external: bool,
    /// `text` is the model's pending output, not the user's snapshot.
    #[serde(default)]
    pub pending_output: bool,
    /// The whole text of this version (kept even when `diff` was shown instead).
    pub text: String,
    /// When set, the request showed this unified diff against the version
    /// `diff.from_file_id` shown earlier, not the whole text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<ShownDiff>,
    /// For an attachment (`context_attach`): the attributes its `<attachment>` tag
    /// shows (`kind="…" name="…"` and its meta), escaped; absent for files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<String>,
    /// For an image: its media type and the tokens it is counted as; `text` is then
    /// its base64, sent as an image part, not as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ShownImage>,
}

/// An image as a request showed it (see [`ShownFile::image`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// Tokens it is counted as (`context::image::tokens`).
    pub tokens: usize,
}

/// A small change shown as a diff against a version the model saw earlier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownDiff {
    /// The file id of the earlier version.
    pub from_file_id: String,
    /// The unified diff from that version to this one.
    pub text: String,
}

impl ShownFile {
    /// The text the request carried for this version: the diff, or the whole text.
    pub fn shown_text(&self) -> &str {
        self.diff.as_ref().map_or(&self.text, |d| &d.text)
    }
}

impl ShownFile {
    /// Whether `text` is the version `file_id` names (`chat::ids`: a file's, a
    /// section's, an attachment's or an image's id is a hash of its path and text, the
    /// image's text being its base64), and an attachment's tag attributes and an
    /// image's media type are those bb7 writes (`ledger_check`). A snapshot read with
    /// CRLF line ends is shown as LF, so the text is also tried with CRLF line ends; a
    /// file with mixed line ends fails the check (one uncached request).
    pub fn text_matches_id(&self) -> bool {
        let entry = super::ledger_check::Entry {
            path: &self.path,
            attachment: self.attachment.as_deref(),
            image_type: self.image.as_ref().map(|i| i.media_type.as_str()),
            has_diff: self.diff.is_some(),
        };
        if !super::ledger_check::sound(entry) {
            return false;
        }
        let id_of = |text: &str| match (self.start_line, self.end_line) {
            (Some(a), Some(b)) => crate::chat::ids::section_version(&self.path, a, b, text),
            _ => crate::chat::ids::file_version(&self.path, text),
        };
        id_of(&self.text) == self.file_id
            || (self.text.contains('\n') && id_of(&self.text.replace('\n', "\r\n")) == self.file_id)
    }

    /// What identifies the entry across versions: path and section range.
    pub fn key(&self) -> (&str, Option<u64>, Option<u64>) {
        (&self.path, self.start_line, self.end_line)
    }
}

/// What a request showed right before one of the user's messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownUpdate {
    /// Index of the user message in the chat's `messages`.
    pub message: usize,
    /// [`text_id`] of that message's text: an edited or forked chat whose message at
    /// `message` is another text does not reuse the entry.
    pub text_id: String,
    /// The summary of the files in context, as shown with the message.
    pub summary: String,
    /// Files shown because they changed, or were added, since they were last shown.
    #[serde(default)]
    pub files: Vec<ShownFile>,
    /// What failed in the previous response's edits (the retry context), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_context: Option<String>,
}

/// The prompt ledger of one chat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// The id of the chat it was written for. A ledger found in another chat's folder
    /// (a copied chat, a folder restored from elsewhere) or without one is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    /// The files at the start of the chat (or of its ledger), sorted by path and range:
    /// the stable context block every request starts with. Shared, since it holds every
    /// file's text and each request's ledger starts with the same one.
    #[serde(default, with = "shared")]
    pub base: Arc<Vec<ShownFile>>,
    /// One entry per user message sent since, in order.
    #[serde(default)]
    pub updates: Vec<ShownUpdate>,
}

/// (De)serializes a shared list as the list itself.
mod shared {
    use super::*;

    pub fn serialize<S: serde::Serializer, T: Serialize>(
        v: &Arc<Vec<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        v.as_slice().serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Arc<Vec<T>>, D::Error> {
        Vec::deserialize(d).map(Arc::new)
    }
}

/// What is known of the file behind the kept ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnDisk {
    /// This process saved the ledger and its write has not completed (or failed): the
    /// file holds an older version, and the kept one is newer.
    Writing,
    /// The file as it was when the ledger was read or written (`None`: no file).
    Stamp(Option<Stamp>),
}

/// The ledger this process last read or saved, with its path: the next request of the
/// same chat starts from it. One chat's at a time, so a process keeps at most one
/// context's texts beyond the chat it is sending.
struct Kept {
    path: PathBuf,
    ledger: Arc<Ledger>,
    on_disk: OnDisk,
}

fn kept() -> std::sync::MutexGuard<'static, Option<Kept>> {
    static KEPT: Mutex<Option<Kept>> = Mutex::new(None);
    KEPT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ledgers saved by this process so far: what tells a layout kept elsewhere (an
/// estimate's) that a ledger changed before its file did.
static SAVES: AtomicU64 = AtomicU64::new(0);

/// How many ledgers this process saved ([`save`]); changes with every save, before the
/// file is written.
pub fn saves() -> u64 {
    SAVES.load(Ordering::Acquire)
}

/// Saves `ledger` as the ledger at `path` (a chat's [`FILE_NAME`] in the state directory
/// `root`): it is kept for [`Ledger::load`] at once, and the flush thread writes it
/// (atomically, after the chats it follows; `project::flush_queue::write_later`). The
/// write is skipped when the chat's directory is gone by then.
pub fn save(path: &Path, root: &Path, ledger: Ledger) {
    let ledger = Arc::new(ledger);
    *kept() = Some(Kept {
        path: path.to_path_buf(),
        ledger: ledger.clone(),
        on_disk: OnDisk::Writing,
    });
    SAVES.fetch_add(1, Ordering::AcqRel);
    let target = path.to_path_buf();
    let job = Box::new(move || {
        if !target.parent().is_some_and(Path::is_dir) {
            return false;
        }
        let Ok(bytes) = serde_json::to_vec(ledger.as_ref()) else {
            return false;
        };
        if bytes.len() as u64 > state_file::LEDGER_CAP {
            // Over what a later read accepts: no ledger (one uncached request) rather
            // than an older one.
            let _ = crate::project::fsutil::remove_file_if_exists(&target);
            return false;
        }
        if crate::project::fsutil::replace_file(&target, &bytes, false).is_err() {
            return false;
        }
        // Not recorded (no home directory, a full disk): the next process checks this
        // ledger as it would a copied one, and rebuilds at worst.
        if let Err(e) = super::ledger_record::remember(&target, &bytes) {
            tracing::warn!("prompt ledger not recorded in ~/.bb7: {e}");
        }
        let stamp = file_stamp(&target);
        if let Some(k) = kept().as_mut()
            && Arc::ptr_eq(&k.ledger, &ledger)
        {
            k.on_disk = OnDisk::Stamp(stamp);
        }
        true
    });
    crate::project::flush_queue::write_later(path, root, job);
}

/// The ledger at `path` and whether its bytes are the ones bb7 recorded writing there
/// (`ledger_record`). A cache: missing or unreadable, it is empty; damaged (a named
/// pipe, over its cap, not JSON) it is set aside and empty (invariant 13).
fn read_from_disk(path: &Path) -> (Ledger, bool) {
    let bytes = match crate::project::fsutil::read_state(path, state_file::LEDGER_CAP) {
        Ok(b) => b,
        Err(e) => {
            if crate::project::fsutil::is_damage(&e) {
                state_file::set_aside(path, &e.to_string());
            }
            return (Ledger::default(), false);
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(l) => (l, super::ledger_record::is_recorded(path, &bytes)),
        Err(e) => {
            state_file::set_aside(path, &format!("not valid JSON: {e}"));
            (Ledger::default(), false)
        }
    }
}

/// `ledger` when it was written for chat `chat`, else an empty one.
fn for_chat(ledger: Arc<Ledger>, chat: &str) -> Arc<Ledger> {
    if ledger.chat.as_deref() == Some(chat) {
        ledger
    } else {
        Arc::default()
    }
}

impl Ledger {
    /// The ledger of chat `chat` at `path`: the one this process last read or saved
    /// there while the file is as it left it, else read again; a missing or unreadable
    /// one, or one written for another chat (or naming none), is empty: a fresh start,
    /// one uncached request. A ledger read from disk is also refused when `check`
    /// names entries whose text is not what the chat holds for their version
    /// (`ledger_snapshots::differing`, which also keeps the refusal for the next send's
    /// notice); `check`'s flag is whether the file is not the one bb7 recorded writing
    /// (`ledger_record`), when every text must be one the chat still holds.
    pub fn load(
        path: &Path,
        chat: &str,
        check: &dyn Fn(&Ledger, bool) -> Vec<String>,
    ) -> Arc<Ledger> {
        let now = file_stamp(path);
        let mut kept = kept();
        if let Some(k) = kept.as_ref()
            && k.path == path
            && (k.on_disk == OnDisk::Writing || k.on_disk == OnDisk::Stamp(now))
        {
            return for_chat(k.ledger.clone(), chat);
        }
        // A cache: a damaged one (a named pipe, over its cap, not JSON) is set aside
        // (invariant 13).
        let (mut read, recorded) = read_from_disk(path);
        // Read from disk, it may be planted (a cloned `.bb7/`): a text that is not the
        // version its file id names would reach the model in place of the snapshot, so
        // such a ledger is not used (one uncached request, as for a damaged one).
        if !read.files().all(ShownFile::text_matches_id) {
            read = Ledger::default();
        }
        if read.chat.as_deref() == Some(chat) && !check(&read, !recorded).is_empty() {
            read = Ledger::default();
        }
        let ledger = Arc::new(read);
        *kept = Some(Kept {
            path: path.to_path_buf(),
            ledger: ledger.clone(),
            on_disk: OnDisk::Stamp(now),
        });
        for_chat(ledger, chat)
    }

    /// The updates that still belong to `history`: their message is a user message
    /// with the same text. Sorted by message index.
    pub fn valid_updates<'a>(&'a self, history: &[Message]) -> Vec<&'a ShownUpdate> {
        let mut valid: Vec<&ShownUpdate> = self
            .updates
            .iter()
            .filter(|u| {
                // A retry text is the one the history before the message gives: a
                // planted one never reaches the model.
                history
                    .get(u.message)
                    .is_some_and(|m| m.role == "user" && text_id(&m.text()) == u.text_id)
                    && u.retry_context == super::retry::retry_context(&history[..u.message])
            })
            .collect();
        valid.sort_by_key(|u| u.message);
        valid.dedup_by_key(|u| u.message);
        valid
    }
}

impl Ledger {
    /// What the prompt carries beyond one whole text per path: for each path and range
    /// shown in several versions, every shown text (whole or diff) and the latest whole
    /// text, so `count(carried) - count(latest)` is what a new chat with the same
    /// context would not send (`potential_savings`).
    pub fn repeated(&self) -> Vec<(Vec<&str>, &str)> {
        let mut order: Vec<(&str, Option<u64>, Option<u64>)> = Vec::new();
        let mut by_key: std::collections::HashMap<_, Vec<&ShownFile>> =
            std::collections::HashMap::new();
        for f in self.files() {
            let versions = by_key.entry(f.key()).or_default();
            if versions.is_empty() {
                order.push(f.key());
            }
            versions.push(f);
        }
        order
            .into_iter()
            .filter_map(|k| {
                let versions = by_key.remove(&k)?;
                let latest = versions.last()?.text.as_str();
                (versions.len() > 1)
                    .then(|| (versions.iter().map(|f| f.shown_text()).collect(), latest))
            })
            .collect()
    }

    /// The file id each entry (path and range) was last shown with: in the context
    /// block, then in the updates that still belong to `history`. An entry shown in its
    /// current version needs no reading to lay out the next request.
    pub fn last_shown(
        &self,
        history: &[Message],
    ) -> HashMap<(&str, Option<u64>, Option<u64>), &str> {
        let valid = self.valid_updates(history);
        let updated = valid.into_iter().flat_map(|u| u.files.iter());
        self.base
            .iter()
            .chain(updated)
            .map(|f| (f.key(), f.file_id.as_str()))
            .collect()
    }

    /// Whether every file the ledger holds was in the chat's context: in `current` (the
    /// context now) or in the context snapshot of a message of `history`. Read from
    /// disk, a ledger may be planted (a cloned `.bb7/`), and its texts reach the model
    /// in place of what the chat holds; one naming another file is not used
    /// (docs/ARCHITECTURE.md, "State files").
    pub fn fits(&self, history: &[Message], current: &[ContextFile]) -> bool {
        let mut known: std::collections::HashSet<&str> =
            current.iter().map(|c| c.path.as_str()).collect();
        for m in history {
            for s in m.context_snapshot.iter().flatten() {
                known.insert(s.path.as_str());
            }
        }
        self.files().all(|f| known.contains(f.path.as_str()))
    }

    /// Every file version the ledger holds.
    pub fn files(&self) -> impl Iterator<Item = &ShownFile> {
        self.base
            .iter()
            .chain(self.updates.iter().flat_map(|u| u.files.iter()))
    }
}

/// 16 hex digits of the sha256 of a user message's text.
pub fn text_id(text: &str) -> String {
    short_sha256(text.as_bytes(), 16)
}
