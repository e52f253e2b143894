//! A chat as one JSON document (docs/PROTOCOL.md, "Extension: export and import"):
//! its `chat.json`, its context snapshots (`context/…`) and its outputs (`output/…`),
//! which `bb7 import` reads back into a new chat. Written by `bb7 export --format
//! json` and `bb7 acp`'s `/export json`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chat::model::Chat;
use crate::chat::store::ChatStore;

/// The JSON export's format version.
pub const FORMAT: u32 = 1;

/// A JSON export: `{"bb7_export":1,"chat":{…chat.json…},"files":{"context/a.rs":"…"}}`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Export {
    /// [`FORMAT`].
    pub bb7_export: u32,
    /// The chat as `chat.json` holds it (its context journal folded in).
    pub chat: Chat,
    /// The chat's text files under `context/` and `output/`, by their path in the
    /// chat's directory.
    pub files: BTreeMap<String, String>,
}

/// The chat `id` of `store` as a JSON export (pretty, one final newline), read from
/// its directory without a lock (as `bb7 log` reads chats). Errors: the chat cannot
/// be read, or the document cannot be encoded, as a message for the user.
pub fn json(store: &ChatStore, id: &str) -> Result<String, String> {
    let chat = store
        .load(id)
        .map_err(|e| format!("cannot read chat {id}: {}", e.message))?;
    let dir = store.chat_dir(id).map_err(|e| e.message)?;
    let mut files = BTreeMap::new();
    for top in ["context", "output"] {
        collect(&dir, &dir.join(top), &mut files);
    }
    let export = Export {
        bb7_export: FORMAT,
        chat,
        files,
    };
    serde_json::to_string_pretty(&export)
        .map(|t| t + "\n")
        .map_err(|e| format!("cannot encode the export: {e}"))
}

/// Every regular UTF-8 file under `dir` (symlinks are not followed), by its path
/// relative to `base`.
fn collect(base: &Path, dir: &Path, files: &mut BTreeMap<String, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        let path = e.path();
        if kind.is_dir() {
            collect(base, &path, files);
        } else if kind.is_file()
            && let (Ok(text), Ok(rel)) = (std::fs::read_to_string(&path), path.strip_prefix(base))
        {
            files.insert(rel.to_string_lossy().into_owned(), text);
        }
    }
}
