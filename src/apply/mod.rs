//! The one apply engine: every write of the model's work into the user's files goes
//! through here (`apply_file`, `apply_file_as`, `review_apply`, rollback), so merging,
//! line endings, checkpoints and the last-line path guard exist once.
//!
//! Ordering (docs/ARCHITECTURE.md, "Durability"): the checkpoint that records a file's
//! content before and after is durable before the user's file is replaced, so a crash
//! between the two leaves a checkpoint that can be rolled back, never a changed file
//! without its record.

pub mod checkpoint;
pub mod merge;

use std::path::{Path, PathBuf};

use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, Part};
use crate::context::{ChatFiles, event_for, find_file};
use crate::error::{Error, ErrorCode, Result};
use crate::project::fsutil::{remove_file_if_exists, text_from_bytes, write_user_file};
use crate::project::paths::locate_in_project;
use checkpoint::{CheckpointStore, Origin, file_change};
pub use merge::{Conflict, LineRange, Merged};

/// A file on disk as the engine reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFile {
    /// Its text, `None` when it does not exist.
    pub text: Option<String>,
    /// `sha256:…` of its bytes, `None` when it does not exist.
    pub hash: Option<String>,
}

/// Reads a user file. Errors: not UTF-8 text (such a file is never overwritten), or an
/// unreadable file.
pub fn read_disk(abs: &Path, rel: &str) -> Result<DiskFile> {
    match crate::project::fsutil::read_regular(abs) {
        Ok(bytes) => {
            let hash = ids::sha256_tagged(&bytes);
            let text = text_from_bytes(bytes, rel).map_err(|_| {
                Error::invalid(format!("Refusing to overwrite {rel}: it is not UTF-8 text"))
            })?;
            Ok(DiskFile {
                text: Some(text),
                hash: Some(hash),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DiskFile {
            text: None,
            hash: None,
        }),
        Err(e) => Err(Error::io(format!("Cannot read file {rel}"), e)),
    }
}

/// One user file to change.
#[derive(Debug, Clone)]
pub struct FileWrite {
    /// Project-relative path.
    pub rel: String,
    /// Content before, as on disk (`None`: the file did not exist).
    pub before: Option<String>,
    /// Content to leave, as written to disk (`None`: delete the file).
    pub after: Option<String>,
    /// What the model proposed, kept in the checkpoint for the three-way view.
    pub proposed: Option<String>,
}

/// Records `writes` in a checkpoint (a new one, or the newest when it is the same
/// turn's apply: `CheckpointStore::record`), then changes the files, in that order.
/// Returns the checkpoint id (`None` when nothing changed). Every path is resolved
/// again right before its write (the last-line guard): a path that leaves the project
/// is an error (`path_escape`), never a write.
pub fn commit(
    root: &Path,
    checkpoints: &CheckpointStore,
    origin: Origin,
    writes: Vec<FileWrite>,
) -> Result<Option<String>> {
    let Some(r) = record(root, checkpoints, origin, writes)? else {
        return Ok(None);
    };
    for (w, abs) in r.writes.iter().zip(&r.targets) {
        match &w.after {
            Some(text) => write_user_file(abs, text.as_bytes())?,
            None => remove_file_if_exists(abs)?,
        }
    }
    Ok(Some(r.checkpoint_id))
}

/// A checkpoint recorded for writes not made yet.
#[derive(Debug)]
pub struct Recorded {
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The writes that change something.
    pub writes: Vec<FileWrite>,
    /// Their absolute paths, guarded (the last-line guard).
    pub targets: Vec<PathBuf>,
}

/// [`commit`] without the writes, for a caller that writes the files another way (an
/// ACP client's editor buffer): the checkpoint of the writes that change something,
/// `None` when none does.
pub fn record(
    root: &Path,
    checkpoints: &CheckpointStore,
    origin: Origin,
    writes: Vec<FileWrite>,
) -> Result<Option<Recorded>> {
    let writes: Vec<FileWrite> = writes.into_iter().filter(|w| w.before != w.after).collect();
    if writes.is_empty() {
        return Ok(None);
    }
    let targets: Vec<PathBuf> = writes
        .iter()
        .map(|w| guard(root, &w.rel))
        .collect::<Result<_>>()?;
    let files = writes
        .iter()
        .map(|w| {
            file_change(
                &w.rel,
                w.before.as_deref(),
                w.after.as_deref(),
                w.proposed.as_deref(),
            )
        })
        .collect();
    let cp = checkpoints.record(origin, files)?;
    Ok(Some(Recorded {
        checkpoint_id: cp.checkpoint_id,
        writes,
        targets,
    }))
}

/// The turn whose answer last wrote the output of `rel`: the newest assistant message
/// that lists it in `output_files`, named by its place in the chat and its `timestamp`
/// (`7@2026-11-25T08:00:00Z`; a checkpoint's `turn_id`). Two turns never share both.
pub fn turn_of(chat: &Chat, rel: &str) -> Option<String> {
    chat.messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| {
            m.role == "assistant"
                && m.output_files
                    .as_ref()
                    .is_some_and(|o| o.iter().any(|p| p == rel))
        })
        .map(|(i, m)| format!("{i}@{}", m.timestamp.as_deref().unwrap_or("")))
}

/// The last-line guard before a user file is written: `rel` must still resolve inside
/// the project (symlinks included) and outside bb7's state.
fn guard(root: &Path, rel: &str) -> Result<PathBuf> {
    let (again, abs) = locate_in_project(root, rel)?;
    if again != rel || !abs.starts_with(root) {
        return Err(Error::path_escape(rel));
    }
    Ok(abs)
}

/// What `apply_file` / `apply_file_as` asks for.
#[derive(Debug, Clone)]
pub struct ApplyArgs<'a> {
    /// The output's path.
    pub path: &'a str,
    /// Where to write instead (`apply_file_as`).
    pub destination: Option<&'a str>,
    /// Let the model's change win where the user changed the same lines.
    pub force: bool,
    /// The editor's text of the file to merge onto instead of the disk file; the
    /// caller writes the result (an ACP client's `fs/write_text_file`), so the apply
    /// records its checkpoint and writes nothing. `""` for a file not on disk (nor in
    /// context) is a new file: the output is taken as it is.
    pub editor_text: Option<&'a str>,
}

