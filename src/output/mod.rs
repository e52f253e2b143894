//! The model's output files: statuses (seed 001, "File Status") and applying them to
//! the user's files, which happens only on an explicit user action (DESIGN.md
//! invariant 4).

mod status;

use std::path::Path;

pub use status::{Entry, FileStatus, rows_to_json, status_of, statuses};

use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, Part};
use crate::context::{ChatFiles, event_for, find_file, push_event};
use crate::error::{Error, Result};
use crate::project::fsutil::{read_text_opt, to_lf, uses_crlf, with_line_endings, write_atomic};
use crate::project::paths::locate_in_project;

/// What an apply did.
#[derive(Debug, Clone)]
pub struct Applied {
    /// Project-relative path written.
    pub path: String,
    /// The content applied, with LF line endings (as the model wrote it).
    pub content: String,
    /// The file's bytes before the apply (`None`: it did not exist).
    pub before: Option<Vec<u8>>,
    /// The bytes written.
    pub after: Vec<u8>,
}

/// Applies the output of `path` to the user's file (`apply_file`, event
/// `UserApplyFile`) or to `destination` (`apply_file_as`, event `UserSaveAs`).
///
/// The file is written atomically, keeping its CRLF line endings if it had them; the
/// context snapshot becomes the applied content (a file that was not in context is
/// added, writable); the output copy is removed. Errors: `No output to apply`
/// (`not_found`), path escapes, write failures (nothing else changes then).
pub fn apply(
    chat: &mut Chat,
    files: ChatFiles,
    root: &Path,
    path: &str,
    destination: Option<&str>,
) -> Result<Applied> {
    let (rel, _) = locate_in_project(root, path)?;
    let output = files
        .read_output(&rel)?
        .ok_or_else(|| Error::not_found(format!("No output to apply for {rel}")))?;
    let (dest_rel, dest_abs) = match destination {
        Some(d) => locate_in_project(root, d)?,
        None => locate_in_project(root, &rel)?,
    };
    let before = match std::fs::read(&dest_abs) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(format!("Cannot read file {dest_rel}"), e)),
    };
    if let Some(b) = &before
        && std::str::from_utf8(b).is_err()
    {
        return Err(Error::invalid(format!(
            "Refusing to overwrite {dest_rel}: it is not UTF-8 text"
        )));
    }
    let crlf = before
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
        .is_some_and(uses_crlf);
    let after = with_line_endings(&output, crlf).into_bytes();
    write_atomic(&dest_abs, &after)?;

    let content = to_lf(&output).into_owned();
    let action = if destination.is_some() {
        "UserSaveAs"
    } else {
        "UserApplyFile"
    };
    let mut event = record_content(chat, files, &dest_rel, &content, action)?;
    if destination.is_some() {
        event.original_path = Some(rel.clone());
    }
    files.remove_output(&rel)?;
    push_event(chat, event);
    Ok(Applied {
        path: dest_rel,
        content,
        before,
        after,
    })
}

/// Rejects the output of `path` (`output_delete`, event `UserRejectOutput`).
/// Errors: `No output for <path>`.
pub fn reject(chat: &mut Chat, files: ChatFiles, root: &Path, path: &str) -> Result<()> {
    let (rel, _) = locate_in_project(root, path)?;
    if files.read_output(&rel)?.is_none() {
        return Err(Error::not_found(format!("No output for {rel}")));
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
        .ok_or_else(|| Error::not_found(format!("No output for {rel}")))?;
    let local = read_text_opt(&abs, &rel)?.map(|t| to_lf(&t).into_owned());
    let snapshot =
        find_file(chat, &rel).and_then(|i| files.read_snapshot(&chat.context_files[i]).ok());
    let Some(local) = local else {
        return Ok("none");
    };
    if local == to_lf(&output) {
        let event = record_content(chat, files, &rel, &local, "UserApplyFile")?;
        files.remove_output(&rel)?;
        push_event(chat, event);
        return Ok("full");
    }
    if snapshot.as_deref() == Some(local.as_str()) {
        return Ok("none");
    }
    let event = record_content(chat, files, &rel, &local, "UserWriteFile")?;
    push_event(chat, event);
    Ok("partial")
}

/// Makes `content` the context snapshot of project file `rel` (adding the file,
/// writable, when it was not in context) and returns the event describing it, with
/// `prev_version` or `added` set; the caller appends it.
fn record_content(
    chat: &mut Chat,
    files: ChatFiles,
    rel: &str,
    content: &str,
    action: &str,
) -> Result<Part> {
    let version = ids::file_version(rel, content);
    if let Some(i) = find_file(chat, rel) {
        let prev = std::mem::replace(&mut chat.context_files[i].version, version);
        let cf = chat.context_files[i].clone();
        files.write_snapshot(&cf, content)?;
        return Ok(Part {
            prev_version: Some(prev),
            ..event_for(action, &cf)
        });
    }
    let cf = ContextFile {
        path: rel.to_owned(),
        readonly: false,
        external: false,
        version,
        start_line: None,
        end_line: None,
    };
    files.write_snapshot(&cf, content)?;
    chat.context_files.push(cf.clone());
    Ok(Part {
        added: Some(true),
        ..event_for(action, &cf)
    })
}
