//! Completing a model turn: planning and committing its file tool calls, the hidden repair
//! round, the assistant message and the change payloads of `done`.

use super::send::tag_chat;
use super::{Ctx, Flow, Session, system_message};
use crate::chat::ids;
use crate::chat::model::{Chat, Message, Part};
use crate::context::{ChatFiles, find_file};
use crate::edit::{self, DiffMode, FileAccess, Plan, ToolCall};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::llm::{ApiError, Usage};
use crate::protocol::error_message;
use crate::retrieval::ToolsMode;
use crate::server::stream::{ChatKey, TurnOutcome};
use serde_json::{Value, json};

/// Lines of a new file shown in a `write` change payload.
const PREVIEW_LINES: usize = 50;

impl Session {
    /// Saves the turn's result and tells the client. Returns `Flow::Exit` after an
    /// attempt to write outside the project (seed 001, "Output Rules": hard guard), and
    /// `None` when it started a hidden repair round instead of finishing.
    pub(super) fn complete_turn(
        &mut self,
        first: &TurnOutcome,
        repair: Option<&TurnOutcome>,
        ctx: &Ctx,
    ) -> Result<Option<Flow>> {
        let key = first.spec.chat.clone();
        let rid = first.spec.request_id.clone();
        let root = self.root()?.to_path_buf();
        let mode = DiffMode::parse(self.config.diff_mode.as_deref())?;
        let mut usage = first.usage.clone().unwrap_or_default();
        if let Some(r) = repair {
            usage.add(&r.usage.clone().unwrap_or_default());
        }
        let duration = first.duration + repair.map(|r| r.duration).unwrap_or(0.0);

        // Which calls to apply: all of a finished response; on cancel, the complete
        // ones (seed 001: writes finished before cancellation remain); none on error.
        let failed = first
            .error
            .clone()
            .or_else(|| repair.and_then(|r| r.error.clone()));
        let cancelled = first.cancelled || repair.is_some_and(|r| r.cancelled);
        let mut calls: Vec<ToolCall> = first.calls.clone();
        if cancelled {
            calls.retain(|c| serde_json::from_str::<Value>(&c.arguments).is_ok());
        }
        if failed.is_some() {
            calls.clear();
        }
        let mut plan = self.plan_calls(&key, &calls, mode, &root)?;
        if let Some(r) = repair {
            // Keep what applied the first time, then the repair's calls.
            let kept: Vec<ToolCall> = calls
                .iter()
                .zip(plan.reports.iter())
                .filter(|(_, rep)| rep.status == "ok")
                .map(|(c, _)| c.clone())
                .chain(r.calls.iter().cloned())
                .collect();
            calls = kept;
            plan = self.plan_calls(&key, &calls, mode, &root)?;
        } else if !plan.ok()
            && plan.escape.is_none()
            && !cancelled
            && failed.is_none()
            && first.rounds == 1
            && self.config.auto_retry_partial_edits
        {
            self.start_repair(first, &plan, ctx)?;
            return Ok(None);
        }

        let mut text = first.text.clone();
        let mut thinking = first.thinking.clone();
        if let Some(r) = repair {
            thinking.push_str(&r.thinking);
            if !r.text.trim().is_empty() {
                text.push_str("\n\n");
                text.push_str(&r.text);
            }
        }

        if let Some(path) = plan.escape.clone() {
            let message = format!(
                "The model tried to write outside the project ({path}). Nothing was written and bb7 stopped for safety; restart it."
            );
            self.change_chat(&key, |chat, _| {
                push_assistant(chat, first, &text, &thinking, &usage, None);
                chat.messages.push(system_message(message.clone()));
                Ok(())
            })?;
            ctx.outbox.send(
                tag_chat(
                    json!({"type": "error", "code": "path_escape", "message": message}),
                    &key.id,
                ),
                Some(&rid),
            );
            return Ok(Some(Flow::Exit(3)));
        }

        if !plan.ok() {
            let errors = plan.errors();
            let retry_context = format!(
                "Your file changes in the previous response could not be applied, so none of them were written:\n{}\nRepeat all changes of that response, with corrected edits.",
                errors
                    .iter()
                    .map(|e| format!("- {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            self.change_chat(&key, |chat, _| {
                push_assistant(chat, first, &text, &thinking, &usage, None);
                chat.messages.push(system_message(retry_context.clone()));
                Ok(())
            })?;
            ctx.outbox.send(
                tag_chat(
                    json!({"type": "diff_error", "errors": errors, "tool_calls": plan.reports,
                           "usage": usage, "duration": duration}),
                    &key.id,
                ),
                Some(&rid),
            );
            return Ok(Some(Flow::Continue));
        }

        let changes = self.commit_plan(&key, &plan, &root)?;
        let output_files: Vec<String> = plan.writes.keys().cloned().collect();
        let end_note = if cancelled {
            Some("Response aborted by user.".to_owned())
        } else {
            failed.as_ref().map(ApiError::user_message)
        };
        let plan_ref = &plan;
        self.change_chat(&key, |chat, _| {
            let anything = !text.is_empty() || !thinking.is_empty() || !plan_ref.writes.is_empty();
            if anything {
                push_assistant(chat, first, &text, &thinking, &usage, Some(plan_ref));
            }
            if let Some(note) = &end_note {
                chat.messages.push(system_message(note.clone()));
            }
            Ok(())
        })?;
        if let Some(e) = &failed {
            let err = Error::new(ErrorCode::Api, e.user_message());
            ctx.outbox
                .send(tag_chat(error_message(&err), &key.id), Some(&rid));
            return Ok(Some(Flow::Continue));
        }
        let mut done = json!({
            "type": "done",
            "chat_id": key.id,
            "output_files": output_files,
            "usage": usage,
            "duration": (duration * 1000.0).round() / 1000.0,
            "changes": changes,
        });
        if cancelled {
            done["cancelled"] = json!(true);
        }
        ctx.outbox.send(done, Some(&rid));
        if !cancelled {
            self.maybe_auto_title(&key, ctx);
        }
        Ok(Some(Flow::Continue))
    }

    pub(super) fn plan_calls(
        &self,
        key: &ChatKey,
        calls: &[ToolCall],
        mode: DiffMode,
        root: &std::path::Path,
    ) -> Result<Plan> {
        let store = self.store_for(key)?;
        let chat = match &self.active {
            Some(a) if a.chat.id == key.id && a.store.global == key.global => a.chat.clone(),
            _ => store.load(&key.id)?,
        };
        let files = ChatFiles::new(&store, &key.id);
        let access = |rel: &str| file_access(&chat, files, rel);
        Ok(edit::plan(calls, mode, root, &access))
    }

    /// Writes every planned output together (see `ChatFiles::commit_outputs`) and
    /// returns the change payloads.
    pub(super) fn commit_plan(
        &self,
        key: &ChatKey,
        plan: &Plan,
        root: &std::path::Path,
    ) -> Result<Vec<Value>> {
        let store = self.store_for(key)?;
        ChatFiles::new(&store, &key.id).commit_outputs(&plan.writes)?;
        Ok(plan
            .writes
            .iter()
            .map(|(path, content)| {
                change_payload(path, plan.bases.get(path).cloned().flatten(), content, root)
            })
            .collect())
    }

    pub(super) fn start_repair(
        &mut self,
        first: &TurnOutcome,
        plan: &Plan,
        ctx: &Ctx,
    ) -> Result<()> {
        let provider = self.provider()?;
        let mut body = first.spec.body.clone();
        if let Some(msgs) = body["messages"].as_array_mut() {
            msgs.push(edit::assistant_message(&first.text, &first.calls));
            for (c, r) in first.calls.iter().zip(plan.reports.iter()) {
                let content = match &r.error {
                    Some(e) => format!("Failed: {e}"),
                    None => "Applied.".to_owned(),
                };
                msgs.push(json!({"role": "tool", "tool_call_id": c.id, "content": content}));
            }
            msgs.push(json!({"role": "user", "content": "Some edits failed and nothing was written yet. Call the tools again for the failed changes only, with corrected arguments. Do not repeat the ones that applied."}));
        }
        let mut spec = first.spec.clone();
        spec.body = body;
        spec.visible = false;
        spec.tools = ToolsMode::Off;
        self.in_flight.remove(&spec.request_id);
        self.spawn_turn(spec, provider, ctx, Some(Box::new(first.clone())));
        Ok(())
    }
}

/// What the model may do with `rel`, matching what [`prompt_files`] showed it.
pub(super) fn file_access(chat: &Chat, files: ChatFiles, rel: &str) -> FileAccess {
    let output = files.read_output(rel).ok().flatten();
    if let Some(i) = find_file(chat, rel) {
        let cf = &chat.context_files[i];
        if cf.readonly || cf.external {
            return FileAccess::ReadOnly("it is marked read-only in context".into());
        }
        let content = output
            .or_else(|| files.read_snapshot(cf).ok())
            .unwrap_or_default();
        return FileAccess::Writable {
            file_id: ids::file_version(rel, &content),
            content,
        };
    }
    if chat.context_files.iter().any(|c| c.path == rel) {
        return FileAccess::ReadOnly("only a section of it is in context".into());
    }
    match output {
        Some(content) => FileAccess::Writable {
            file_id: ids::file_version(rel, &content),
            content,
        },
        None => FileAccess::Absent,
    }
}

/// Appends the assistant message of a turn: thinking, text, and an
/// `AssistantWriteFile` event per written file.
pub(super) fn push_assistant(
    chat: &mut Chat,
    turn: &TurnOutcome,
    text: &str,
    thinking: &str,
    usage: &Usage,
    plan: Option<&Plan>,
) {
    let mut parts = Vec::new();
    if !thinking.is_empty() {
        parts.push(Part::thinking(thinking));
    }
    for step in &turn.steps {
        let mut p = Part {
            kind: "tool_call".into(),
            content: step["summary"].as_str().map(str::to_owned),
            ..Part::default()
        };
        for k in ["name", "arguments", "status"] {
            p.extra.insert(k.into(), step[k].clone());
        }
        parts.push(p);
    }
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    let mut outputs = Vec::new();
    if let Some(plan) = plan {
        for (path, content) in &plan.writes {
            let mut e = Part::event("AssistantWriteFile", path);
            e.version = Some(ids::file_version(path, content));
            if plan.bases.get(path).is_some_and(Option::is_none) {
                e.added = Some(true);
            }
            parts.push(e);
            outputs.push(path.clone());
        }
    }
    let mut msg = Message {
        role: "assistant".into(),
        model: Some(turn.spec.model.clone()),
        parts,
        timestamp: Some(ids::now_rfc3339()),
        output_files: (!outputs.is_empty()).then_some(outputs),
        ..Message::default()
    };
    if let Ok(u) = serde_json::to_value(usage) {
        msg.extra.insert("usage".into(), u);
    }
    if let Some(e) = turn
        .spec
        .body
        .pointer("/reasoning/effort")
        .and_then(Value::as_str)
    {
        msg.extra.insert("reasoning_effort".into(), json!(e));
    }
    chat.messages.push(msg);
}

/// The typed change payload of one written file (seed 004; PROTOCOL.md "typed change
/// payloads"): `edit` with a unified diff from the version the model saw, or `write`
/// with a preview for a file the model had not seen.
pub fn change_payload(
    path: &str,
    base: Option<String>,
    content: &str,
    root: &std::path::Path,
) -> Value {
    let file_id = ids::file_version(path, content);
    let content_lines = content.lines().count();
    match base {
        Some(old) => {
            let diff = similar::TextDiff::from_lines(old.as_str(), content);
            let unified = crate::review::hunks::unified_diff(path, &old, content);
            let hunks = diff.grouped_ops(3).len();
            let (mut added, mut removed) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    similar::ChangeTag::Insert => added += 1,
                    similar::ChangeTag::Delete => removed += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            json!({
                "type": "edit",
                "path": path,
                "description": format!("Edit {path}: {hunks} hunk{}, +{added} \u{2212}{removed}", if hunks == 1 { "" } else { "s" }),
                "file_id": file_id,
                "file_exists": root.join(path).exists(),
                "existing_lines": old.lines().count(),
                "content_lines": content_lines,
                "unified_diff": unified,
                "diff_lines": unified.lines().count(),
            })
        }
        None => {
            let exists = root.join(path).exists();
            let preview: String = content.split_inclusive('\n').take(PREVIEW_LINES).collect();
            json!({
                "type": "write",
                "path": path,
                "description": format!("Write {content_lines} lines to {path}{}", if exists { " (replaces the local file)" } else { " (new file)" }),
                "file_id": file_id,
                "file_exists": exists,
                "content_lines": content_lines,
                "content_bytes": content.len(),
                "preview_truncated": preview.len() < content.len(),
                "preview": preview,
            })
        }
    }
}
