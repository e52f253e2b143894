//! The messages of a `send` stream and the unsolicited events, typed (docs/PROTOCOL.md,
//! "the model turn"). Each serializes to one JSON object tagged by `type`; the server
//! adds the `request_id`. [`super::MessageKind`] is the reading side of the same names.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::edit::CallReport;
use crate::error::ErrorCode;
use crate::llm::Usage;
use crate::tools::retrieval::ApprovalPayload;

/// `{"type":"event","chat_id","event":{…}}`: a trace event, sent without
/// `request_id` while a client follows the trace (`events_get` with `follow`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename = "event")]
pub struct EventMessage {
    /// The chat whose trace holds the event.
    pub chat_id: String,
    /// The event as stored.
    pub event: crate::chat::events::Event,
}

/// A budget at 80% or more of its limit after a turn (`done`'s `budget_warnings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetWarning {
    /// The config key: `max_cost_per_chat` or `max_cost_per_day`.
    pub budget: String,
    /// USD spent against it, this turn included.
    pub spent: f64,
    /// The limit in USD.
    pub limit: f64,
    /// The warning for the user.
    pub message: String,
}

/// One message bb7 writes while a turn runs, or when it ends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnMessage {
    /// A text delta of the answer.
    Chunk {
        /// The delta.
        content: String,
        /// The chat the turn runs in.
        chat_id: String,
    },
    /// A reasoning delta.
    Thinking {
        /// The delta.
        content: String,
        /// The chat.
        chat_id: String,
    },
    /// A retrieval tool step.
    ToolCall {
        /// `list_files`, `search_project`, `read_file` or `clarify_user`.
        name: String,
        /// The model's arguments (`null` when they were not JSON).
        arguments: Value,
        /// `requested`, `completed` or `denied`.
        status: String,
        /// One line for the user.
        summary: String,
        /// The chat.
        chat_id: String,
    },
    /// A read that waits for `tool_approve`.
    ToolApproval {
        /// The id to answer with.
        approval_id: String,
        /// What the read is: `{"type","description","path"?,…}`.
        payload: ApprovalPayload,
        /// The chat.
        chat_id: String,
    },
    /// A question that waits for `clarify`.
    Clarification {
        /// The id to answer with.
        question_id: String,
        /// The model's question.
        question: String,
        /// The chat.
        chat_id: String,
    },
    /// The model request failed before any content and is sent again after `delay_ms`.
    Retry {
        /// 1 for the first retry.
        attempt: u32,
        /// Milliseconds until the request is sent again.
        delay_ms: u64,
        /// A few words: `HTTP 429`, `connection failed`.
        reason: String,
        /// The whole error, for the user.
        message: String,
        /// The chat.
        chat_id: String,
    },
    /// The turn waits for the model's first token (not final): sent every few
    /// seconds (a quarter of `first_token_timeout_secs`, 1 to 10 s) until text,
    /// reasoning or a tool call arrives.
    Waiting {
        /// Seconds since the request was sent.
        seconds: u64,
        /// What arrived so far: `nothing`, `headers` (the server accepted the
        /// request) or `pings` (and keep-alive bytes since).
        received: String,
        /// For the user: "the local server is reading the prompt, 47 s".
        message: String,
        /// The chat.
        chat_id: String,
    },
    /// Something the user should know about how the turn runs (not final).
    Notice {
        /// What it is about: `blocks` (the server refused tool calls; edits are asked
        /// for as SEARCH/REPLACE blocks from now on).
        kind: String,
        /// For the user.
        message: String,
        /// The chat.
        chat_id: String,
    },
    /// The turn ended with an answer (final).
    Done {
        /// The chat.
        chat_id: String,
        /// Paths the response wrote as output.
        output_files: Vec<String>,
        /// Tokens and cost of the turn.
        usage: Usage,
        /// Seconds from send to end.
        duration: f64,
        /// One payload per written file.
        changes: Vec<Change>,
        /// The chat's running total: the usage of all its answers, this one included.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat_usage: Option<Usage>,
        /// The provider that gave the answer: `local` or `remote`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        /// Why a `hybrid_auto` turn moved to the remote provider: `schema_fail`,
        /// `context_overflow`, `timeout` or `local_error`; absent without a fallback.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fallback_reason: Option<String>,
        /// The server cut the answer at its token limit (`finish_reason: "length"`);
        /// absent when it was not.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
        /// Budgets this turn brought to 80% or more of their limit (docs/PROTOCOL.md,
        /// "Extension: budgets"); absent when none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        budget_warnings: Vec<BudgetWarning>,
        /// USD spent today (local time, every project: `~/.bb7/usage.csv`), this turn
        /// included, for a front-end's "today $0.12" beside the chat's total; absent
        /// without a user state directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent_today: Option<f64>,
    },
    /// A dropped attempt of a `hybrid_auto` turn: the text streamed so far for this
    /// request is not the answer; a new attempt starts on `provider`.
    Attempt {
        /// `local` (a retry) or `remote` (the fallback).
        provider: String,
        /// Why the previous attempt was dropped (a `fallback_reason`).
        reason: String,
        /// For `validation_failed`: what the check said in one line (an exit status,
        /// the time limit, or that it did not run because the local edits change
        /// files the command runs, named). Never the command's output.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The dropped attempt's failure in words, when it ended with one (`local
        /// server not reachable at http://127.0.0.1:8080/v1: …`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The chat.
        chat_id: String,
    },
    /// The turn ended and its file edits could not be applied; nothing was written
    /// (final).
    DiffError {
        /// One line per failed call.
        errors: Vec<String>,
        /// Every call of the response with its outcome.
        tool_calls: Vec<CallReport>,
        /// Tokens and cost of the turn.
        usage: Usage,
        /// Seconds from send to end.
        duration: f64,
        /// The chat.
        chat_id: String,
    },
    /// The turn failed or was cancelled (code `cancelled`) (final).
    Error {
        /// For the user.
        message: String,
        /// The category.
        code: ErrorCode,
        /// The chat.
        chat_id: String,
    },
    /// A chat got a generated title (unsolicited, no `request_id`).
    TitleUpdated {
        /// The chat.
        chat_id: String,
        /// Its new name.
        title: String,
    },
}

