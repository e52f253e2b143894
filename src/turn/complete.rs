//! What a finished turn leaves behind, as pure functions: which tool calls to apply,
//! whether a hidden repair round runs, and, once the calls are planned, the messages
//! to append to the chat and the final message of the stream. The server does the I/O
//! around them (planning reads files, committing writes outputs; see
//! `server/session/complete.rs`).

use serde_json::{Value, json};

use crate::chat::ids;
use crate::chat::model::{DiffFailure, Message, Part};
use crate::edit::Plan;
use crate::edit::blocks::Piece;
use crate::edit::request::ProposedEdit;
use crate::error::ErrorCode;
use crate::llm::Usage;
use crate::protocol::events::{Change, TurnMessage};
use crate::tools::ToolCall;
use crate::turn::stream::TurnOutcome;

/// How a cancelled turn ends: the stream's `error` message and the system message
/// saved after the partial answer (the reference's words, which its plugin matches).
pub const CANCELLED: &str = "Response aborted by user.";

/// How a turn cut short by the end of stdin (the editor closed bb7) ends, in place of
/// [`CANCELLED`]: nobody pressed cancel.
pub const INTERRUPTED: &str = "Response interrupted: bb7 was closed before the answer finished.";

/// How a turn ends when bb7 was closed while its file changes were still being planned
/// (matched against the files): the answer is kept, its changes are not stored.
pub const INTERRUPTED_PLANNING: &str = "Response interrupted: bb7 was closed while the answer's file changes were being checked; they were not stored.";

/// The system note after an answer the server cut at its token limit
/// (`finish_reason: "length"`: its `max_tokens` / `-n`, or a full context).
pub const TRUNCATED: &str = "The answer was cut at the server's token limit (finish_reason \"length\"): it is incomplete. Raise the server's output limit (llama.cpp -n, Ollama num_predict) or ask for less at a time.";

/// The system note after an answer whose prompt the server cut silently: it read
/// `reported` of about `estimated` prompt tokens.
pub fn prompt_cut_note(reported: u64, estimated: u64) -> String {
    format!(
        "The server read only {reported} prompt tokens of about {estimated} that bb7 sent: it likely cut the prompt to fit its context length (Ollama's num_ctx, llama.cpp's -c), dropping its start (instructions and tools), so this answer may ignore them. Raise the server's context length, or send less context."
    )
}

/// What a change cut by the token limit is refused with, before the reader's own words.
pub const TRUNCATED_CHANGE: &str =
    "the answer was cut at the server's token limit (finish_reason \"length\") inside this change";

/// What the hidden repair round asks of the model after some edits failed.
pub const REPAIR_REQUEST: &str = "Some edits failed and nothing was written yet. Call the tools again for the failed changes only, with corrected arguments. Do not repeat the ones that applied.";

/// A turn as it ended: the response, and the hidden repair round if one ran.
#[derive(Debug, Clone, Copy)]
pub struct Ended<'a> {
    /// The visible response.
    pub first: &'a TurnOutcome,
    /// The repair round that followed it.
    pub repair: Option<&'a TurnOutcome>,
}

