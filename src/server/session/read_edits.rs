//! Edits of files the model read (docs/PROTOCOL.md, "approved retrieval tools"): a
//! project file the model read through a `read_file` that completed in this chat — so
//! approved in `ask` mode — may be edited though it is not in context. The edit is
//! planned against the file as it is on disk, and when it is stored the file joins
//! the context with that text as its snapshot, marked `added_by: "retrieval"`, so the
//! change is a proposal reviewed like any other.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, Message};
use crate::context::{ChatFiles, event_for, event_message, find_file};
use crate::edit::{FileAccess, Plan};
use crate::error::Result;
use crate::project::paths::locate_in_project;
use crate::turn::stream::TurnOutcome;

/// The `added_by` mark of a context file a retrieval read brought in.
pub(super) const ADDED_BY_RETRIEVAL: &str = "retrieval";

/// `read_file`'s path, under either name the tool takes.
#[derive(Deserialize)]
struct ReadArgs {
    file_path: Option<String>,
    path: Option<String>,
}

/// Project-relative paths read by a completed `read_file`: in `chat`'s history and in
/// the steps of the turns just ended.
pub(super) fn read_paths(chat: &Chat, turns: &[&TurnOutcome], root: &Path) -> BTreeSet<String> {
    let history = chat
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter(|p| p.kind == "tool_call")
        .filter(|p| p.extra.get("name").and_then(|n| n.as_str()) == Some("read_file"))
        .filter(|p| p.extra.get("status").and_then(|s| s.as_str()) == Some("completed"))
        .filter_map(|p| p.extra.get("arguments").cloned());
    let now = turns
        .iter()
        .flat_map(|t| t.steps.iter())
        .filter(|s| s.name == "read_file" && s.status == "completed")
        .map(|s| s.arguments.clone());
    history
        .chain(now)
        .filter_map(|a| serde_json::from_value::<ReadArgs>(a).ok())
        .filter_map(|a| a.file_path.or(a.path))
        .filter_map(|p| locate_in_project(root, &p).ok().map(|(rel, _)| rel))
        .filter(|rel| !crate::tools::reads::is_secret(rel))
        .collect()
}

/// What the model may do with `rel` given what it read: a path the plan would treat
/// as absent becomes writable at its text on disk (LF) when the model read it.
pub(super) fn widen(
    access: FileAccess,
    rel: &str,
    read: &BTreeSet<String>,
    root: &Path,
) -> FileAccess {
    match access {
        FileAccess::Absent if read.contains(rel) => match disk_text(root, rel) {
            Some(text) => {
                let content = crate::text::to_lf(&text).into_owned();
                FileAccess::Writable {
                    file_id: ids::file_version(rel, &content),
                    content,
                }
            }
            None => FileAccess::Absent,
        },
        other => other,
    }
}

fn disk_text(root: &Path, rel: &str) -> Option<String> {
    let (_, abs) = locate_in_project(root, rel).ok()?;
    crate::project::fsutil::read_text(&abs, rel).ok()
}

/// Adds to `chat`'s context each file `plan` edits that is not in context and was
/// read (`read`): its snapshot the file's bytes on disk, read now, or the text the
/// edit was planned against when the file changed since; returns the `UserAddFile` event
/// messages (with `added_by`), for the caller to put before the answer.
pub(super) fn add_read_files(
    chat: &mut Chat,
    files: ChatFiles,
    plan: &Plan,
    read: &BTreeSet<String>,
    root: &Path,
) -> Result<Vec<Message>> {
    let mut events = Vec::new();
    for (path, base) in &plan.bases {
        let Some(base) = base else { continue };
        if !read.contains(path) || find_file(chat, path).is_some() {
            continue;
        }
        // The file's own bytes when they are what the edit was planned against.
        let text = disk_text(root, path)
            .filter(|t| crate::text::to_lf(t) == base.as_str())
            .unwrap_or_else(|| base.clone());
        let mut meta = serde_json::Map::new();
        meta.insert("added_by".into(), json!(ADDED_BY_RETRIEVAL));
        let cf = ContextFile {
            path: path.clone(),
            readonly: false,
            external: false,
            version: ids::file_version(path, &text),
            start_line: None,
            end_line: None,
            kind: None,
            meta: Some(meta),
        };
        files.write_snapshot(&cf, &text)?;
        let mut part = event_for("UserAddFile", &cf);
        part.extra
            .insert("added_by".into(), json!(ADDED_BY_RETRIEVAL));
        events.push(event_message(part));
        chat.context_files.push(cf);
    }
    Ok(events)
}