/// What a response did to one file, in `done.changes` (docs/PROTOCOL.md, "typed change
/// payloads"). A client that does not know a `type` shows `description`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Change {
    /// An edit of a file the model had seen.
    Edit {
        /// Project-relative path.
        path: String,
        /// `Edit src/a.rs: 2 hunks, +5 −3`.
        description: String,
        /// The file id of the new output.
        file_id: String,
        /// Whether the file exists on disk.
        file_exists: bool,
        /// Lines of the version the model saw.
        existing_lines: usize,
        /// Lines of the output.
        content_lines: usize,
        /// From the version the model saw to the output.
        unified_diff: String,
        /// Lines of `unified_diff`.
        diff_lines: usize,
        /// Bytes of the version the model saw.
        #[serde(default)]
        existing_bytes: usize,
        /// Bytes of the output.
        #[serde(default)]
        content_bytes: usize,
        /// Each search/replace edit of the response on this file, in order: what it
        /// replaced, where and how it was found. Empty for a whole-file write.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        edits: Vec<EditDetail>,
    },
    /// A whole file the model had not seen.
    Write {
        /// Project-relative path.
        path: String,
        /// `Write 40 lines to src/new.rs (new file)`.
        description: String,
        /// The file id of the output.
        file_id: String,
        /// Whether a file of that path exists on disk (it would be replaced).
        file_exists: bool,
        /// Lines of the output.
        content_lines: usize,
        /// Bytes of the output.
        content_bytes: usize,
        /// Whether `preview` is shorter than the content.
        preview_truncated: bool,
        /// The first lines.
        preview: String,
    },
}

/// One search/replace edit of an `edit` change (docs/PROTOCOL.md, "typed change
/// payloads"): its old and new text (or, over [`EditDetail::TEXT_LIMIT`] bytes, their
/// sha256), and where and how its old text was found in the version the model saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditDetail {
    /// First line (1-based) of the matched text in the version the model saw; absent
    /// when it cannot be told (the text was found only after an earlier edit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<usize>,
    /// Last line of the matched text (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
    /// `exact` (the old text as it is in the file, line endings aside) or `tolerant`.
    pub matched: String,
    /// For a tolerant match, the first tolerance that finds it: `trailing_whitespace`,
    /// `indentation`, `whitespace` (inner runs and typographic characters), or
    /// `other` (blank lines at the ends, escapes, a cut first or last line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<String>,
    /// Whether the edit replaced every occurrence (`replace_all`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace_all: bool,
    /// The model's old text, when at most `TEXT_LIMIT` bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    /// The model's new text, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_text: Option<String>,
    /// Bytes of the old text.
    pub old_bytes: usize,
    /// Bytes of the new text.
    pub new_bytes: usize,
    /// Hex sha256 of the old text, when the text itself is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_sha256: Option<String>,
    /// Hex sha256 of the new text, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_sha256: Option<String>,
}