impl Ended<'_> {
    /// Whether the user cancelled either round.
    pub fn cancelled(&self) -> bool {
        self.first.cancelled || self.repair.is_some_and(|r| r.cancelled)
    }

    /// Whether the server cut the answer at its token limit: the last round's
    /// `finish_reason` is `length`.
    pub fn truncated(&self) -> bool {
        let last = self.repair.unwrap_or(self.first);
        last.finish_reason.as_deref() == Some("length")
    }

    /// The API failure of either round.
    pub fn failure(&self) -> Option<&crate::llm::ApiError> {
        self.first
            .error
            .as_ref()
            .or_else(|| self.repair.and_then(|r| r.error.as_ref()))
    }

    /// Usage of both rounds together, and of the attempts dropped before them.
    pub fn usage(&self) -> Usage {
        let mut usage = self.first.spec.route.spent.clone();
        usage.add(&self.first.usage.clone().unwrap_or_default());
        if let Some(r) = self.repair {
            usage.add(&r.usage.clone().unwrap_or_default());
        }
        usage
    }

    /// Seconds of both rounds, and of the attempts dropped before them.
    pub fn duration(&self) -> f64 {
        self.first.spec.route.spent_secs
            + self.first.duration
            + self.repair.map(|r| r.duration).unwrap_or(0.0)
    }

    /// The provider that answered (`local` or `remote`) and why the turn fell back.
    pub fn provider(&self) -> (String, Option<String>) {
        let route = &self.first.spec.route;
        (
            route.role.as_str().to_owned(),
            route.fallback.map(|r| r.as_str().to_owned()),
        )
    }

    /// The calls of the response to plan: all of a finished response; on cancel only
    /// the complete ones (arguments that parse), since writes finished before the
    /// cancel remain; none after an API failure.
    pub fn calls_to_plan(&self) -> Vec<ToolCall> {
        if self.failure().is_some() {
            return Vec::new();
        }
        let mut calls = self.first.calls.clone();
        if self.cancelled() {
            calls.retain(|c| serde_json::from_str::<Value>(&c.arguments).is_ok());
        }
        calls
    }

    /// The SEARCH/REPLACE blocks of the answer as edits to plan, after its tool calls:
    /// all of a finished answer (a broken block fails the response); on cancel only the
    /// complete ones; none after an API failure.
    pub fn blocks_to_plan(&self) -> Vec<ProposedEdit> {
        if self.failure().is_some() {
            return Vec::new();
        }
        let last = self.first.blocks.len().saturating_sub(1);
        self.first
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| !self.cancelled() || matches!(b, Piece::Block(_)))
            .filter_map(|(i, b)| match b {
                // The block the token limit cut says so: its own reason only says
                // that the answer ended.
                Piece::Broken { path, reason } if i == last && self.truncated() => Piece::Broken {
                    path: path.clone(),
                    reason: format!("{TRUNCATED_CHANGE}: {reason}"),
                }
                .proposed(),
                _ => b.proposed(),
            })
            .collect()
    }

    /// After a repair round: the first response's calls that applied, then the
    /// repair's calls (`plan` is the first response's plan of `calls`).
    pub fn calls_after_repair(&self, calls: &[ToolCall], plan: &Plan) -> Vec<ToolCall> {
        let repaired = self.repair.map(|r| r.calls.as_slice()).unwrap_or_default();
        calls
            .iter()
            .zip(plan.reports.iter())
            .filter(|(_, report)| report.status == crate::edit::CallStatus::Ok)
            .map(|(c, _)| c.clone())
            .chain(repaired.iter().cloned())
            .collect()
    }

    /// Whether to run one hidden repair round: some calls of a complete, single-round
    /// response failed, and the user allows automatic repair.
    pub fn wants_repair(&self, plan: &Plan, auto_retry: bool) -> bool {
        auto_retry
            && self.repair.is_none()
            && self.first.blocks.is_empty()
            && !plan.ok()
            && plan.escape.is_none()
            && !self.cancelled()
            && self.failure().is_none()
            && self.first.rounds == 1
    }

    /// The answer's text and reasoning, the repair round's appended.
    fn text_and_thinking(&self) -> (String, String) {
        let mut text = self.first.text.clone();
        let mut thinking = self.first.thinking.clone();
        if let Some(r) = self.repair {
            thinking.push_str(&r.thinking);
            if !r.text.trim().is_empty() {
                text.push_str("\n\n");
                text.push_str(&r.text);
            }
        }
        (text, thinking)
    }
}

