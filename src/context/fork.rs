//! Editing a sent user message and forking a chat at one (`chat_edit`, `fork_chat`):
//! the context recorded in the message's `context_snapshot` is rebuilt from the files
//! as they are now, and files that changed or vanished since are reported as
//! warnings. Both take only the index of a **user** message, counted the way
//! `chat_get` lists messages (a context event is a message of its own).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, Message, Part, SnapshotRef};
use crate::chat::store::ChatStore;
use crate::context::ChatFiles;
use crate::error::{Error, Result};
use crate::project::fsutil::read_text;
use crate::project::paths::{Location, locate};
use crate::text::to_lf;

/// A file of the message's context that differs from what the model saw then:
/// `{"path","issue":"modified"|"deleted","original_version"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextWarning {
    /// Path as in context.
    pub path: String,
    /// `modified` (content differs) or `deleted` (gone, or too short for a section).
    pub issue: WarningIssue,
    /// The file id recorded in the message's snapshot.
    pub original_version: String,
}

/// What happened to a file since the message's snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningIssue {
    /// Its content differs.
    Modified,
    /// It is gone, or too short for the section.
    Deleted,
}

/// A new chat made by [`fork`].
#[derive(Debug)]
pub struct Forked {
    /// The new chat, saved.
    pub chat: Chat,
    /// Its lock, held since before the index named it.
    pub lock: crate::project::lock::ChatLock,
    /// The text of the forked user message (the new chat's draft).
    pub content: String,
    /// Files that differ from the forked message's context.
    pub warnings: Vec<ContextWarning>,
}

/// The user message at `index`. Errors (`invalid_request`): no such message, or a
/// message of another role (assistant, system or a context event).
pub fn user_message(chat: &Chat, index: usize) -> Result<&Message> {
    let msg = chat
        .messages
        .get(index)
        .ok_or_else(|| Error::invalid(format!("Message {index} does not exist")))?;
    if msg.role != "user" {
        return Err(Error::invalid(format!(
            "Message {index} is not a user message; only user messages can be edited or forked"
        )));
    }
    Ok(msg)
}

/// `chat_edit`: truncates `chat` before user message `index`, restores the context
/// of that message and makes `content` the draft. Warnings are also appended as one
/// system message, where the reference plugin shows them.
pub fn edit(
    chat: &mut Chat,
    files: ChatFiles,
    root: Option<&Path>,
    index: usize,
    content: String,
) -> Result<Vec<ContextWarning>> {
    let msg = user_message(chat, index)?;
    let refs = msg.context_snapshot.clone();
    // The reference plugin sends the message's `content`, which a message stored as
    // parts does not have: an empty draft then means "the message as it was".
    let content = if content.is_empty() {
        msg.text()
    } else {
        content
    };
    let mut warnings = Vec::new();
    if let Some(refs) = refs {
        let (restored, w) = restore_context(chat, files, index, &refs, root);
        warnings = w;
        for (cf, text) in &restored {
            files.write_snapshot(cf, text)?;
        }
        chat.context_files = restored.into_iter().map(|(cf, _)| cf).collect();
    }
    chat.messages.truncate(index);
    chat.draft = content;
    chat.messages.extend(warning_message(&warnings));
    Ok(warnings)
}

/// `fork_chat`: a new chat in `store` holding exactly the messages before user
/// message `index` of `source`, that message's context restored, and its text as the
/// draft. The chat is saved; making it active is the caller's business.
pub fn fork(source: &Chat, store: &ChatStore, root: Option<&Path>, index: usize) -> Result<Forked> {
    let msg = user_message(source, index)?;
    let content = msg.text();
    let refs = msg.context_snapshot.clone().unwrap_or_default();
    let (restored, warnings) = restore_context(
        source,
        ChatFiles::new(store, &source.id),
        index,
        &refs,
        root,
    );
    let (mut chat, lock) =
        store.create_locked(Some(&format!("Fork of {}", source.name)), &source.model)?;
    chat.reasoning_effort = source.reasoning_effort.clone();
    chat.tools = source.tools.clone();
    chat.messages = source.messages[..index].to_vec();
    chat.draft = content.clone();
    chat.forked_from = Some(crate::chat::model::ForkedFrom {
        chat_id: source.id.clone(),
        message_index: index as u64,
    });
    let files = ChatFiles::new(store, &chat.id);
    for (cf, text) in &restored {
        files.write_snapshot(cf, text)?;
    }
    chat.context_files = restored.into_iter().map(|(cf, _)| cf).collect();
    chat.messages.extend(warning_message(&warnings));
    store.save(&chat)?;
    Ok(Forked {
        chat,
        lock,
        content,
        warnings,
    })
}

/// The system message that records fork/edit warnings: one `ForkWarningModified` or
/// `ForkWarningDeleted` context event per file, with the recorded version. `None`
/// when there is nothing to warn about.
pub fn warning_message(warnings: &[ContextWarning]) -> Option<Message> {
    if warnings.is_empty() {
        return None;
    }
    let parts = warnings
        .iter()
        .map(|w| {
            let action = if w.issue == WarningIssue::Deleted {
                "ForkWarningDeleted"
            } else {
                "ForkWarningModified"
            };
            Part {
                version: Some(w.original_version.clone()),
                ..Part::event(action, &w.path)
            }
        })
        .collect();
    Some(Message {
        role: "system".into(),
        parts,
        timestamp: Some(ids::now_rfc3339()),
        ..Message::default()
    })
}

