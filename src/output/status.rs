//! File statuses (`get_file_statuses`): the one place that decides `M`, `A`, `!A` and
//! `S`, and whether a file on disk still matches its snapshot (`out_of_sync`).
//!
//! Statuses are computed from cached facts (sha256, token counts) of the snapshot,
//! output and disk files, looked up by each file's size, mtime and inode, so a warm
//! call reads no file contents unless the client asks for them (`contents: true`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::chat::model::{AttachKind, Chat, ContextFile};
use crate::context::ChatFiles;
use crate::error::Result;
use crate::filecache::{self, Facts};
use crate::project::fsutil::read_text_opt;
use crate::review::{self, OnDisk};
use crate::text::to_lf;

/// One row of `get_file_statuses` (docs/PROTOCOL.md, "Base: context and output").
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileStatus {
    /// Path as in context (relative, or absolute for external files).
    pub path: String,
    /// `""`, `M`, `A`, `!A` or `S` (see [`status_of`]).
    pub status: Status,
    /// The file (or section) is in context.
    pub in_context: bool,
    /// The model wrote an output copy.
    pub has_output: bool,
    /// Read-only for the model.
    pub readonly: bool,
    /// Outside the project.
    pub external: bool,
    /// The file on disk differs from the snapshot (for a section: its lines differ),
    /// ignoring line endings and a missing final newline; also true when the file is
    /// gone. Always false for output that is not in context.
    pub out_of_sync: bool,
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
    /// The file on disk already holds `all` or `some` of the model's pending hunks
    /// (the same change made on both sides); absent when it holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_disk: Option<OnDisk>,
    /// An attachment's kind (`diagnostics`, `command_output`, …; `context_attach`);
    /// absent for files and sections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AttachKind>,
    /// Why the output cannot be read (over the 64 MiB read limit, not text): the row
    /// is still listed so it can be rejected (`output_delete`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_error: Option<String>,
}

/// What decides a status letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A section of a file in context.
    Section,
    /// A whole file in context; `output_differs` is true when the model's output
    /// differs from the snapshot (false when there is no output).
    InContext {
        /// The output differs from the snapshot.
        output_differs: bool,
    },
    /// Output for a file that is not in context; `exists_locally` when the file is on
    /// disk.
    OutputOnly {
        /// A file of that path exists in the project.
        exists_locally: bool,
    },
}

/// A file's status letter on the wire (docs/PROTOCOL.md, `get_file_statuses`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Status {
    /// `""`: in context, no pending change.
    #[default]
    #[serde(rename = "")]
    Unchanged,
    /// `M`: the model's output differs from the snapshot.
    #[serde(rename = "M")]
    Modified,
    /// `A`: output for a file that is not in context and not on disk.
    #[serde(rename = "A")]
    Added,
    /// `!A`: output for a file that is not in context but exists on disk.
    #[serde(rename = "!A")]
    AddedOverExisting,
    /// `S`: a section (read-only).
    #[serde(rename = "S")]
    Section,
}

impl Status {
    /// The letter as sent (`""`, `M`, `A`, `!A`, `S`).
    pub fn letter(self) -> &'static str {
        match self {
            Status::Unchanged => "",
            Status::Modified => "M",
            Status::Added => "A",
            Status::AddedOverExisting => "!A",
            Status::Section => "S",
        }
    }

    /// Output that would create a file (`A` or `!A`).
    pub fn is_added(self) -> bool {
        matches!(self, Status::Added | Status::AddedOverExisting)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.letter())
    }
}

/// The status of an entry: `S` for sections, `M` for a context file whose output
/// differs from its snapshot, `A` for output that is not in context, `!A` when such a
/// file exists locally, `""` otherwise.
pub fn status_of(entry: Entry) -> Status {
    match entry {
        Entry::Section => Status::Section,
        Entry::InContext {
            output_differs: true,
        } => Status::Modified,
        Entry::InContext { .. } => Status::Unchanged,
        Entry::OutputOnly {
            exists_locally: true,
        } => Status::AddedOverExisting,
        Entry::OutputOnly { .. } => Status::Added,
    }
}

/// Where the user's copy of a context entry lives.
fn disk_path(root: &Path, cf: &ContextFile) -> PathBuf {
    if cf.external {
        PathBuf::from(&cf.path)
    } else {
        root.join(&cf.path)
    }
}

/// Facts of the disk copy of `cf` (of its lines, for a section); `None` when it is gone
/// or unreadable.
fn disk_facts(base: &Path, root: &Path, cf: &ContextFile) -> Option<Facts> {
    let disk = disk_path(root, cf);
    match (cf.start_line, cf.end_line) {
        (Some(s), Some(e)) => filecache::section_facts(base, &disk, s, e).ok().flatten(),
        _ => filecache::file_facts(base, &disk, false).ok().flatten(),
    }
}

/// Whether the disk copy differs from the snapshot (see [`FileStatus::out_of_sync`]).
fn out_of_sync(snap: Option<&Facts>, disk: Option<&Facts>) -> bool {
    match (snap, disk) {
        (Some(s), Some(d)) => d.sync_hash != s.sync_hash,
        _ => true,
    }
}

/// [`FileStatus::on_disk`] of project file `rel` with output: the texts are read and
/// compared only when the disk differs from both the base (`None` for a file not in
/// context: the empty text) and the output; a file equal to the output holds all of it.
fn held_on_disk(
    files: ChatFiles,
    root: &Path,
    rel: &str,
    base: Option<(&ContextFile, &Facts)>,
    output: &Facts,
    disk: &Facts,
) -> Option<OnDisk> {
    if disk.sync_hash == output.sync_hash {
        return Some(OnDisk::All);
    }
    let base_text = match base {
        Some((_, snap)) if snap.sync_hash == disk.sync_hash => return None,
        Some((cf, _)) => files.read_snapshot(cf).ok()?,
        // A new file's only hunk is the whole text: the disk holds it only when equal.
        None => return None,
    };
    let out = files.read_output(rel).ok().flatten()?;
    let now = read_text_opt(&root.join(rel), rel).ok().flatten()?;
    review::on_disk(rel, &base_text, &out, Some(&to_lf(&now)))
}

