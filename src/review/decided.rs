//! Decided hunks of a review, kept so `review_get` shows them (state `accepted` or
//! `rejected`, same ids) next to the pending ones, across restarts, until the file's
//! output is applied or discarded as a whole. Stored per output file as
//! `chats/{id}/review/{path}.json`.

use crate::context::ChatFiles;
use crate::error::Result;
use crate::project::fsutil::{read_text_opt, remove_file_if_exists, write_json_atomic};

use super::HunkView;

fn record_path(files: ChatFiles, rel: &str) -> Result<std::path::PathBuf> {
    files
        .store
        .chat_path(files.id, &format!("review/{rel}.json"))
}

/// The decided hunks of `rel`, in the order they were decided. A damaged record is
/// treated as empty: it only ever adds history to a review.
pub fn load(files: ChatFiles, rel: &str) -> Vec<HunkView> {
    record_path(files, rel)
        .ok()
        .and_then(|p| read_text_opt(&p, rel).ok().flatten())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Adds newly decided hunks to the record of `rel` (a hunk decided again replaces
/// its earlier entry).
pub fn record(files: ChatFiles, rel: &str, decided: Vec<HunkView>) -> Result<()> {
    if decided.is_empty() {
        return Ok(());
    }
    let mut all = load(files, rel);
    all.retain(|h| !decided.iter().any(|d| d.hunk_id == h.hunk_id));
    all.extend(decided);
    write_json_atomic(&record_path(files, rel)?, &all)
}

/// Forgets the decisions about `rel`: its output was applied or discarded as a whole,
/// or the model wrote a new one.
pub fn clear(files: ChatFiles, rel: &str) -> Result<()> {
    let path = record_path(files, rel)?;
    remove_file_if_exists(&path)?;
    // Drop directories the record leaves empty, up to `review/`.
    let root = files.store.chat_path(files.id, "review")?;
    let mut dir = path.parent().map(std::path::PathBuf::from);
    while let Some(d) = dir {
        if !d.starts_with(&root) || std::fs::remove_dir(&d).is_err() {
            break;
        }
        dir = d.parent().map(std::path::PathBuf::from);
    }
    Ok(())
}

/// Paths that have a decision record.
pub fn paths(files: ChatFiles) -> Result<Vec<String>> {
    let root = files.store.chat_path(files.id, "review")?;
    Ok(crate::project::fsutil::relative_files(&root)
        .into_iter()
        .filter_map(|rel| rel.strip_suffix(".json").map(str::to_owned))
        .collect())
}
