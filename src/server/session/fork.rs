//! Fork and edit of a chat at a user message, and a new chat with the same context: the
//! context is restored as it was at that message, with warnings for files changed since.

use super::*;
use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, Part, SnapshotRef};
use crate::context::{self, ChatFiles, find_file};
use crate::error::{Error, Result};
use crate::project::fsutil::{read_text, to_lf};
use crate::project::paths::locate;
use crate::protocol::Request;
use crate::protocol::params;
use serde_json::{Value, json};
use std::path::Path;

impl Session {
    pub(super) fn chat_edit(&mut self, req: &Request) -> Result<Value> {
        let args: params::ChatEdit = req.params()?;
        let id = args.chat_id.as_str().to_owned();
        let index = args.message_index.0 as usize;
        let content = args.content.as_str().to_owned();
        let store = self.find_store(&id)?;
        let warnings = self.with_chat(&store, &id, |chat, files, root| {
            let msg = chat
                .messages
                .get(index)
                .ok_or_else(|| Error::invalid(format!("Message {index} does not exist")))?;
            let refs = msg.context_snapshot.clone();
            let mut warnings = Vec::new();
            if let Some(refs) = refs {
                let (restored, w) = restore_context(chat, index, &refs, root);
                warnings = w;
                replace_context(chat, files, restored)?;
            }
            chat.messages.truncate(index);
            chat.draft = content;
            add_warning_events(chat, &warnings);
            Ok(warnings)
        })?;
        Ok(json!({"type": "ok", "context_warnings": warnings}))
    }

    pub(super) fn fork_chat(&mut self, req: &Request) -> Result<Value> {
        let args: params::ForkChat = req.params()?;
        let id = args.chat_id.as_str().to_owned();
        let index = args.fork_message_index.0 as usize;
        let store = self.find_store(&id)?;
        let root = self.root()?.to_path_buf();
        let source = if self.is_active(&store, &id) {
            self.active()?.chat.clone()
        } else {
            store.load(&id)?
        };
        let msg = source
            .messages
            .get(index)
            .ok_or_else(|| Error::invalid(format!("Message {index} does not exist")))?;
        if msg.role != "user" {
            return Err(Error::invalid(format!(
                "Message {index} is not a user message"
            )));
        }
        let content = msg.text();
        let refs = msg.context_snapshot.clone().unwrap_or_default();
        let (restored, warnings) = restore_context(&source, index, &refs, &root);
        let mut fork = store.create(Some(&format!("Fork of {}", source.name)), &source.model)?;
        fork.reasoning_effort = source.reasoning_effort.clone();
        fork.messages = source.messages[..index].to_vec();
        fork.draft = content.clone();
        let fork_files = ChatFiles::new(&store, &fork.id);
        for (cf, text) in &restored {
            fork_files.write_snapshot(cf, text)?;
        }
        fork.context_files = restored.into_iter().map(|(cf, _)| cf).collect();
        add_warning_events(&mut fork, &warnings);
        store.save(&fork)?;
        let new_id = fork.id.clone();
        self.activate(store, &new_id)?;
        Ok(json!({
            "type": "fork_result",
            "new_chat_id": new_id,
            "fork_message_content": content,
            "context_warnings": warnings,
        }))
    }

    pub(super) fn chat_new_with_context(&mut self, req: &Request) -> Result<Value> {
        let args: params::ChatNewWithContext = req.params()?;
        let id = args.source_chat_id.as_str().to_owned();
        let store = self.find_store(&id)?;
        let source = if self.is_active(&store, &id) {
            self.active()?.chat.clone()
        } else {
            store.load(&id)?
        };
        let src_files = ChatFiles::new(&store, &id);
        let mut chat = store.create(None, &source.model)?;
        chat.reasoning_effort = source.reasoning_effort.clone();
        let new_id = chat.id.clone();
        let files = ChatFiles::new(&store, &new_id);
        for cf in &source.context_files {
            let text = src_files.read_snapshot(cf)?;
            files.write_snapshot(cf, &text)?;
            chat.context_files.push(cf.clone());
            context::push_event(&mut chat, context::event_for(add_action(cf), cf));
        }
        store.save(&chat)?;
        self.activate(store, &new_id)?;
        Ok(json!({"type": "ok", "id": new_id}))
    }
}

