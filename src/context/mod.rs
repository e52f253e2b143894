//! Context files and sections of a chat, their immutable snapshots under
//! `chats/{id}/context/`, the model's copies under `chats/{id}/output/`, and the
//! context events every mutation appends.

pub mod attach;
pub mod fork;
pub mod image;
mod staging;

use std::path::PathBuf;

use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, Message, Part};
use crate::chat::store::ChatStore;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::flush_queue::{self, Rank};
use crate::project::fsutil::{self, read_text, read_text_opt, write_atomic};
use crate::project::paths::Location;
use crate::text::{section_text, to_lf};

/// Message for adding a file that is already in context, in the reference's words:
/// its plugin makes a repeated add a no-op when the message contains `already exists`.
pub const FILE_EXISTS: &str = "Context file already exists";
/// Message for adding a section that is already in context (see [`FILE_EXISTS`]).
pub const SECTION_EXISTS: &str = "Context section already exists";
/// Message for a file that is not in context or has no output, in the reference's
/// words: its plugin treats a message containing `not found` as "nothing to do".
pub const FILE_NOT_FOUND: &str = "File not found";
/// Message for a section that is not in context (see [`FILE_NOT_FOUND`]).
pub const SECTION_NOT_FOUND: &str = "Section not found";

/// The files of one chat on disk: snapshots and outputs.
#[derive(Debug, Clone, Copy)]
pub struct ChatFiles<'a> {
    /// The store the chat lives in.
    pub store: &'a ChatStore,
    /// The chat id.
    pub id: &'a str,
}

impl<'a> ChatFiles<'a> {
    /// Files of chat `id` in `store`.
    pub fn new(store: &'a ChatStore, id: &'a str) -> Self {
        ChatFiles { store, id }
    }

    /// Where a context entry's snapshot lives: `context/{path}` for project files,
    /// `context/_external/{absolute path}` for external ones,
    /// `context/_sections/{hash of path:start:end}` for sections and
    /// `context/_attachments/{16 hex of sha256 of its path}` for attachments.
    pub fn snapshot_path(&self, cf: &ContextFile) -> Result<PathBuf> {
        let rel = match (cf.start_line, cf.end_line) {
            // An attachment's path is a label: its snapshot lives under its hash.
            _ if cf.is_attachment() => format!(
                "context/_attachments/{}",
                ids::short_sha256(cf.path.as_bytes(), 16)
            ),
            (Some(s), Some(e)) => format!("context/_sections/{}", ids::section_key(&cf.path, s, e)),
            _ if cf.external => format!("context/_external/{}", cf.path.trim_start_matches('/')),
            _ => format!("context/{}", cf.path),
        };
        self.store.chat_path(self.id, &rel)
    }