/// What completing a turn does: messages to append to the chat, the final message of
/// the stream, and whether the plan's writes are committed (all or none).
#[derive(Debug, Clone)]
pub struct Completion {
    /// Appended to the chat, in order.
    pub messages: Vec<Message>,
    /// `done`, `diff_error` or `error`.
    pub event: TurnMessage,
    /// Usage to log in `usage.csv`.
    pub usage: Usage,
    /// Whether a title may be generated now (a completed answer).
    pub title: bool,
}

impl Completion {
    /// Relabels a cancelled turn as one that bb7's exit interrupted ([`INTERRUPTED`]);
    /// anything else is left as it is.
    pub fn closed_by_exit(&mut self) {
        let TurnMessage::Error { message, code, .. } = &mut self.event else {
            return;
        };
        if *code != ErrorCode::Cancelled {
            return;
        }
        *message = INTERRUPTED.to_owned();
        if let Some(last) = self.messages.last_mut()
            && last.role == "system"
            && last.text() == CANCELLED
        {
            *last = system_message(INTERRUPTED.to_owned());
        }
    }
}

/// Completes a turn whose calls are planned. `changes` are the payloads of the plan's
/// writes, committed by the caller when `plan.ok()` (pass none otherwise).
pub fn complete(ended: Ended<'_>, plan: &Plan, changes: Vec<Change>) -> Completion {
    let chat_id = ended.first.spec.chat.id.clone();
    let usage = ended.usage();
    let duration = ended.duration();
    let (text, thinking) = ended.text_and_thinking();
    let mut messages = Vec::new();

    if !plan.ok() {
        let mut errors = plan.errors();
        if ended.truncated() && !errors.iter().any(|e| e.contains(TRUNCATED_CHANGE)) {
            errors.push(format!("{TRUNCATED_CHANGE}; nothing was written."));
        }
        // The failure stays on the assistant message, which remains the chat's last (as
        // the reference's plugin expects after a `diff_error`); the next request turns it
        // into its retry context (`prompt::assemble`), so the chat gets no system message.
        let mut answer = assistant_message(ended, &text, &thinking, None);
        answer.diff_error = Some(DiffFailure {
            errors: errors.clone(),
        });
        messages.push(answer);
        return Completion {
            messages,
            event: TurnMessage::DiffError {
                errors,
                tool_calls: plan.reports.clone(),
                usage: usage.clone(),
                duration,
                chat_id,
            },
            usage,
            title: false,
        };
    }

    if !text.is_empty() || !thinking.is_empty() || !plan.writes.is_empty() {
        messages.push(assistant_message(ended, &text, &thinking, Some(plan)));
    }
    let (event, note) = if let Some(e) = ended.failure() {
        let failed = match (&ended.first.error, ended.repair) {
            (None, Some(repair)) => repair,
            _ => ended.first,
        };
        let message = crate::turn::route::failure_message(&failed.spec.route, e);
        let event = TurnMessage::Error {
            message: message.clone(),
            code: ErrorCode::Api,
            chat_id,
        };
        (event, Some(message))
    } else if ended.cancelled() {
        let event = TurnMessage::Error {
            message: CANCELLED.to_owned(),
            code: ErrorCode::Cancelled,
            chat_id,
        };
        (event, Some(CANCELLED.to_owned()))
    } else {
        let event = TurnMessage::Done {
            chat_id,
            output_files: plan.writes.keys().cloned().collect(),
            usage: usage.clone(),
            duration: round_ms(duration),
            changes,
            chat_usage: None,
            provider: Some(ended.provider().0),
            fallback_reason: ended.provider().1,
            truncated: ended.truncated(),
            budget_warnings: Vec::new(),
            spent_today: None,
        };
        (event, ended.truncated().then(|| TRUNCATED.to_owned()))
    };
    let title = matches!(event, TurnMessage::Done { .. });
    if title && let Some((reported, estimated)) = ended.first.prompt_cut {
        messages.push(system_message(prompt_cut_note(reported, estimated)));
    }
    messages.extend(note.map(system_message));
    Completion {
        messages,
        event,
        usage,
        title,
    }
}