pub(super) fn add_action(cf: &ContextFile) -> &'static str {
    if cf.is_section() {
        "UserAddSection"
    } else {
        "UserAddFile"
    }
}

/// Rebuilds the context recorded in a user message's `context_snapshot` (seed 001,
/// "Chat Forking") from the files as they are now: a file whose content changed since
/// gives a `modified` warning (and its current content), a file that is gone gives
/// `deleted` and is left out.
pub(super) fn restore_context(
    chat: &Chat,
    upto: usize,
    refs: &[SnapshotRef],
    root: &Path,
) -> (Vec<(ContextFile, String)>, Vec<Warning>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for r in refs {
        let is_section = r.start_line.is_some();
        let current = chat
            .context_files
            .iter()
            .find(|c| c.path == r.path && c.start_line == r.start_line && c.end_line == r.end_line);
        let (readonly, external) = flags_at(chat, upto, r, current);
        let mut cf = ContextFile {
            path: r.path.clone(),
            readonly: readonly || is_section || external,
            external,
            version: r.file_id.clone(),
            start_line: r.start_line,
            end_line: r.end_line,
        };
        let disk = locate(root, &r.path)
            .ok()
            .and_then(|loc| read_text(loc.abs(), &r.path).ok())
            .map(|t| to_lf(&t).into_owned());
        let Some(disk) = disk else {
            warnings
                .push(json!({"path": r.path, "issue": "deleted", "original_version": r.file_id}));
            continue;
        };
        let text = match (r.start_line, r.end_line) {
            (Some(s), Some(e)) => {
                match context::section_text(&disk, s, e) {
                    Ok(t) => t,
                    Err(_) => {
                        warnings.push(json!({"path": r.path, "issue": "deleted", "original_version": r.file_id}));
                        continue;
                    }
                }
            }
            _ => disk,
        };
        cf.version = match (r.start_line, r.end_line) {
            (Some(s), Some(e)) => ids::section_version(&r.path, s, e, &text),
            _ => ids::file_version(&r.path, &text),
        };
        if cf.version != r.file_id {
            warnings
                .push(json!({"path": r.path, "issue": "modified", "original_version": r.file_id}));
        }
        out.push((cf, text));
    }
    (out, warnings)
}

/// The read-only and external flags a file had at message `upto`: from the current
/// entry, else the last context event about it before that message.
pub(super) fn flags_at(
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

/// Replaces a chat's context with `restored`, removing snapshots no longer used.
pub(super) fn replace_context(
    chat: &mut Chat,
    files: ChatFiles,
    restored: Vec<(ContextFile, String)>,
) -> Result<()> {
    for old in &chat.context_files {
        let _ = crate::project::fsutil::remove_file_if_exists(&files.snapshot_path(old)?);
    }
    chat.context_files.clear();
    for (cf, text) in restored {
        files.write_snapshot(&cf, &text)?;
        chat.context_files.push(cf);
    }
    Ok(())
}

/// Records fork/edit warnings as `ForkWarningModified` / `ForkWarningDeleted` events
/// so the model learns that a file differs from what the earlier turn saw.
pub(super) fn add_warning_events(chat: &mut Chat, warnings: &[Warning]) {
    for w in warnings {
        let path = w["path"].as_str().unwrap_or_default();
        let action = if w["issue"] == "deleted" {
            "ForkWarningDeleted"
        } else {
            "ForkWarningModified"
        };
        let mut part = Part::event(action, path);
        part.prev_version = w["original_version"].as_str().map(str::to_owned);
        if let Some(i) = find_file(chat, path) {
            part.version = Some(chat.context_files[i].version.clone());
        }
        context::push_event(chat, part);
    }
}
