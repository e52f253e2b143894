//! What earlier requests of a chat showed the model, so the next request repeats it byte
//! for byte and the provider's prompt cache serves it (docs/ARCHITECTURE.md, "The
//! prompt's layout"). Kept beside `chat.json` as `prompt.json`; it is a cache: a missing,
//! damaged or outdated ledger costs one uncached request, never a wrong prompt, since
//! every request shows the current version of each file it has not shown yet.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chat::ids::short_sha256;
use crate::chat::model::Message;

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
    /// the stable context block every request starts with.
    #[serde(default)]
    pub base: Vec<ShownFile>,
    /// One entry per user message sent since, in order.
    #[serde(default)]
    pub updates: Vec<ShownUpdate>,
}

impl Ledger {
    /// Reads the ledger of chat `chat`; a missing or unreadable one, or one written for
    /// another chat (or naming none), is empty: a fresh start, one uncached request.
    pub fn load(path: &Path, chat: &str) -> Ledger {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Ledger>(&bytes).ok())
            .filter(|l| l.chat.as_deref() == Some(chat))
            .unwrap_or_default()
    }

    /// The updates that still belong to `history`: their message is a user message
    /// with the same text. Sorted by message index.
    pub fn valid_updates<'a>(&'a self, history: &[Message]) -> Vec<&'a ShownUpdate> {
        let mut valid: Vec<&ShownUpdate> = self
            .updates
            .iter()
            .filter(|u| {
                history
                    .get(u.message)
                    .is_some_and(|m| m.role == "user" && text_id(&m.text()) == u.text_id)
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