    /// Where the reference BB-7 stores the snapshot of a section or an external
    /// file: 16 hex of sha256 of `path:start:end` (sections) or of the absolute path
    /// (external files), plus the path's extension. `None` for project files, which
    /// both keep at `context/{path}`.
    pub fn reference_snapshot_path(&self, cf: &ContextFile) -> Result<Option<PathBuf>> {
        let ext = std::path::Path::new(&cf.path)
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| format!(".{e}"))
            .unwrap_or_default();
        let rel = match (cf.start_line, cf.end_line) {
            _ if cf.is_attachment() => return Ok(None),
            (Some(s), Some(e)) => format!(
                "context/_sections/{}{ext}",
                ids::section_key(&cf.path, s, e)
            ),
            _ if cf.external => format!(
                "context/_external/{}{ext}",
                ids::short_sha256(cf.path.as_bytes(), 16)
            ),
            _ => return Ok(None),
        };
        self.store.chat_path(self.id, &rel).map(Some)
    }

    /// The snapshot text of a context entry with LF line endings, as the model, the
    /// edit matcher and the review see it; the stored bytes are the content as added
    /// (see [`ChatFiles::read_snapshot_exact`], docs/ARCHITECTURE.md "What is stored").
    pub fn read_snapshot(&self, cf: &ContextFile) -> Result<String> {
        self.read_snapshot_exact(cf).map(|t| match to_lf(&t) {
            std::borrow::Cow::Borrowed(_) => t,
            std::borrow::Cow::Owned(lf) => lf,
        })
    }

    /// The snapshot of a context entry exactly as stored: the bytes that were added,
    /// line endings included, whose hash is the entry's `version`. Chats written by
    /// the reference BB-7 are read from its file names (see
    /// [`ChatFiles::reference_snapshot_path`]).
    pub fn read_snapshot_exact(&self, cf: &ContextFile) -> Result<String> {
        let missing = |e: Error| {
            if e.code == ErrorCode::NotFound {
                Error::not_found(format!("Context snapshot of {} is missing", cf.path))
            } else {
                e
            }
        };
        match read_text(&self.snapshot_path(cf)?, &cf.path) {
            Err(e) if e.code == ErrorCode::NotFound => match self.reference_snapshot_path(cf)? {
                Some(p) => read_text(&p, &cf.path).map_err(missing),
                None => Err(missing(e)),
            },
            other => other.map_err(missing),
        }
    }

    /// Writes a snapshot and records its facts (hashes, line count; tokens follow in
    /// the background) so statuses need not read it back.
    pub fn write_snapshot(&self, cf: &ContextFile, content: &str) -> Result<()> {
        let path = self.snapshot_path(cf)?;
        // Flushed in the background before the chat.json that names it (Durability 8).
        let dir = self.store.chat_dir(self.id)?;
        flush_queue::write(
            &path,
            content.as_bytes(),
            Rank::Referent,
            self.store.base(),
            Some(&dir),
        )?;
        crate::filecache::record(self.store.base(), &path, content);
        Ok(())
    }

    /// Where the model's copy of project file `rel` lives: `output/{rel}`.
    pub fn output_path(&self, rel: &str) -> Result<PathBuf> {
        self.store.chat_path(self.id, &format!("output/{rel}"))
    }

    /// The model's copy of `rel`, if it has one. Errors: it cannot be read (over the
    /// read limit, not text); the message says how to go on, since the output can
    /// still be rejected without being read.
    pub fn read_output(&self, rel: &str) -> Result<Option<String>> {
        read_text_opt(&self.output_path(rel)?, rel).map_err(|e| {
            Error::new(
                e.code,
                format!(
                    "The model's output of {rel} cannot be read ({}); reject it (output_delete) to go on",
                    e.message
                ),
            )
        })
    }

    /// Whether `rel` has an output file, without reading it (a regular file; the path
    /// is checked for planted symlinks on the way).
    pub fn has_output(&self, rel: &str) -> Result<bool> {
        Ok(self
            .output_path(rel)?
            .symlink_metadata()
            .is_ok_and(|m| m.is_file()))
    }

    /// Writes the model's copy of `rel` and records its facts.
    pub fn write_output(&self, rel: &str, content: &str) -> Result<()> {
        let path = self.output_path(rel)?;
        write_atomic(&path, content.as_bytes())?;
        crate::filecache::record(self.store.base(), &path, content);
        Ok(())
    }

    /// Deletes the model's copy of `rel` (missing is fine) and empty directories left
    /// behind.
    pub fn remove_output(&self, rel: &str) -> Result<()> {
        let path = self.output_path(rel)?;
        fsutil::remove_file_if_exists(&path)?;
        let root = self.store.chat_path(self.id, "output")?;
        let mut dir = path.parent().map(PathBuf::from);
        while let Some(d) = dir {
            if d == root || !d.starts_with(&root) || std::fs::remove_dir(&d).is_err() {
                break;
            }
            dir = d.parent().map(PathBuf::from);
        }
        Ok(())
    }

    /// Project-relative paths of every output file, sorted. Symlinks are skipped.
    pub fn list_outputs(&self) -> Result<Vec<String>> {
        let root = self.store.chat_path(self.id, "output")?;
        Ok(crate::project::fsutil::relative_files(&root))
    }
}

/// Appends a context event. Like the reference, each event is its own assistant-role
/// message holding one `context_event` part, so `message_index` counts it.
pub fn push_event(chat: &mut Chat, part: Part) {
    chat.messages.push(event_message(part));
}

/// The message that carries one context event (see [`push_event`]).
pub fn event_message(part: Part) -> Message {
    Message {
        role: "assistant".into(),
        parts: vec![part],
        timestamp: Some(ids::now_rfc3339()),
        ..Message::default()
    }
}

