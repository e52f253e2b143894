//! The model's output files: statuses (PROTOCOL.md, "File Status"), rejecting them
//! and the outcome of a hand merge. Applying them to the user's files is the apply
//! engine's (`crate::apply`), and happens only on an explicit user action.

use std::path::Path;

use serde::Serialize;

use crate::apply::record_content;
use crate::chat::model::{Chat, Part};
use crate::context::{ChatFiles, FILE_NOT_FOUND, event_for, find_file, push_event, same_text};
use crate::error::{Error, Result};
use crate::project::fsutil::{read_text_opt, to_lf};
use crate::project::paths::locate_in_project;
use crate::tokens;

/// One row of `get_file_statuses` (PROTOCOL.md, "Base: context and output").
#[derive(Debug, Clone, Serialize)]
pub struct FileStatus {
    /// Path as in context (relative, or absolute for external files).
    pub path: String,
    /// `""`, `M`, `A`, `!A` or `S`.
    pub status: &'static str,
    /// The file (or section) is in context.
    pub in_context: bool,
    /// The model wrote an output copy.
    pub has_output: bool,
    /// Read-only for the model.
    pub readonly: bool,
    /// Outside the project.
    pub external: bool,
    /// Tokens the model will see for this entry (the output when there is one).
    pub tokens: usize,
    /// Tokens of the context snapshot, when there is output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_tokens: Option<usize>,
    /// Tokens of the output, when there is output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<usize>,
    /// Snapshot text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_content: Option<String>,
    /// Output text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_content: Option<String>,
    /// Hex sha256 of the snapshot text, sent instead of the texts when the request
    /// asked for `contents: false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_hash: Option<String>,
    /// Hex sha256 of the output text, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_hash: Option<String>,
    /// Section start line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Section end line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
}

/// Statuses of every context entry and every output file (seed 001, "File Status"):
/// `S` for sections, `M` for a context file whose output differs from its snapshot,
/// `A` for output that is not in context, `!A` when such a file exists locally.
/// With `contents` false the texts are replaced by their sha256 (`context_hash`,
/// `output_hash`), which is what a client needs to detect out-of-sync files.
pub fn statuses(
    chat: &Chat,
    files: ChatFiles,
    root: &Path,
    contents: bool,
) -> Result<Vec<FileStatus>> {
    let mut rows = collect_statuses(chat, files, root)?;
    if !contents {
        let hash = |t: &Option<String>| {
            t.as_ref()
                .map(|t| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(t.as_bytes())))
        };
        for r in &mut rows {
            r.context_hash = hash(&r.context_content);
            r.output_hash = hash(&r.output_content);
            r.context_content = None;
            r.output_content = None;
        }
    }
    Ok(rows)
}

fn collect_statuses(chat: &Chat, files: ChatFiles, root: &Path) -> Result<Vec<FileStatus>> {
    let mut rows = Vec::new();
    let outputs = files.list_outputs()?;
    for cf in &chat.context_files {
        let snap = files.read_snapshot(cf).ok();
        let output = if cf.is_section() || cf.external {
            None
        } else {
            files.read_output(&cf.path)?
        };
        let status = if cf.is_section() {
            "S"
        } else if output.is_some() && output != snap {
            "M"
        } else {
            ""
        };
        let snap_tokens = snap.as_deref().map(tokens::count).unwrap_or(0);
        let out_tokens = output.as_deref().map(tokens::count);
        rows.push(FileStatus {
            path: cf.path.clone(),
            status,
            in_context: true,
            has_output: output.is_some(),
            readonly: cf.readonly,
            external: cf.external,
            tokens: out_tokens.unwrap_or(snap_tokens),
            original_tokens: out_tokens.map(|_| snap_tokens),
            output_tokens: out_tokens,
            context_content: snap,
            output_content: output,
            context_hash: None,
            output_hash: None,
            start_line: cf.start_line,
            end_line: cf.end_line,
        });
    }
    for rel in outputs {
        if find_file(chat, &rel).is_some() {
            continue;
        }
        let output = files.read_output(&rel)?.unwrap_or_default();
        let exists_locally = root.join(&rel).symlink_metadata().is_ok();
        let t = tokens::count(&output);
        rows.push(FileStatus {
            path: rel,
            status: if exists_locally { "!A" } else { "A" },
            in_context: false,
            has_output: true,
            readonly: false,
            external: false,
            tokens: t,
            original_tokens: None,
            output_tokens: Some(t),
            context_content: None,
            output_content: Some(output),
            context_hash: None,
            output_hash: None,
            start_line: None,
            end_line: None,
        });
    }
    Ok(rows)
}

/// Rejects the output of `path` (`output_delete`, event `UserRejectOutput`).
/// Errors: `File not found` when there is no output.
pub fn reject(chat: &mut Chat, files: ChatFiles, root: &Path, path: &str) -> Result<()> {
    let (rel, _) = locate_in_project(root, path)?;
    if files.read_output(&rel)?.is_none() {
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
    let local = read_text_opt(&abs, &rel)?.map(|t| to_lf(&t).into_owned());
    let snapshot =
        find_file(chat, &rel).and_then(|i| files.read_snapshot(&chat.context_files[i]).ok());
    let Some(local) = local else {
        return Ok("none");
    };
    // The output may lack the final newline the file on disk has (the reference
    // plugin sends context without it), so taking every hunk is still `full`.
    if same_text(&local, &to_lf(&output)) {
        let event = record_content(chat, files, &rel, &local, "UserApplyFile")?;
        files.remove_output(&rel)?;
        push_event(chat, event);
        return Ok("full");
    }
    if snapshot.as_deref().is_some_and(|s| same_text(s, &local)) {
        return Ok("none");
    }
    let event = record_content(chat, files, &rel, &local, "UserWriteFile")?;
    push_event(chat, event);
    Ok("partial")
}