/// Statuses of every context entry and every output file. With `contents` the rows
/// carry the snapshot and output texts; without, their sha256 (`context_hash`,
/// `output_hash`) and no file is read whose metadata is unchanged. Errors: the state
/// directory cannot be listed, or an output is not text.
pub fn statuses(
    chat: &Chat,
    files: ChatFiles,
    root: &Path,
    contents: bool,
) -> Result<Vec<FileStatus>> {
    let base = files.store.base();
    let outputs = files.list_outputs()?;
    let output_set: HashSet<&str> = outputs.iter().map(String::as_str).collect();
    let mut rows = Vec::with_capacity(chat.context_files.len());
    let mut in_context = HashSet::new();
    for cf in &chat.context_files {
        let section = cf.is_section();
        if cf.is_whole_file() {
            in_context.insert(cf.path.as_str());
        }
        let snap_path = files.snapshot_path(cf)?;
        let snap = filecache::file_facts(base, &snap_path, true).ok().flatten();
        let (output, output_error) =
            if cf.is_whole_file() && !cf.external && output_set.contains(cf.path.as_str()) {
                readable(filecache::file_facts(
                    base,
                    &files.output_path(&cf.path)?,
                    true,
                ))
            } else {
                (None, None)
            };
        let entry = if section {
            Entry::Section
        } else {
            Entry::InContext {
                output_differs: output_error.is_some()
                    || output.as_ref().is_some_and(|o| {
                        Some(o.lf_sha256()) != snap.as_ref().map(|s| s.lf_sha256())
                    }),
            }
        };
        // An attachment is no file: nothing on disk to compare it with.
        let disk = if cf.is_attachment() {
            None
        } else {
            disk_facts(base, root, cf)
        };
        let on_disk = match (&output, &snap, &disk) {
            (Some(o), Some(sn), Some(d)) if o.lf_sha256() != sn.lf_sha256() && !cf.external => {
                held_on_disk(files, root, &cf.path, Some((cf, sn)), o, d)
            }
            _ => None,
        };
        // An image is counted by its size, not as the text of its base64.
        let snap_tokens = crate::context::image::entry_tokens(cf)
            .unwrap_or_else(|| snap.as_ref().and_then(|s| s.tokens).unwrap_or(0));
        let out_tokens = output.as_ref().map(|o| o.tokens.unwrap_or(0));
        let (context_content, output_content) = if contents {
            (
                files.read_snapshot(cf).ok(),
                match output {
                    Some(_) => files.read_output(&cf.path)?,
                    None => None,
                },
            )
        } else {
            (None, None)
        };
        rows.push(FileStatus {
            path: cf.path.clone(),
            status: status_of(entry),
            in_context: true,
            has_output: output.is_some() || output_error.is_some(),
            readonly: cf.readonly,
            external: cf.external,
            out_of_sync: !cf.is_attachment() && out_of_sync(snap.as_ref(), disk.as_ref()),
            tokens: out_tokens.unwrap_or(snap_tokens),
            original_tokens: out_tokens.map(|_| snap_tokens),
            output_tokens: out_tokens,
            context_content,
            output_content,
            context_hash: (!contents)
                .then(|| snap.map(|s| s.lf_sha256().to_owned()))
                .flatten(),
            output_hash: (!contents).then(|| output.map(|o| o.sha256)).flatten(),
            start_line: cf.start_line,
            end_line: cf.end_line,
            on_disk,
            kind: cf.kind,
            output_error,
        });
    }
    for rel in &outputs {
        if in_context.contains(rel.as_str()) {
            continue;
        }
        let (facts, output_error) =
            readable(filecache::file_facts(base, &files.output_path(rel)?, true));
        let exists_locally = root.join(rel).symlink_metadata().is_ok();
        let on_disk = match (&facts, exists_locally) {
            (Some(o), true) => filecache::file_facts(base, &root.join(rel), false)
                .ok()
                .flatten()
                .and_then(|d| held_on_disk(files, root, rel, None, o, &d)),
            _ => None,
        };
        let t = facts.as_ref().and_then(|f| f.tokens).unwrap_or(0);
        rows.push(FileStatus {
            path: rel.clone(),
            status: status_of(Entry::OutputOnly { exists_locally }),
            in_context: false,
            has_output: true,
            readonly: false,
            external: false,
            out_of_sync: false,
            tokens: t,
            original_tokens: None,
            output_tokens: Some(t),
            context_content: None,
            output_content: if contents && output_error.is_none() {
                Some(files.read_output(rel)?.unwrap_or_default())
            } else {
                None
            },
            context_hash: None,
            output_hash: if contents {
                None
            } else {
                Some(facts.map(|f| f.sha256).unwrap_or_else(|| sha256_hex(b"")))
            },
            start_line: None,
            end_line: None,
            on_disk,
            kind: None,
            output_error,
        });
    }
    filecache::flush();
    Ok(rows)
}

/// An output's facts, or why it cannot be read: an output bb7 cannot read (an
/// existing one over the read limit, from before that limit was checked on writing)
/// is still listed, so the user can see and reject it.
fn readable(facts: Result<Option<Facts>>) -> (Option<Facts>, Option<String>) {
    match facts {
        Ok(f) => (f, None),
        Err(e) => (None, Some(e.message)),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes))
}