/// Builds an event part describing `cf`.
pub fn event_for(action: &str, cf: &ContextFile) -> Part {
    Part {
        readonly: Some(cf.readonly),
        external: Some(cf.external),
        version: Some(cf.version.clone()),
        start_line: cf.start_line,
        end_line: cf.end_line,
        ..Part::event(action, &cf.path)
    }
}

/// Index of the whole-file entry for `path`, if in context.
pub fn find_file(chat: &Chat, path: &str) -> Option<usize> {
    chat.context_files
        .iter()
        .position(|c| c.path == path && c.is_whole_file())
}

/// The key a context entry for `loc` is stored under, checked by the rule a chat is
/// read back with (`paths::check_stored`, invariant 13): what is stored can be opened.
fn stored_key(loc: &Location) -> Result<String> {
    let key = loc.key();
    crate::project::paths::check_stored(&key, loc.is_external())?;
    Ok(key)
}

/// Adds a whole file to context (`context_add`): stores the snapshot, appends the
/// entry and a `UserAddFile` event. External files are forced read-only.
/// Errors: `Context file already exists` (code `conflict`; the reference plugin treats
/// a message containing `already exists` as a no-op); a path or content that could not
/// be read back (`invalid_request`/`path_escape`: a NUL byte, over 64 MiB).
pub fn add_file(
    chat: &mut Chat,
    files: ChatFiles,
    loc: &Location,
    content: &str,
    readonly: bool,
) -> Result<()> {
    let (cf, event) = new_file(chat, files, loc, content, readonly, false)?;
    chat.messages.push(event);
    chat.context_files.push(cf);
    Ok(())
}

/// What [`add_file`] adds, without adding it: stores the snapshot and returns the
/// entry and its `UserAddFile` event message, for a caller that records them in the
/// chat's journal (`chat::journal`); `known_absent` when the caller already knows the
/// path is not in context (a lookup in its own index instead of a scan of every entry).
/// Errors: as [`add_file`].
pub fn new_file(
    chat: &Chat,
    files: ChatFiles,
    loc: &Location,
    content: &str,
    readonly: bool,
    known_absent: bool,
) -> Result<(ContextFile, Message)> {
    let path = stored_key(loc)?;
    fsutil::check_storable(content, &path)?;
    if !known_absent && find_file(chat, &path).is_some() {
        return Err(Error::new(ErrorCode::Conflict, FILE_EXISTS));
    }
    // Stored as sent: the version is the protocol's file id of these bytes.
    let cf = ContextFile {
        version: ids::file_version(&path, content),
        readonly: readonly || loc.is_external(),
        external: loc.is_external(),
        path,
        start_line: None,
        end_line: None,
        kind: None,
        meta: None,
    };
    files.write_snapshot(&cf, content)?;
    let event = event_message(event_for("UserAddFile", &cf));
    Ok((cf, event))
}

/// Adds a section (`context_add_section`). `content` is either the section's own
/// lines or the whole file, from which lines `start..=end` are cut. Sections are
/// read-only and immutable. Errors: bad range, `Context section already exists`.
pub fn add_section(
    chat: &mut Chat,
    files: ChatFiles,
    loc: &Location,
    content: &str,
    start: u64,
    end: u64,
) -> Result<()> {
    let (cf, event) = new_section(chat, files, loc, content, start, end)?;
    chat.messages.push(event);
    chat.context_files.push(cf);
    Ok(())
}

/// What [`add_section`] adds, without adding it (see [`new_file`]): the snapshot is
/// stored, the entry and its `UserAddSection` event message returned. Errors: as
/// [`add_section`].
pub fn new_section(
    chat: &Chat,
    files: ChatFiles,
    loc: &Location,
    content: &str,
    start: u64,
    end: u64,
) -> Result<(ContextFile, Message)> {
    if end < start {
        return Err(Error::invalid(format!(
            "Invalid line range {start}-{end}: end_line is before start_line"
        )));
    }
    let path = stored_key(loc)?;
    fsutil::check_storable(content, &path)?;
    let text = section_text(content, start, end)?;
    if chat
        .context_files
        .iter()
        .any(|c| c.path == path && c.start_line == Some(start) && c.end_line == Some(end))
    {
        return Err(Error::new(ErrorCode::Conflict, SECTION_EXISTS));
    }
    let cf = ContextFile {
        version: ids::section_version(&path, start, end, &text),
        readonly: true,
        external: loc.is_external(),
        path,
        start_line: Some(start),
        end_line: Some(end),
        kind: None,
        meta: None,
    };
    files.write_snapshot(&cf, &text)?;
    let event = event_message(event_for("UserAddSection", &cf));
    Ok((cf, event))
}