/// What an apply did.
#[derive(Debug, Clone)]
pub struct Applied {
    /// Project-relative path written.
    pub path: String,
    /// The output's own path (to remove once the chat is saved).
    pub source: String,
    /// The file's content now, LF line endings: the model's output merged with the
    /// user's edits.
    pub content: String,
    /// The checkpoint recorded (`None` when the file already had this content).
    pub checkpoint_id: Option<String>,
}

/// Applies the output of `args.path` to the user's file (event `UserApplyFile`) or
/// to `args.destination` (`UserSaveAs`), merging it with the file on disk
/// (see [`merge::merge`]). The context snapshot becomes the merged content (a file not
/// in context is added, writable). The caller saves the chat and then removes the
/// output (`Applied::source`), so a crash in between leaves the output to apply again,
/// which merges to the same file.
///
/// Errors: `File not found` when there is no output (`not_found`, the reference's
/// text), `conflict` with the overlapping line
/// ranges (nothing written), `path_escape`, a non-UTF-8 target, write failures.
pub fn apply_output(
    chat: &mut Chat,
    files: ChatFiles,
    root: &Path,
    checkpoints: &CheckpointStore,
    args: &ApplyArgs,
) -> Result<Applied> {
    let (rel, _) = locate_in_project(root, args.path)?;
    let output = files
        .read_output(&rel)?
        .ok_or_else(|| Error::not_found(crate::context::FILE_NOT_FOUND))?;
    let (dest_rel, dest_abs) = match args.destination {
        Some(d) => locate_in_project(root, d)?,
        None => locate_in_project(root, &rel)?,
    };
    let base = match (args.destination, find_file(chat, &rel)) {
        (None, Some(i)) => Some(files.read_snapshot(&chat.context_files[i])?),
        _ => None,
    };
    let disk = match args.editor_text {
        // An empty buffer of a file that is neither on disk nor in context: a new file,
        // nothing to merge onto (the checkpoint records that it did not exist).
        Some("") if base.is_none() && !dest_abs.exists() => DiskFile {
            text: None,
            hash: None,
        },
        Some(text) => DiskFile {
            text: Some(text.to_owned()),
            hash: None,
        },
        None => read_disk(&dest_abs, &dest_rel)?,
    };
    let merged = merge::merge(base.as_deref(), &output, disk.text.as_deref(), args.force)
        .map_err(|c| conflict_error(&dest_rel, &c))?;
    let action = if args.destination.is_some() {
        "apply_file_as"
    } else {
        "apply_file"
    };
    let write = FileWrite {
        rel: dest_rel.clone(),
        before: disk.text.clone(),
        after: Some(merged.text.clone()),
        proposed: Some(output.clone()),
    };
    let turn = turn_of(chat, &rel);
    let origin = Origin {
        chat_id: &chat.id,
        action,
        turn_id: turn.as_deref(),
        rolls_back: None,
    };
    let checkpoint_id = match args.editor_text {
        Some(_) => record(root, checkpoints, origin, vec![write])?.map(|r| r.checkpoint_id),
        None => commit(root, checkpoints, origin, vec![write])?,
    };
    let event = if args.destination.is_some() {
        "UserSaveAs"
    } else {
        "UserApplyFile"
    };
    // The snapshot becomes the bytes now in the file, in its own line endings.
    let mut part = record_content(chat, files, &dest_rel, &merged.text, event)?;
    if args.destination.is_some() {
        part.original_path = Some(rel.clone());
    }
    if let Some(cp) = &checkpoint_id {
        part.extra
            .insert("checkpoint_id".into(), serde_json::json!(cp));
    }
    crate::context::push_event(chat, part);
    Ok(Applied {
        path: dest_rel,
        source: rel,
        // The editor's text is replaced as it is, in its own line endings.
        content: match args.editor_text {
            Some(_) => merged.text,
            None => merged.lf,
        },
        checkpoint_id,
    })
}

/// The `conflict` error of an apply, naming the line ranges.
pub fn conflict_error(rel: &str, c: &Conflict) -> Error {
    let conflicts = match c {
        Conflict::Overlap(ranges) => ranges.clone(),
        Conflict::FileExists | Conflict::FileDeleted => Vec::new(),
    };
    Error::new(
        ErrorCode::Conflict,
        format!(
            "Cannot apply {rel}: {c}. Nothing was written; review it hunk by hunk, or apply with `--force` (`force: true`) to let the model's change win there"
        ),
    )
    .with_data(crate::error::ErrorData {
        path: Some(rel.to_owned()),
        conflicts,
        holder_pid: None,
    })
}

/// Makes `content` the context snapshot of project file `rel` (adding the file,
/// writable, when it was not in context) and returns the event describing it, with
/// `prev_version` or `added` set; the caller appends it.
pub fn record_content(
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
        kind: None,
        meta: None,
    };
    files.write_snapshot(&cf, content)?;
    chat.context_files.push(cf.clone());
    Ok(Part {
        added: Some(true),
        ..event_for(action, &cf)
    })
}