/// Rebuilds the context recorded in `refs` from the files as they are now. A file
/// whose content differs (ignoring a missing final newline, which the reference
/// plugin drops) gives a `modified` warning and its current content; a file that is
/// gone, or no longer has a section's lines, gives `deleted` and is left out. An
/// unchanged entry keeps its recorded text and version, so the prompt stays the same.
/// An attachment (no file on disk) is taken from `chat`'s own entry and snapshot in
/// `files`: `modified` when it was attached again since, `deleted` when it is gone.
pub fn restore_context(
    chat: &Chat,
    files: ChatFiles,
    upto: usize,
    refs: &[SnapshotRef],
    root: Option<&Path>,
) -> (Vec<(ContextFile, String)>, Vec<ContextWarning>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let warn = |r: &SnapshotRef, issue| ContextWarning {
        path: r.path.clone(),
        issue,
        original_version: r.file_id.clone(),
    };
    for r in refs {
        if r.kind.is_some() {
            let current = super::attach::find(chat, &r.path).map(|i| &chat.context_files[i]);
            match current.and_then(|cf| Some((cf, files.read_snapshot(cf).ok()?))) {
                Some((cf, text)) => {
                    if cf.version != r.file_id {
                        warnings.push(warn(r, WarningIssue::Modified));
                    }
                    out.push((cf.clone(), text));
                }
                None => warnings.push(warn(r, WarningIssue::Deleted)),
            }
            continue;
        }
        let current = chat
            .context_files
            .iter()
            .find(|c| c.path == r.path && c.start_line == r.start_line && c.end_line == r.end_line);
        let (readonly, external) = flags_at(chat, upto, r, current);
        let Some(disk) = read_current(root, &r.path) else {
            warnings.push(warn(r, WarningIssue::Deleted));
            continue;
        };
        let section = r.start_line.zip(r.end_line);
        let text = match section {
            Some((s, e)) => match crate::text::section_text(&disk, s, e) {
                Ok(t) => t,
                Err(_) => {
                    warnings.push(warn(r, WarningIssue::Deleted));
                    continue;
                }
            },
            None => disk,
        };
        let version_of = |t: &str| match section {
            Some((s, e)) => ids::section_version(&r.path, s, e, t),
            None => ids::file_version(&r.path, t),
        };
        let (text, version) = match unchanged_variant(&text, &r.file_id, version_of) {
            Some(same) => (same, r.file_id.clone()),
            None => {
                warnings.push(warn(r, WarningIssue::Modified));
                let v = version_of(&text);
                (text, v)
            }
        };
        out.push((
            ContextFile {
                path: r.path.clone(),
                readonly: readonly || section.is_some() || external,
                external,
                version,
                start_line: r.start_line,
                end_line: r.end_line,
                kind: None,
                meta: None,
            },
            text,
        ));
    }
    (out, warnings)
}

/// The form of `text` (as it is, without its final newline, or with one added; in
/// its own line endings or, as chats stored before snapshots kept them, LF) whose
/// version is `recorded`, if any: that is the text the model saw.
fn unchanged_variant(
    text: &str,
    recorded: &str,
    version_of: impl Fn(&str) -> String,
) -> Option<String> {
    let lf = to_lf(text);
    let lf_stripped = lf.strip_suffix('\n');
    let lf_added = format!("{lf}\n");
    let stripped = text.strip_suffix('\n');
    let added = format!("{text}\n");
    [
        Some(text),
        stripped,
        Some(added.as_str()),
        Some(&*lf),
        lf_stripped,
        Some(lf_added.as_str()),
    ]
    .into_iter()
    .flatten()
    .find(|t| version_of(t) == recorded)
    .map(str::to_owned)
}

/// The current text of a context path (in its own line endings), or `None` when it
/// cannot be read. Relative paths need a project root.
fn read_current(root: Option<&Path>, path: &str) -> Option<String> {
    let abs = match root {
        Some(root) => match locate(root, path).ok()? {
            Location::Project { abs, .. } => abs,
            Location::External { abs } => abs,
        },
        None if Path::new(path).is_absolute() => Path::new(path).to_path_buf(),
        None => return None,
    };
    read_text(&abs, path).ok()
}

/// The read-only and external flags a file had at message `upto`: from the current
/// entry, else the last context event about it before that message.
fn flags_at(
    chat: &Chat,
    upto: usize,
    r: &SnapshotRef,
    current: Option<&ContextFile>,
) -> (bool, bool) {
    if let Some(c) = current {
        return (c.readonly, c.external);
    }
    let event = chat.messages[..upto.min(chat.messages.len())]
        .iter()
        .rev()
        .flat_map(|m| m.parts.iter().rev())
        .find(|p| {
            p.kind == "context_event"
                && p.path.as_deref() == Some(&r.path)
                && p.start_line == r.start_line
        });
    match event {
        Some(p) => (p.readonly.unwrap_or(false), p.external.unwrap_or(false)),
        None => (false, Path::new(&r.path).is_absolute()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_only_gained_its_final_newline_is_unchanged() {
        let v = |t: &str| ids::file_version("a.rs", t);
        let recorded = v("x\ny");
        assert_eq!(
            unchanged_variant("x\ny\n", &recorded, v).as_deref(),
            Some("x\ny")
        );
        assert_eq!(unchanged_variant("x\nz\n", &recorded, v), None);
        let with_newline = v("x\ny\n");
        assert_eq!(
            unchanged_variant("x\ny", &with_newline, v).as_deref(),
            Some("x\ny\n")
        );
    }
}
