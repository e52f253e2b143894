//! The model's output files: statuses (docs/PROTOCOL.md, "File Status"), rejecting them
//! and the outcome of a hand merge. Applying them to the user's files is the apply
//! engine's (`crate::apply`), and happens only on an explicit user action.

mod status;

use std::path::Path;

pub use status::{Entry, FileStatus, Status, status_of, statuses};

use crate::apply::record_content;
use crate::chat::model::{Chat, Part};
use crate::context::{ChatFiles, FILE_NOT_FOUND, event_for, find_file, push_event};
use crate::error::{Error, Result};
use crate::project::fsutil::read_text_opt;
use crate::project::paths::locate_in_project;
use crate::text::same_text;
use crate::text::to_lf;

/// Rejects the output of `path` (`output_delete`, event `UserRejectOutput`).
/// Errors: `File not found` when there is no output.
pub fn reject(chat: &mut Chat, files: ChatFiles, root: &Path, path: &str) -> Result<()> {
    let (rel, _) = locate_in_project(root, path)?;
    // Looked at, not read: an output too large to read can still be rejected.
    if !files.has_output(&rel)? {
        return Err(Error::not_found(FILE_NOT_FOUND));
    }
    files.remove_output(&rel)?;
    let mut part = Part::event("UserRejectOutput", &rel);
    if let Some(i) = find_file(chat, &rel) {
        part = event_for("UserRejectOutput", &chat.context_files[i]);
    }
    push_event(chat, part);
    Ok(())
}

/// After the user merged output into the local file by hand (`diff_local_done`):
/// `full` when the file now equals the output (treated as an apply), `none` when it
/// still equals the snapshot, `partial` otherwise (the snapshot follows the file,
/// event `UserWriteFile`, and the output stays for the rest).
pub fn diff_local_done(
    chat: &mut Chat,
    files: ChatFiles,
    root: &Path,
    path: &str,
) -> Result<&'static str> {
    let (rel, abs) = locate_in_project(root, path)?;
    let output = files
        .read_output(&rel)?
        .ok_or_else(|| Error::not_found(FILE_NOT_FOUND))?;
    // The snapshot records the file's bytes; comparisons are of LF text.
    let raw = read_text_opt(&abs, &rel)?;
    let local = raw.as_deref().map(|t| to_lf(t).into_owned());
    let snapshot =
        find_file(chat, &rel).and_then(|i| files.read_snapshot(&chat.context_files[i]).ok());
    let Some(local) = local else {
        return Ok("none");
    };
    // The output may lack the final newline the file on disk has (the reference
    // plugin sends context without it), so taking every hunk is still `full`.
    if same_text(&local, &to_lf(&output)) {
        let exact = raw.as_deref().unwrap_or(&local);
        let event = record_content(chat, files, &rel, exact, "UserApplyFile")?;
        files.remove_output(&rel)?;
        push_event(chat, event);
        return Ok("full");
    }
    if snapshot.as_deref().is_some_and(|s| same_text(s, &local)) {
        return Ok("none");
    }
    let exact = raw.as_deref().unwrap_or(&local);
    let event = record_content(chat, files, &rel, exact, "UserWriteFile")?;
    push_event(chat, event);
    Ok("partial")
}
