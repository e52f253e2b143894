//! The eval's files: a task (`eval/tasks/*.json`: prompt, initial files, how the user
//! reviews, what must hold afterwards) and a trace (`DIR/<mode>/<task>.json`: the model
//! exchanges of one run, recorded or written by hand).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One eval task.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Unique name; the trace file is `<id>.json`.
    pub id: String,
    /// The main language of the files (for the listing only).
    #[serde(default)]
    pub language: String,
    /// Labels the report counts tasks and successes by (`recoverable`, `must_refuse`,
    /// `blocks`, `retry` …): free words, none required.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The user's message.
    pub prompt: String,
    /// Initial project files: path to content.
    pub files: BTreeMap<String, String>,
    /// Files added to the chat's context; absent adds every file.
    #[serde(default)]
    pub context: Option<Vec<String>>,
    /// The chat's retrieval tools (`off`, `ask`, `auto`); `clarify_user` needs one.
    #[serde(default)]
    pub tools: Option<String>,
    /// Config keys for this task on top of the run's (e.g. a short
    /// `hybrid_remote_on_timeout_ms`).
    #[serde(default)]
    pub config: serde_json::Map<String, Value>,
    /// Files the user changes on disk after the answer and before reviewing it.
    #[serde(default)]
    pub user_edits: BTreeMap<String, String>,
    /// What the user answers a clarifying question with.
    #[serde(default)]
    pub clarify_answer: Option<String>,
    /// How the user reviews the proposed hunks.
    #[serde(default)]
    pub review: Review,
    /// What must hold after the review.
    pub expect: Expect,
}

/// How the user reviews: every hunk, or a decision per hunk in order, per file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Review {
    /// Accept every hunk of every file.
    #[default]
    AcceptAll,
    /// Per file, `accept` or `reject` for each hunk in order; hunks past the list and
    /// files not listed are rejected.
    Hunks(BTreeMap<String, Vec<Decision>>),
}

/// A decision on one hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Write it to the file.
    Accept,
    /// Drop it.
    Reject,
}

/// The checks of a task. A task succeeds when all of them hold.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Files and their exact content on disk after the review.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// A command (argv) that must exit 0 in the project directory after the review.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// The review must meet a conflict with the user's edits.
    #[serde(default)]
    pub conflict: bool,
    /// The model must ask a clarifying question.
    #[serde(default)]
    pub clarification: bool,
    /// bb7 must refuse the answer's edits: the turn ends with `diff_error` and every
    /// file of the task is byte for byte as it was. A turn that ends `done` fails the
    /// task, the more so when its edits land.
    #[serde(default)]
    pub refusal: bool,
}

/// The model exchanges of one task in one mode.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Trace {
    /// The task's id.
    pub task: String,
    /// `local`, `remote` or `hybrid_auto`.
    pub mode: String,
    /// How the trace was made: `hand-written` (eval/make_traces.py) or `recorded`
    /// (`bb7 eval --record`); absent in traces from before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// When the trace was recorded, or written by hand (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The servers a recorded trace talked to, by provider (`local: http://…`), their
    /// URLs without user info or query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// In the order they happened.
    pub exchanges: Vec<Exchange>,
}

/// One model request and its answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Exchange {
    /// `local` or `remote`: which endpoint answered.
    pub provider: String,
    /// The model that answered (the request's `model` when recorded). A replay
    /// refuses a trace with an exchange that names none, or names another model than
    /// the one the replay configures for its provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The request body as sent (headers, and with them credentials, are not kept).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub request: Value,
    /// HTTP status of the answer.
    #[serde(default = "ok_status")]
    pub status: u16,
    /// The answer's body as received: SSE text for a stream, JSON for an error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub response: String,
    /// A hand-written answer, turned into SSE when `response` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<ScriptedReply>,
    /// Milliseconds from request to the end of the answer when recorded; a replay
    /// reports this as the model's latency.
    #[serde(default)]
    pub latency_ms: u64,
    /// A replay waits this long before answering (a slow model, for timeouts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stall_ms: u64,
    /// Whether the request must carry `tools` (else it asks for SEARCH/REPLACE
    /// blocks), for a hand-written trace; a recorded one says it in `request`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_tools: Option<bool>,
    /// On replay: the request body bb7 actually sent (never stored).
    #[serde(skip)]
    pub sent: Value,
    /// When the request arrived, as a count across both endpoints (never stored).
    #[serde(skip)]
    pub order: u64,
    /// On replay: the trace had no answer left for this request (never stored).
    #[serde(skip)]
    pub unscripted: bool,
    /// Milliseconds the endpoint took to answer, its wait included (never stored).
    #[serde(skip)]
    pub answer_ms: u64,
    /// When the request's first byte reached the endpoint (never stored).
    #[serde(skip)]
    pub first_byte: Option<std::time::Instant>,
    /// When the endpoint wrote the answer's last byte; `None` when bb7 hung up before
    /// (never stored).
    #[serde(skip)]
    pub last_byte: Option<std::time::Instant>,
}