/// Completes a turn whose file calls were never planned (planning met a bug, or bb7
/// was closed first): the answer's text is saved with nothing written, then a system
/// message with `note`, and the stream ends with an `error` of `code` saying `note`.
/// The chat so never ends on a user message without its answer.
pub fn unplanned(ended: Ended<'_>, code: ErrorCode, note: String) -> Completion {
    let (text, thinking) = ended.text_and_thinking();
    let mut messages = Vec::new();
    if !text.is_empty() || !thinking.is_empty() || !ended.first.steps.is_empty() {
        messages.push(assistant_message(ended, &text, &thinking, None));
    }
    messages.push(system_message(note.clone()));
    Completion {
        messages,
        event: TurnMessage::Error {
            message: note,
            code,
            chat_id: ended.first.spec.chat.id.clone(),
        },
        usage: ended.usage(),
        title: false,
    }
}

/// A system message: its text as a `text` part (the reference's data) and as the
/// top-level `content` (what the reference plugin draws); `chat_get` sends both.
pub fn system_message(text: String) -> Message {
    let mut msg = Message {
        role: "system".into(),
        parts: vec![Part::text(text.clone())],
        timestamp: Some(ids::now_rfc3339()),
        ..Message::default()
    };
    msg.extra.insert("content".into(), Value::String(text));
    msg
}

/// Seconds rounded to milliseconds.
fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// The assistant message of a turn: reasoning, the retrieval steps, the text, and an
/// `AssistantWriteFile` event per written file. Its `usage` carries the turn's
/// `duration` in seconds, as the reference's messages do; a turn the provider reported
/// no usage for (cancelled early, failed) gets none, since zeros would read as
/// "0 in / 0 out" in place of the last real figures.
fn assistant_message(ended: Ended<'_>, text: &str, thinking: &str, plan: Option<&Plan>) -> Message {
    let turn = ended.first;
    let mut parts = Vec::new();
    if !thinking.is_empty() {
        parts.push(Part::thinking(thinking));
    }
    for step in &turn.steps {
        let mut p = Part {
            kind: "tool_call".into(),
            content: Some(step.summary.clone()),
            ..Part::default()
        };
        p.extra.insert("name".into(), json!(step.name));
        p.extra.insert("arguments".into(), step.arguments.clone());
        p.extra.insert("status".into(), json!(step.status));
        if let Some(answer) = &step.answer {
            p.extra.insert("answer".into(), json!(answer));
        }
        parts.push(p);
    }
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    let mut outputs = Vec::new();
    for (path, content) in plan.map(|p| &p.writes).into_iter().flatten() {
        let mut e = Part::event("AssistantWriteFile", path);
        e.version = Some(ids::file_version(path, content));
        if plan.is_some_and(|p| p.bases.get(path).is_some_and(Option::is_none)) {
            e.added = Some(true);
        }
        parts.push(e);
        outputs.push(path.clone());
    }
    let mut msg = Message {
        role: "assistant".into(),
        model: Some(turn.spec.model.clone()),
        parts,
        timestamp: Some(ids::now_rfc3339()),
        output_files: (!outputs.is_empty()).then_some(outputs),
        ..Message::default()
    };
    if turn.usage.is_some()
        && let Ok(mut u) = serde_json::to_value(ended.usage())
    {
        u["duration"] = json!(round_ms(ended.duration()));
        let (provider, fallback) = ended.provider();
        u["provider"] = json!(provider);
        if let Some(reason) = fallback {
            u["fallback_reason"] = json!(reason);
        }
        msg.extra.insert("usage".into(), u);
    }
    if let Some(r) = &turn.spec.body.reasoning {
        msg.extra.insert("reasoning_effort".into(), json!(r.effort));
    }
    msg
}

#[cfg(test)]
#[path = "complete_tests.rs"]
mod tests;
