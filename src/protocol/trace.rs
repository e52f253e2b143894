//! Where trace events go (docs/PROTOCOL.md, "Extension: the event trace"): appended
//! to the chat's `events.jsonl` (`chat::events`), and, while a client follows the
//! trace (`events_get` with `follow: true`), written on stdout as `event` messages
//! without `request_id`. A client that never asks gets none: the reference plugin
//! hands a message it does not wait for to its oldest waiting request.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::events::EventMessage;
use super::outbox::Outbox;
use crate::chat::events::{EventData, EventKind, EventLog};

/// The process's trace: the appender and whether a client follows the stream.
#[derive(Debug, Clone, Default)]
pub struct Tracer {
    log: EventLog,
    follow: Arc<AtomicBool>,
}

impl Tracer {
    /// Starts or stops sending events on stdout.
    pub fn set_follow(&self, on: bool) {
        self.follow.store(on, Ordering::Relaxed);
    }

    /// The trace of job `job_id` in chat `chat_id`, whose trace file is `file`, in the
    /// state directory `root`; events that are followed go to `outbox`.
    pub fn job(
        &self,
        outbox: &Outbox,
        file: PathBuf,
        root: PathBuf,
        chat_id: &str,
        job_id: &str,
    ) -> JobTrace {
        JobTrace {
            to: Some(Arc::new(Target {
                tracer: self.clone(),
                outbox: outbox.clone(),
                file,
                root,
                chat_id: chat_id.to_owned(),
            })),
            job_id: job_id.to_owned(),
        }
    }
}

struct Target {
    tracer: Tracer,
    outbox: Outbox,
    file: PathBuf,
    root: PathBuf,
    chat_id: String,
}

impl JobTrace {
    /// Records `tool.call.requested`; `data` from [`tool_data`].
    pub fn tool_requested(&self, data: &EventData) {
        self.record(EventKind::ToolCallRequested, data.clone());
    }

    /// Records `tool.call.completed` with its `status` (`completed`, `denied`) and
    /// what the model was given: `result`'s size in bytes, its lines when `lines` (a
    /// read's result), and `is_error` (an error rather than a result or a refusal).
    /// Only sizes are recorded, never the text.
    pub fn tool_completed(
        &self,
        data: &EventData,
        status: &str,
        result: &str,
        lines: bool,
        is_error: bool,
    ) {
        let data = EventData {
            status: Some(status.to_owned()),
            result_bytes: Some(result.len() as u64),
            result_lines: lines.then(|| result_lines(result)),
            is_error: Some(is_error),
            ..data.clone()
        };
        self.record(EventKind::ToolCallCompleted, data);
    }

    /// Records `clarification.requested` (`answer` `None`, `size` the question's) or
    /// `clarification.received` (`answer`: whether the user answered rather than
    /// skipped, `size` the answer's) of the question `question_id`.
    pub fn clarification(&self, question_id: &str, answer: Option<bool>, size: usize) {
        let kind = match answer {
            None => EventKind::ClarificationRequested,
            Some(_) => EventKind::ClarificationReceived,
        };
        let data = EventData {
            reason: Some(question_id.to_owned()),
            status: answer.map(|a| if a { "answered" } else { "skipped" }.to_owned()),
            bytes: Some(size as u64),
            ..EventData::default()
        };
        self.record(kind, data);
    }
}

/// The payload of a retrieval tool step: the tool and the path it reads or lists
/// (never a search's query text, only its length).
pub fn tool_data(name: &str, args: &serde_json::Value) -> EventData {
    use crate::tools::retrieval::{Read, RetrievalCall};
    let mut data = EventData {
        tool: Some(name.to_owned()),
        ..EventData::default()
    };
    match RetrievalCall::parse(name, args) {
        Some(RetrievalCall::Read(Read::File(a))) => data.path = Some(a.target().to_owned()),
        Some(RetrievalCall::Read(Read::List(a))) => data.path = a.prefix,
        Some(RetrievalCall::Read(Read::Search(a))) => {
            data.bytes = a.query.map(|q| q.len() as u64);
        }
        Some(RetrievalCall::Clarify(_)) | None => {}
    }
    data
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("file", &self.file)
            .field("chat_id", &self.chat_id)
            .finish_non_exhaustive()
    }
}

/// The trace of one job: a turn, an apply, a rollback. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct JobTrace {
    to: Option<Arc<Target>>,
    /// The job's id (`chat::events::new_job_id`), empty for [`JobTrace::none`].
    pub job_id: String,
}

impl JobTrace {
    /// A trace that records nothing (no chat to record in).
    pub fn none() -> JobTrace {
        JobTrace::default()
    }

    /// Records an event of this job: appended to the chat's trace and, when
    /// followed, sent. A trace that cannot be written is skipped, never an error.
    pub fn record(&self, kind: EventKind, data: EventData) {
        let Some(t) = &self.to else {
            return;
        };
        let Some(event) = t
            .tracer
            .log
            .append(&t.file, &t.root, &self.job_id, kind, data)
        else {
            tracing::debug!(kind = ?kind, "trace event not recorded");
            return;
        };
        if t.tracer.follow.load(Ordering::Relaxed) {
            let msg = EventMessage {
                chat_id: t.chat_id.clone(),
                event,
            };
            t.outbox.emit(&msg, None);
        }
    }
}

/// The lines a retrieval result gives the model, not those of its one-line JSON
/// envelope: a read's `content` lines, a search's snippet lines, a listing's files
/// (the result shapes of `tools::reads`). A result of another shape counts its own
/// lines.
fn result_lines(result: &str) -> u64 {
    #[derive(serde::Deserialize)]
    struct Snippet {
        #[serde(default)]
        snippet: String,
    }
    #[derive(serde::Deserialize)]
    struct Shape {
        content: Option<String>,
        files: Option<Vec<serde::de::IgnoredAny>>,
        results: Option<Vec<Snippet>>,
    }
    let count = |t: &str| crate::text::line_count(t) as u64;
    match serde_json::from_str::<Shape>(result) {
        Ok(Shape {
            content: Some(c), ..
        }) => count(&c),
        Ok(Shape {
            results: Some(r), ..
        }) => r.iter().map(|s| count(&s.snippet)).sum(),
        Ok(Shape { files: Some(f), .. }) => f.len() as u64,
        _ => count(result),
    }
}
