//! Completing a model turn: planning and committing its file tool calls, the hidden repair
//! round, the assistant message and the change payloads of `done`.

use super::{Ctx, Flow, Session, system_message};
use crate::chat::ids;
use crate::chat::model::{Chat, Message, Part};
use crate::context::{ChatFiles, find_file};
use crate::edit::{self, DiffMode, FileAccess, Plan, ToolCall};
use crate::error::ErrorCode;
use crate::error::Result;
use crate::llm::request::{ChatMessage, Role};
use crate::llm::{ApiError, Usage};
use crate::protocol::events::{Change, TurnMessage};
use crate::retrieval::ToolsMode;
use crate::server::stream::{ChatKey, TurnOutcome};
use serde_json::{Value, json};

/// Lines of a new file shown in a `write` change payload.
const PREVIEW_LINES: usize = 50;

/// How a cancelled turn ends: the stream's `error` message and the system message
/// saved after the partial answer (the reference's words).
const CANCELLED: &str = "Response aborted by user.";

/// What the hidden repair round asks of the model after some edits failed.
const REPAIR_REQUEST: &str = "Some edits failed and nothing was written yet. Call the tools again for the failed changes only, with corrected arguments. Do not repeat the ones that applied.";

impl Session {
    /// Saves the turn's result and tells the client. A call that writes outside the
    /// project fails like any other failed call (Durability 5: no input ends bb7).
    /// Returns `None` when it started a hidden repair round instead of finishing.
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
                push_assistant(chat, first, &text, &thinking, (&usage, duration), None);
                chat.messages.push(system_message(retry_context.clone()));
                Ok(())
            })?;
            self.log_usage(&first.spec.model, &usage);
            let msg = TurnMessage::DiffError {
                errors,
                tool_calls: plan.reports.clone(),
                usage,
                duration,
                chat_id: key.id.clone(),
            };
            ctx.outbox.emit(&msg, Some(&rid));
            return Ok(Some(Flow::Continue));
        }

        let changes = self.commit_plan(&key, &plan, &root)?;
        let output_files: Vec<String> = plan.writes.keys().cloned().collect();
        let end_note = if cancelled {
            Some(CANCELLED.to_owned())
        } else {
            failed.as_ref().map(ApiError::user_message)
        };
        let plan_ref = &plan;
        self.change_chat(&key, |chat, _| {
            let anything = !text.is_empty() || !thinking.is_empty() || !plan_ref.writes.is_empty();
            if anything {
                push_assistant(
                    chat,
                    first,
                    &text,
                    &thinking,
                    (&usage, duration),
                    Some(plan_ref),
                );
            }
            if let Some(note) = &end_note {
                chat.messages.push(system_message(note.clone()));
            }
            Ok(())
        })?;
        self.log_usage(&first.spec.model, &usage);
        if let Some(e) = &failed {
            let msg = TurnMessage::Error {
                message: e.user_message(),
                code: ErrorCode::Api,
                chat_id: key.id.clone(),
            };
            ctx.outbox.emit(&msg, Some(&rid));
            return Ok(Some(Flow::Continue));
        }
        if cancelled {
            // The reference plugin ends a cancelled send on exactly this error.
            let msg = TurnMessage::Error {
                message: CANCELLED.to_owned(),
                code: ErrorCode::Cancelled,
                chat_id: key.id.clone(),
            };
            ctx.outbox.emit(&msg, Some(&rid));
            return Ok(Some(Flow::Continue));
        }
        let done = TurnMessage::Done {
            chat_id: key.id.clone(),
            output_files,
            usage,
            duration: round_ms(duration),
            changes,
        };
        ctx.outbox.emit(&done, Some(&rid));
        self.maybe_auto_title(&key, ctx);
        Ok(Some(Flow::Continue))
    }

    /// Appends the turn to `~/.bb7/usage.csv` (the reference plugin's "Today:" cost).
    /// A failure to log never fails the turn.
    fn log_usage(&self, model: &str, usage: &Usage) {
        let Some(dirs) = &self.dirs else { return };
        let root = self.project_root().unwrap_or_default();
        let line = crate::project::usage_log::UsageLine {
            project_root: &root.to_string_lossy(),
            model,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage.cached_tokens,
            cost: usage.cost,
        };
        if let Err(e) = crate::project::usage_log::append(&dirs.state, &line) {
            tracing::info!(error = %e, "cannot append to usage.csv");
        }
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
        let mut plan = edit::plan(calls, mode, root, &access);
        guard_plan(&mut plan, key.global);
        Ok(plan)
    }

    /// Writes every planned output together (see `ChatFiles::commit_outputs`) and
    /// returns the change payloads.
    pub(super) fn commit_plan(
        &self,
        key: &ChatKey,
        plan: &Plan,
        root: &std::path::Path,
    ) -> Result<Vec<Change>> {
        let store = self.store_for(key)?;
        let files = ChatFiles::new(&store, &key.id);
        files.commit_outputs(&plan.writes)?;
        // A new output starts a new review of that file.
        for path in plan.writes.keys() {
            crate::review::decided::clear(files, path)?;
        }
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
        body.messages.push(crate::server::stream::assistant_message(
            &first.text,
            &first.calls,
        ));
        for (c, r) in first.calls.iter().zip(plan.reports.iter()) {
            let content = match &r.error {
                Some(e) => format!("Failed: {e}"),
                None => "Applied.".to_owned(),
            };
            body.messages.push(ChatMessage::tool_result(&c.id, content));
        }
        body.messages
            .push(ChatMessage::text(Role::User, REPAIR_REQUEST));
        let mut spec = first.spec.clone();
        spec.body = body;
        spec.visible = false;
        spec.tools = ToolsMode::Off;
        self.in_flight.remove(&spec.request_id);
        self.spawn_turn(spec, provider, ctx, Some(Box::new(first.clone())));
        Ok(())
    }
}