impl EditDetail {
    /// The largest old or new text carried as it is (4 KiB); a longer one is given by
    /// its size and sha256.
    pub const TEXT_LIMIT: usize = 4096;

    /// One line for the user: `lines 3-5, exact, 3 lines → 2 lines` or
    /// `line 7, tolerant (indentation), 1 line → 1 line`.
    pub fn summary(&self) -> String {
        let at = match (self.start_line, self.end_line) {
            (Some(s), Some(e)) if s == e => format!("line {s}, "),
            (Some(s), Some(e)) => format!("lines {s}-{e}, "),
            _ => String::new(),
        };
        let how = match &self.tolerance {
            Some(t) => format!("{} ({t})", self.matched),
            None => self.matched.clone(),
        };
        let count = |t: &Option<String>, bytes: usize| match t {
            Some(t) => match crate::text::model_lines(t).len() {
                1 => "1 line".to_owned(),
                n => format!("{n} lines"),
            },
            None => format!("{bytes} bytes"),
        };
        format!(
            "{at}{how}, {} \u{2192} {}",
            count(&self.old_text, self.old_bytes),
            count(&self.new_text, self.new_bytes)
        )
    }
}

impl Change {
    /// The one line for the user (`Edit src/a.rs: 2 hunks, +5 −3`).
    pub fn description(&self) -> &str {
        match self {
            Change::Edit { description, .. } | Change::Write { description, .. } => description,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line reads the messages the server writes with these same types, so
    /// each must read back as it was written.
    #[test]
    fn stream_messages_read_back_as_written() {
        let done = TurnMessage::Done {
            chat_id: "c1".into(),
            output_files: vec!["a.rs".into()],
            usage: Usage {
                total_tokens: 7,
                cost: 0.5,
                ..Usage::default()
            },
            duration: 1.5,
            changes: vec![Change::Write {
                path: "a.rs".into(),
                description: "Write 1 line to a.rs (new file)".into(),
                file_id: "00000001".into(),
                file_exists: false,
                content_lines: 1,
                content_bytes: 2,
                preview_truncated: false,
                preview: "x\n".into(),
            }],
            chat_usage: None,
            provider: None,
            fallback_reason: None,
            truncated: false,
            budget_warnings: Vec::new(),
            spent_today: None,
        };
        let error = TurnMessage::Error {
            message: "Response aborted by user.".into(),
            code: ErrorCode::Cancelled,
            chat_id: "c1".into(),
        };
        for msg in [done, error] {
            let line = serde_json::to_string(&msg).unwrap();
            let back: TurnMessage = serde_json::from_str(&line).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), line);
        }
        let Ok(TurnMessage::Done { changes, .. }) = serde_json::from_str::<TurnMessage>(
            r#"{"type":"done","chat_id":"c","output_files":[],"usage":{},"duration":0,"changes":[{"type":"write","path":"p","description":"d","file_id":"1","file_exists":false,"content_lines":0,"content_bytes":0,"preview_truncated":false,"preview":""}]}"#,
        ) else {
            panic!("a done message did not read");
        };
        assert_eq!(changes[0].description(), "d");
    }
}

/// Another bb7 process acted on this process's chat through its holder socket
/// (unsolicited, no `request_id`; docs/PROTOCOL.md, "One chat, many front-ends"): a
/// client reloads what the action changed, as after its own request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "peer_change")]
pub struct PeerChange {
    /// The chat it changed (the one this process holds).
    pub chat_id: String,
    /// The action's wire name (`context_add`, `apply_file`, `send`, …).
    pub action: String,
    /// `done` once the action finished (a `send` when its turn ended), `started` when
    /// a peer's `send` began streaming.
    pub status: String,
    /// The other process's PID, when the socket tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// For a `send`: the id (`peer:…`) that the turn's messages carry on this stream,
    /// copied from the guest's, and that `cancel` takes as `target_request_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_request_id: Option<String>,
}

/// The process holding the chat shown here stopped serving it (unsolicited, no
/// `request_id`; docs/PROTOCOL.md, "One chat, many front-ends"): sent by the holder to
/// its watchers when it switches to another chat, and by a viewing process (or the
/// command line's guest) to its client when the holder's connection closes. The chat
/// no longer moves here: a client says so and may select it again (its lock is free,
/// or another process holds it now).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "holder_left")]
pub struct HolderLeft {
    /// The chat that was followed.
    pub chat_id: String,
    /// `switched`: the holder made another chat active (or none) and let this one go;
    /// `quit`: its connection closed (it exited, or died).
    pub reason: String,
    /// The holder's PID, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}