/// Re-snapshots a whole file (`context_update`, `sync_context`): `UserWriteFile`.
/// Unchanged content is a no-op. Errors: `File not found`.
pub fn update_file(chat: &mut Chat, files: ChatFiles, path: &str, content: &str) -> Result<()> {
    let i = find_file(chat, path).ok_or_else(|| Error::not_found(FILE_NOT_FOUND))?;
    fsutil::check_storable(content, path)?;
    let version = ids::file_version(path, content);
    if chat.context_files[i].version == version {
        return Ok(());
    }
    let prev = std::mem::replace(&mut chat.context_files[i].version, version);
    let cf = chat.context_files[i].clone();
    files.write_snapshot(&cf, content)?;
    push_event(
        chat,
        Part {
            prev_version: Some(prev),
            ..event_for("UserWriteFile", &cf)
        },
    );
    Ok(())
}

/// Removes a whole file from context (`context_remove`): `UserRemoveFile`. Its output,
/// if any, is kept (it then shows as `A`/`!A`), so no model work is lost silently.
/// Errors: `File not found`.
pub fn remove_file(chat: &mut Chat, files: ChatFiles, path: &str) -> Result<()> {
    let i = find_file(chat, path).ok_or_else(|| Error::not_found(FILE_NOT_FOUND))?;
    let cf = chat.context_files.remove(i);
    fsutil::remove_file_if_exists(&files.snapshot_path(&cf)?)?;
    push_event(chat, event_for("UserRemoveFile", &cf));
    Ok(())
}

/// Removes one section (`context_remove_section`): `UserRemoveSection`.
/// Errors: `Section not found`.
pub fn remove_section(
    chat: &mut Chat,
    files: ChatFiles,
    path: &str,
    start: u64,
    end: u64,
) -> Result<()> {
    let i = chat
        .context_files
        .iter()
        .position(|c| c.path == path && c.start_line == Some(start) && c.end_line == Some(end))
        .ok_or_else(|| Error::not_found(SECTION_NOT_FOUND))?;
    let cf = chat.context_files.remove(i);
    fsutil::remove_file_if_exists(&files.snapshot_path(&cf)?)?;
    push_event(chat, event_for("UserRemoveSection", &cf));
    Ok(())
}

/// Sets a whole file's read-only flag (`context_set_readonly`): `UserSetReadOnly`.
/// Errors: external files cannot become writable; read-only cannot be set while the
/// file has pending output.
pub fn set_readonly(chat: &mut Chat, files: ChatFiles, path: &str, readonly: bool) -> Result<()> {
    let i = find_file(chat, path).ok_or_else(|| {
        if chat.context_files.iter().any(|c| c.path == path) {
            Error::invalid("Sections and attachments are always read-only")
        } else {
            Error::not_found(FILE_NOT_FOUND)
        }
    })?;
    let cf = chat.context_files[i].clone();
    if cf.readonly == readonly {
        return Ok(());
    }
    if cf.external && !readonly {
        return Err(Error::invalid("External files are always read-only"));
    }
    if readonly && let Some(out) = files.read_output(path)? {
        let snap = files.read_snapshot(&cf).unwrap_or_default();
        if out != snap {
            return Err(Error::new(
                ErrorCode::Conflict,
                "Cannot set read-only: the file has pending output; apply or reject it first",
            ));
        }
    }
    chat.context_files[i].readonly = readonly;
    let cf = chat.context_files[i].clone();
    push_event(chat, event_for("UserSetReadOnly", &cf));
    Ok(())
}

/// Why the model's files could not be stored: the file that failed, when one did
/// (a name the file system refuses, a full disk), and the error.
#[derive(Debug, Clone)]
pub struct StoreError {
    /// The project-relative path being stored, `None` for the journal or the move.
    pub path: Option<String>,
    /// What failed.
    pub error: Error,
}

impl From<Error> for StoreError {
    fn from(error: Error) -> StoreError {
        StoreError { path: None, error }
    }
}