/// The server's own check of a plan, whatever the planner decided: a global chat
/// writes no file, and no call writes into version-control or bb7 state
/// (Durability 7). Such calls become failed calls, so nothing of the response is
/// written.
fn guard_plan(plan: &mut Plan, global: bool) {
    for r in &mut plan.reports {
        if r.status != "ok" || crate::retrieval::is_retrieval(&r.tool) {
            continue;
        }
        let refusal = match r.path.as_deref() {
            _ if global => Some((
                "read_only",
                "this is a global chat, which cannot write files".to_owned(),
            )),
            Some(p) => crate::apply::protected_dir(p).map(|d| {
                (
                    "path_escape",
                    format!("{p} is inside {d}/, which the model may not write"),
                )
            }),
            None => None,
        };
        if let Some((code, e)) = refusal {
            r.status = "failed";
            r.code = Some(code);
            r.error = Some(e);
        }
    }
    if global {
        plan.writes.clear();
        plan.bases.clear();
    }
    plan.writes
        .retain(|p, _| crate::apply::protected_dir(p).is_none());
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

/// Seconds rounded to milliseconds.
fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// Appends the assistant message of a turn: thinking, text, and an
/// `AssistantWriteFile` event per written file. Its `usage` also carries the turn's
/// `duration` in seconds, as the reference's messages do.
pub(super) fn push_assistant(
    chat: &mut Chat,
    turn: &TurnOutcome,
    text: &str,
    thinking: &str,
    (usage, duration): (&Usage, f64),
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
    // A turn the provider reported no usage for (cancelled early, failed) gets none:
    // zeros would show as "0 in / 0 out" in place of the last real figures.
    if turn.usage.is_some()
        && let Ok(mut u) = serde_json::to_value(usage)
    {
        u["duration"] = json!(round_ms(duration));
        msg.extra.insert("usage".into(), u);
    }
    if let Some(r) = &turn.spec.body.reasoning {
        msg.extra.insert("reasoning_effort".into(), json!(r.effort));
    }
    chat.messages.push(msg);
}

/// The change payload of one written file (docs/PROTOCOL.md, "typed change
/// payloads"): `edit` with a unified diff from the version the model saw, or `write`
/// with a preview for a file the model had not seen.
pub fn change_payload(
    path: &str,
    base: Option<String>,
    content: &str,
    root: &std::path::Path,
) -> Change {
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
            Change::Edit {
                path: path.to_owned(),
                description: format!(
                    "Edit {path}: {hunks} hunk{}, +{added} \u{2212}{removed}",
                    if hunks == 1 { "" } else { "s" }
                ),
                file_id,
                file_exists: root.join(path).exists(),
                existing_lines: old.lines().count(),
                content_lines,
                diff_lines: unified.lines().count(),
                unified_diff: unified,
            }
        }
        None => {
            let exists = root.join(path).exists();
            let preview: String = content.split_inclusive('\n').take(PREVIEW_LINES).collect();
            Change::Write {
                path: path.to_owned(),
                description: format!(
                    "Write {content_lines} lines to {path}{}",
                    if exists {
                        " (replaces the local file)"
                    } else {
                        " (new file)"
                    }
                ),
                file_id,
                file_exists: exists,
                content_lines,
                content_bytes: content.len(),
                preview_truncated: preview.len() < content.len(),
                preview,
            }
        }
    }
}