fn ok_status() -> u16 {
    200
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A hand-written streamed answer.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedReply {
    /// The answer's text.
    #[serde(default)]
    pub text: String,
    /// Tool calls: name and arguments (an object, or a string sent as it is).
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Cost in USD.
    #[serde(default)]
    pub cost: f64,
}

/// A hand-written tool call.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// Tool name.
    pub name: String,
    /// Arguments: an object is sent as its JSON text, a string as it is.
    pub arguments: Value,
}

/// The chunk shapes of an OpenAI-compatible stream, for rendering a scripted reply.
#[derive(Serialize)]
struct Chunk<'a> {
    choices: Vec<Choice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<ChunkUsage>,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    delta: Delta<'a>,
    finish_reason: Option<&'a str>,
}

#[derive(Serialize, Default)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<DeltaCall>,
}

#[derive(Serialize)]
struct DeltaCall {
    index: usize,
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: DeltaFunction,
}

#[derive(Serialize)]
struct DeltaFunction {
    name: String,
    arguments: String,
}

#[derive(Serialize)]
struct ChunkUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    cost: f64,
}

impl ScriptedReply {
    /// The reply as an SSE body: a text chunk, one chunk per tool call, the finish
    /// reason, usage, `[DONE]`.
    pub fn to_sse(&self) -> String {
        let mut chunks = Vec::new();
        let choice = |delta, finish| Chunk {
            choices: vec![Choice {
                index: 0,
                delta,
                finish_reason: finish,
            }],
            usage: None,
        };
        if !self.text.is_empty() {
            chunks.push(choice(
                Delta {
                    content: Some(&self.text),
                    ..Delta::default()
                },
                None,
            ));
        }
        for (index, call) in self.tool_calls.iter().enumerate() {
            let arguments = match &call.arguments {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let delta = Delta {
                tool_calls: vec![DeltaCall {
                    index,
                    id: format!("call_{index}"),
                    kind: "function",
                    function: DeltaFunction {
                        name: call.name.clone(),
                        arguments,
                    },
                }],
                ..Delta::default()
            };
            chunks.push(choice(delta, None));
        }
        let finish = if self.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        chunks.push(choice(Delta::default(), Some(finish)));
        chunks.push(Chunk {
            choices: Vec::new(),
            usage: Some(ChunkUsage {
                prompt_tokens: self.prompt_tokens,
                completion_tokens: self.completion_tokens,
                total_tokens: self.prompt_tokens + self.completion_tokens,
                cost: self.cost,
            }),
        });
        let mut out = String::new();
        for c in chunks {
            out.push_str("data: ");
            out.push_str(&serde_json::to_string(&c).unwrap_or_default());
            out.push_str("\n\n");
        }
        out.push_str("data: [DONE]\n\n");
        out
    }
}

impl Exchange {
    /// The body a replay answers with.
    pub fn body(&self) -> String {
        match (&self.reply, self.response.is_empty()) {
            (Some(r), true) => r.to_sse(),
            _ => self.response.clone(),
        }
    }
}

/// Reads every `*.json` task under `dir`, sorted by id. Errors: a file that is not a
/// task, named with its path.
pub fn load_tasks(dir: &Path) -> Result<Vec<Task>, String> {
    let mut tasks = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let task: Task =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        tasks.push(task);
    }
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(tasks)
}

/// The trace of `task` in `mode` under `dir` (`DIR/<mode>/<task>.json`, else one for
/// every mode in `DIR/<task>.json`), if there is one. Errors: a file that exists and
/// is not a trace.
pub fn load_trace(dir: &Path, mode: &str, task: &str) -> Result<Option<Trace>, String> {
    let name = format!("{task}.json");
    let per_mode = dir.join(mode).join(&name);
    let path = if per_mode.exists() {
        per_mode
    } else {
        dir.join(&name)
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}
