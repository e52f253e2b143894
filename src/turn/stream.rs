//! One streaming model call of a `send`, run in the background. It forwards `chunk`
//! and `thinking` lines as deltas arrive, assembles tool calls, and hands its outcome
//! to the server loop, which alone changes chat state (invariant 8 in docs/ARCHITECTURE.md).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::chat::ChatKey;
use crate::edit::blocks::{BlockStream, Piece};
use crate::llm::request::{ChatMessage, ChatRequest, FunctionCall, Role, ToolCallRequest};
use crate::llm::sse::CLOSED_MID_ANSWER;
use crate::llm::{ApiError, Provider, StreamEvent, Usage};
use crate::protocol::events::TurnMessage;
use crate::protocol::outbox::Outbox;
use crate::tools::ToolCall;
use crate::tools::retrieval::{MAX_TOOL_CALLS, ReadError, RetrievalCall, ToolsMode, is_retrieval};
use crate::turn::route::Route;

/// Everything a turn needs to run.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    /// The `send`'s request id, on every message of the stream.
    pub request_id: String,
    /// The chat.
    pub chat: ChatKey,
    /// The chat-completions request, shared: it holds the whole context, and a spec is
    /// cloned for every attempt and outcome.
    pub body: Arc<ChatRequest>,
    /// Model id (for the assistant message).
    pub model: String,
    /// Once the answer has begun, fail when no bytes (keep-alive pings included)
    /// arrive for this long (`stream_timeout_secs`).
    pub stall_timeout: Duration,
    /// Fail when no text, reasoning or tool call arrives this long after the request
    /// was sent, response headers and keep-alive pings notwithstanding
    /// (`first_token_timeout_secs`).
    pub first_token_timeout: Duration,
    /// The provider is a server on this machine (a loopback `base_url` or the `local`
    /// provider): the waiting note says "the local server".
    pub local_server: bool,
    /// Retries of 429/5xx/connection failures before any content.
    pub max_retries: u32,
    /// First backoff delay; doubled per retry unless `Retry-After` says otherwise.
    pub backoff: Duration,
    /// Forward deltas to the client (false for a hidden repair round).
    pub visible: bool,
    /// Retrieval tools mode of the chat.
    pub tools: ToolsMode,
    /// Project root, for the retrieval tools.
    pub root: PathBuf,
    /// Where approvals and clarifications wait for the client's answer.
    pub interactions: Interactions,
    /// How the model sends its file edits.
    pub edits: EditChannel,
    /// Which provider this attempt runs on and what happened before it.
    pub route: Route,
}

/// How a turn's file edits arrive (config `edit_format`).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum EditChannel {
    /// As `write_file` / `edit_file` tool calls.
    #[default]
    ToolCalls,
    /// As SEARCH/REPLACE blocks in the answer text (the request carries no tools).
    Blocks,
    /// As tool calls; when the server refuses a request that carries `tools`, the
    /// turn is sent once more without them, as blocks, with this system prompt.
    ToolCallsElseBlocks {
        /// The system prompt that teaches the blocks.
        blocks_system: String,
    },
}

/// Pending questions to the client (`tool_approval`, `clarification`) by id; the
/// server loop answers them from `tool_approve` and `clarify` requests.
pub type Interactions = Arc<Mutex<HashMap<String, oneshot::Sender<ClientAnswer>>>>;

/// The client's answer to a pending question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAnswer {
    /// `tool_approve`: whether the read may happen.
    Approved(bool),
    /// `clarify`: the user's text (`no_user_answer` or empty skips).
    Text(String),
}

/// What a turn produced.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The spec it ran with.
    pub spec: TurnSpec,
    /// All text deltas.
    pub text: String,
    /// All reasoning deltas.
    pub thinking: String,
    /// File tool calls (`write_file`, `edit_file`, unknown names) of every round, in order.
    pub calls: Vec<ToolCall>,
    /// Retrieval steps, in order.
    pub steps: Vec<ToolStep>,
    /// Model calls made (1 without retrieval tools).
    pub rounds: usize,
    /// Usage, when the stream reported it.
    pub usage: Option<Usage>,
    /// Why it failed, if it did.
    pub error: Option<ApiError>,
    /// Stopped by `cancel`.
    pub cancelled: bool,
    /// Seconds from start to end.
    pub duration: f64,
    /// The SEARCH/REPLACE blocks of the answer (complete or broken), in order; the
    /// text above holds only the prose around them.
    pub blocks: Vec<Piece>,
    /// The server refused `tools`, and the turn was sent again as blocks.
    pub fell_back_to_blocks: bool,
    /// The `finish_reason` of the last round, when the server sent one (`stop`,
    /// `tool_calls`, `length`, …).
    pub finish_reason: Option<String>,
}

/// One retrieval tool step of a turn, kept in the chat as a `tool_call` part.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    /// The tool.
    pub name: String,
    /// The model's arguments (`null` when they were not JSON).
    pub arguments: Value,
    /// `completed` or `denied`.
    pub status: String,
    /// One line for the user.
    pub summary: String,
}

#[derive(Default)]
struct CallParts {
    id: String,
    name: String,
    arguments: String,
}

/// One streamed model response.
struct Round {
    text: String,
    thinking: String,
    blocks: Vec<Piece>,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    error: Option<ApiError>,
    cancelled: bool,
    finish: Option<String>,
}

/// What one attempt's response has delivered so far, for the waiting note and for
/// the messages of a stall, a first-token timeout and a dropped connection.
#[derive(Debug, Default)]
struct Received {
    /// The response headers arrived (the server accepted the request).
    headers: bool,
    /// Network reads that completed no event: keep-alive comments, mostly.
    keepalive: u64,
    /// Characters of text and reasoning.
    chars: usize,
    /// Tool calls begun.
    calls: usize,
}

impl Received {
    fn content(&self) -> bool {
        self.chars > 0 || self.calls > 0
    }

    /// What came before the first token: "the server sent its response headers and 14
    /// keep-alive pings".
    fn before_content(&self) -> String {
        match (self.headers, self.keepalive) {
            (false, _) => "the server accepted the connection but sent no response headers".into(),
            (true, 0) => "the server sent its response headers, then nothing".into(),
            (true, n) => format!(
                "the server sent its response headers and {n} keep-alive ping{} (it was alive, likely still reading the prompt)",
                if n == 1 { "" } else { "s" }
            ),
        }
    }

    /// What of the answer had arrived: "1,204 characters of text and 1 tool call".
    fn kept(&self) -> String {
        let mut parts = Vec::new();
        if self.chars > 0 {
            parts.push(format!("{} characters of text", self.chars));
        }
        if self.calls > 0 {
            parts.push(format!(
                "{} tool call{}",
                self.calls,
                if self.calls == 1 { "" } else { "s" }
            ));
        }
        if parts.is_empty() {
            "nothing of the answer".into()
        } else {
            parts.join(" and ")
        }
    }
}

/// The `notice` of a turn whose server refused tool calls.
pub const BLOCKS_NOTICE: &str = "the server refused tool calls; this model's edits are asked for as SEARCH/REPLACE blocks for the next hour, then tools are tried again (`bb7 models --reset-tools` tries them at once)";

/// How often a turn waiting for its first token says so: a quarter of the limit,
/// between 1 and 10 seconds.
fn note_every(first_token: Duration) -> Duration {
    (first_token / 4).clamp(Duration::from_secs(1), Duration::from_secs(10))
}

/// The `waiting` note of a turn that has waited `secs` for its first token.
fn waiting_note(spec: &TurnSpec, got: &Received, secs: u64) -> TurnMessage {
    let server = if spec.local_server {
        "the local server"
    } else {
        "the model API"
    };
    let (received, message) = if !got.headers {
        ("nothing", format!("waiting for {server} to answer, {secs} s"))
    } else if got.keepalive > 0 {
        ("pings", format!("{server} is reading the prompt, {secs} s"))
    } else {
        ("headers", format!("{server} is reading the prompt, {secs} s"))
    };
    TurnMessage::Waiting {
        seconds: secs,
        received: received.to_owned(),
        message,
        chat_id: spec.chat.id.clone(),
    }
}

/// Streams one response to its end: `[DONE]`, an error, or cancellation (which is
/// noticed at once, also while waiting for data or a retry).
async fn stream_round(
    provider: &Arc<dyn Provider>,
    body: &ChatRequest,
    spec: &TurnSpec,
    outbox: &Outbox,
    cancel: &CancellationToken,
    read_blocks: bool,
) -> Round {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls: BTreeMap<usize, CallParts> = BTreeMap::new();
    let mut usage = None;
    let mut error = None;
    let mut cancelled = false;
    let chat_id = spec.chat.id.clone();
    let rid = spec.request_id.clone();
    let send = |kind: &str, content: &str| {
        let (content, chat_id) = (content.to_owned(), chat_id.clone());
        let msg = match kind {
            "thinking" => TurnMessage::Thinking { content, chat_id },
            _ => TurnMessage::Chunk { content, chat_id },
        };
        outbox.emit(&msg, Some(&rid));
    };
    let mut reader = read_blocks.then(BlockStream::new);
    let mut blocks = Vec::new();
    // Prose goes on as a chunk; a complete block is announced as the change it asks for.
    let mut take = |pieces: Vec<Piece>, text: &mut String| {
        for piece in pieces {
            match piece {
                Piece::Prose(p) => {
                    if spec.visible {
                        send("chunk", &p);
                    }
                    text.push_str(&p);
                }
                Piece::Block(b) => {
                    if spec.visible {
                        let msg = TurnMessage::ToolCall {
                            name: b.tool().to_owned(),
                            arguments: serde_json::to_value(b.args()).unwrap_or(Value::Null),
                            status: "proposed".to_owned(),
                            summary: b.summary(),
                            chat_id: chat_id.clone(),
                        };
                        outbox.emit(&msg, Some(&rid));
                    }
                    blocks.push(Piece::Block(b));
                }
                broken @ Piece::Broken { .. } => blocks.push(broken),
            }
        }
    };

    let mut attempt = 0;
    let mut got: Received;
    let mut finish = None;
    let every = note_every(spec.first_token_timeout);
    'attempts: loop {
        got = Received::default();
        let sent = Instant::now();
        let mut next_note = every;
        // Until the first token only `first_token_timeout` ends the wait (the
        // headers' included), with a `waiting` note now and then; keep-alive bytes
        // show the server alive but are not progress.
        let waited = |got: &Received, next_note: &mut Duration| -> Result<Duration, ApiError> {
            let elapsed = sent.elapsed();
            if elapsed >= spec.first_token_timeout {
                return Err(ApiError::NoFirstToken {
                    secs: spec.first_token_timeout.as_secs(),
                    received: got.before_content(),
                });
            }
            if elapsed >= *next_note {
                if spec.visible {
                    outbox.emit(&waiting_note(spec, got, elapsed.as_secs()), Some(&rid));
                }
                while *next_note <= elapsed {
                    *next_note += every;
                }
            }
            Ok((*next_note - elapsed).min(spec.first_token_timeout - elapsed))
        };
        let mut starting = provider.stream_chat(body);
        let start = loop {
            let wait = match waited(&got, &mut next_note) {
                Ok(w) => w,
                Err(e) => {
                    error = Some(e);
                    break 'attempts;
                }
            };
            tokio::select! {
                _ = cancel.cancelled() => { cancelled = true; break 'attempts; }
                r = &mut starting => break r,
                _ = tokio::time::sleep(wait) => {}
            }
        };
        drop(starting);
        let mut stream = match start {
            Ok(s) => s,
            Err(e) => {
                if e.retryable() && attempt < spec.max_retries {
                    let wait = match &e {
                        ApiError::Http {
                            retry_after: Some(s),
                            ..
                        } => Duration::from_secs(*s.min(&60)),
                        _ => spec.backoff * 2u32.pow(attempt),
                    };
                    attempt += 1;
                    tracing::info!(request_id = %spec.request_id, attempt, wait_ms = wait.as_millis() as u64, error = %e.user_message(), "retrying");
                    if spec.visible {
                        let notice = TurnMessage::Retry {
                            attempt,
                            delay_ms: wait.as_millis() as u64,
                            reason: e.short_reason(),
                            message: e.user_message(),
                            chat_id: chat_id.clone(),
                        };
                        outbox.emit(&notice, Some(&rid));
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => { cancelled = true; break 'attempts; }
                        _ = tokio::time::sleep(wait) => continue 'attempts,
                    }
                }
                error = Some(e);
                break;
            }
        };
        got.headers = true;
        loop {
            let wait = if got.content() {
                spec.stall_timeout
            } else {
                match waited(&got, &mut next_note) {
                    Ok(w) => w,
                    Err(e) => {
                        error = Some(e);
                        break 'attempts;
                    }
                }
            };
            let next = tokio::select! {
                _ = cancel.cancelled() => { cancelled = true; break 'attempts; }
                n = tokio::time::timeout(wait, stream.next()) => n,
            };
            let item = match next {
                Err(_) if !got.content() => continue,
                Err(_) => {
                    error = Some(ApiError::Stalled {
                        secs: spec.stall_timeout.as_secs(),
                        received: format!(
                            "after {}; not even a keep-alive ping came since",
                            got.kept()
                        ),
                    });
                    break 'attempts;
                }
                Ok(None) => {
                    error = Some(ApiError::Dropped(CLOSED_MID_ANSWER.to_owned()));
                    break 'attempts;
                }
                Ok(Some(item)) => item,
            };
            let events = match item {
                Ok(ev) => ev,
                Err(e) => {
                    // A failure before anything arrived may be retried like an HTTP error.
                    if !got.content() && e.retryable() && attempt < spec.max_retries {
                        attempt += 1;
                        continue 'attempts;
                    }
                    error = Some(e);
                    break 'attempts;
                }
            };
            if events.is_empty() {
                got.keepalive += 1;
            }
            for ev in events {
                match ev {
                    StreamEvent::Text(t) => {
                        got.chars += t.chars().count();
                        match reader.as_mut() {
                            Some(r) => take(r.push(&t), &mut text),
                            None => {
                                if spec.visible {
                                    send("chunk", &t);
                                }
                                text.push_str(&t);
                            }
                        }
                    }
                    StreamEvent::Reasoning(t) => {
                        got.chars += t.chars().count();
                        if spec.visible {
                            send("thinking", &t);
                        }
                        thinking.push_str(&t);
                    }
                    StreamEvent::ToolCall {
                        index,
                        id,
                        name,
                        arguments,
                    } => {
                        if !calls.contains_key(&index) {
                            got.calls += 1;
                        }
                        let c = calls.entry(index).or_default();
                        if let Some(id) = id {
                            c.id = id;
                        }
                        if let Some(name) = name {
                            c.name.push_str(&name);
                        }
                        c.arguments.push_str(&arguments);
                    }
                    StreamEvent::Usage(u) => usage = Some(u),
                    StreamEvent::Finish(reason) => finish = Some(reason),
                    StreamEvent::Done => break 'attempts,
                }
            }
        }
    }
    // A connection closed mid-answer says what of the answer is kept.
    if let Some(ApiError::Dropped(m)) = &mut error {
        if got.content() {
            m.push_str(&format!("; kept {}, saved in the chat", got.kept()));
        } else {
            m.push_str("; nothing of the answer had arrived");
        }
    }
    if let Some(r) = reader.as_mut() {
        take(r.finish(), &mut text);
    }
    Round {
        text,
        thinking,
        blocks,
        calls: calls
            .into_values()
            .map(|c| ToolCall {
                id: c.id,
                name: c.name,
                arguments: c.arguments,
            })
            .collect(),
        usage,
        error,
        cancelled,
        finish,
    }
}

/// Runs the turn: model calls in rounds while the model uses retrieval tools (at most
/// [`MAX_TOOL_CALLS`] of them), then hands the file tool calls of every round back in
/// one outcome, to be applied together.
pub async fn run(
    provider: Arc<dyn Provider>,
    spec: TurnSpec,
    outbox: Outbox,
    cancel: CancellationToken,
) -> TurnOutcome {
    let started = Instant::now();
    tracing::info!(request_id = %spec.request_id, chat = %spec.chat.id, model = %spec.model, "turn started");
    // The body holds the whole context: it is copied only when a retrieval round
    // has to extend it, so a plain turn holds it once.
    let mut extended = None;
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls = Vec::new();
    let mut steps = Vec::new();
    let mut usage: Option<Usage> = None;
    let mut error = None;
    let mut cancelled = false;
    let mut rounds = 0;
    let mut budget = MAX_TOOL_CALLS;
    let mut blocks = Vec::new();
    let mut read_blocks = spec.edits == EditChannel::Blocks;
    let mut fell_back_to_blocks = false;
    let mut finish_reason = None;
    // A local attempt of a hybrid turn has a deadline: cancelling only this attempt's
    // token stops it like a cancel, and the outcome then says it timed out.
    let user_cancel = cancel;
    let cancel = user_cancel.child_token();
    let deadline = spec.route.attempt_deadline();
    let timer = deadline.map(|limit| {
        let token = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            token.cancel();
        })
    });
    loop {
        rounds += 1;
        let body = extended.as_ref().unwrap_or(spec.body.as_ref());
        let mut round = stream_round(&provider, body, &spec, &outbox, &cancel, read_blocks).await;
        if let EditChannel::ToolCallsElseBlocks { blocks_system } = &spec.edits
            && rounds == 1
            && round.text.is_empty()
            && round.calls.is_empty()
            && round.error.as_ref().is_some_and(ApiError::refuses_tools)
        {
            tracing::info!(request_id = %spec.request_id, "the server refuses tools; sending the turn again with edits as blocks");
            let body = extended.get_or_insert_with(|| ChatRequest::clone(&spec.body));
            body.tools.clear();
            body.tool_choice = None;
            if let Some(system) = body.messages.first_mut().filter(|m| m.role == Role::System) {
                system.content.replace_text(blocks_system.as_str());
            }
            read_blocks = true;
            fell_back_to_blocks = true;
            if spec.visible {
                let notice = TurnMessage::Notice {
                    kind: "blocks".to_owned(),
                    message: BLOCKS_NOTICE.to_owned(),
                    chat_id: spec.chat.id.clone(),
                };
                outbox.emit(&notice, Some(&spec.request_id));
            }
            round = stream_round(&provider, body, &spec, &outbox, &cancel, true).await;
        }
        blocks.append(&mut round.blocks);
        finish_reason = round.finish.take().or(finish_reason);
        if !round.text.is_empty() && !text.is_empty() && !text.ends_with('\n') {
            text.push_str("\n\n");
        }
        text.push_str(&round.text);
        thinking.push_str(&round.thinking);
        if let Some(u) = &round.usage {
            usage.get_or_insert_with(Usage::default).add(u);
        }
        let retrieving =
            spec.tools != ToolsMode::Off && round.calls.iter().any(|c| is_retrieval(&c.name));
        calls.extend(
            round
                .calls
                .iter()
                .filter(|c| spec.tools == ToolsMode::Off || !is_retrieval(&c.name))
                .cloned(),
        );
        if round.error.is_some() || round.cancelled || !retrieving {
            error = round.error;
            cancelled = round.cancelled;
            break;
        }
        let mut results = Vec::new();
        for call in &round.calls {
            let result = if is_retrieval(&call.name) {
                match retrieval_step(call, &spec, &outbox, &cancel, &mut budget, &mut steps).await {
                    Some(r) => r,
                    None => {
                        cancelled = true;
                        break;
                    }
                }
            } else {
                "Recorded; your file changes are applied when your response is complete.".to_owned()
            };
            results.push(ChatMessage::tool_result(&call.id, result));
        }
        if cancelled {
            break;
        }
        let body = extended.get_or_insert_with(|| ChatRequest::clone(&spec.body));
        body.messages
            .push(assistant_message(&round.text, &round.calls));
        body.messages.extend(results);
    }
    if let Some(timer) = timer {
        timer.abort();
    }
    if cancelled
        && !user_cancel.is_cancelled()
        && let Some(limit) = deadline
    {
        cancelled = false;
        error = Some(ApiError::Deadline(limit.as_millis() as u64));
    }
    tracing::info!(
        request_id = %spec.request_id,
        provider = spec.route.role.as_str(),
        fallback = spec.route.fallback.map(|r| r.as_str()),
        millis = started.elapsed().as_millis() as u64,
        rounds,
        text_bytes = text.len(),
        tool_calls = calls.len(),
        cancelled,
        error = ?error.as_ref().map(ApiError::user_message),
        "turn ended"
    );
    TurnOutcome {
        spec,
        text,
        thinking,
        calls,
        steps,
        rounds,
        usage,
        error,
        cancelled,
        duration: started.elapsed().as_secs_f64(),
        blocks,
        fell_back_to_blocks,
        finish_reason,
    }
}

/// Asks the client and waits for its answer; `None` when the turn is cancelled.
async fn ask_client(
    spec: &TurnSpec,
    outbox: &Outbox,
    cancel: &CancellationToken,
    id: &str,
    msg: TurnMessage,
) -> Option<ClientAnswer> {
    let (tx, rx) = oneshot::channel();
    if let Ok(mut map) = spec.interactions.lock() {
        map.insert(id.to_owned(), tx);
    }
    outbox.emit(&msg, Some(&spec.request_id));
    let answer = tokio::select! {
        _ = cancel.cancelled() => None,
        a = rx => a.ok(),
    };
    if let Ok(mut map) = spec.interactions.lock() {
        map.remove(id);
    }
    answer
}

/// Runs one retrieval call: reports it, asks for approval in `ask` mode (or the
/// question of `clarify_user`), executes it and returns the result for the model.
/// `None` when the turn was cancelled meanwhile.
async fn retrieval_step(
    call: &ToolCall,
    spec: &TurnSpec,
    outbox: &Outbox,
    cancel: &CancellationToken,
    budget: &mut usize,
    steps: &mut Vec<ToolStep>,
) -> Option<String> {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let chat_id = &spec.chat.id;
    let step = |status: &str, summary: &str| TurnMessage::ToolCall {
        name: call.name.clone(),
        arguments: args.clone(),
        status: status.to_owned(),
        summary: summary.to_owned(),
        chat_id: chat_id.clone(),
    };
    let mut record = |status: &str, summary: &str| {
        outbox.emit(&step(status, summary), Some(&spec.request_id));
        steps.push(ToolStep {
            name: call.name.clone(),
            arguments: args.clone(),
            status: status.to_owned(),
            summary: summary.to_owned(),
        });
    };
    let Some(parsed) = RetrievalCall::parse(&call.name, &args) else {
        record("denied", "invalid arguments");
        return Some("Error: the arguments are not a valid JSON object.".into());
    };
    if *budget == 0 {
        record("denied", "tool call limit reached");
        return Some(format!(
            "The limit of {MAX_TOOL_CALLS} tool calls for this response is reached. Answer with what you have."
        ));
    }
    *budget -= 1;
    let n = MAX_TOOL_CALLS - *budget;
    let read = match parsed {
        RetrievalCall::Read(read) => read,
        RetrievalCall::Clarify(c) => {
            let question = c.question.unwrap_or_default();
            outbox.emit(&step("requested", &question), Some(&spec.request_id));
            let id = format!("{}-q{n}", spec.request_id);
            let msg = TurnMessage::Clarification {
                question_id: id.clone(),
                question: question.clone(),
                chat_id: chat_id.clone(),
            };
            let answer = ask_client(spec, outbox, cancel, &id, msg).await?;
            let answer = match answer {
                ClientAnswer::Text(a) if !a.trim().is_empty() => a,
                _ => "no_user_answer".to_owned(),
            };
            record("completed", &format!("Asked: {question}"));
            return Some(answer);
        }
    };
    let payload = read.approval_payload();
    let description = payload.description().to_owned();
    outbox.emit(&step("requested", &description), Some(&spec.request_id));
    if spec.tools == ToolsMode::Ask {
        let id = format!("{}-a{n}", spec.request_id);
        let msg = TurnMessage::ToolApproval {
            approval_id: id.clone(),
            payload,
            chat_id: chat_id.clone(),
        };
        let approved = ask_client(spec, outbox, cancel, &id, msg).await?;
        if approved != ClientAnswer::Approved(true) {
            record("denied", &description);
            return Some(
                "The user declined this request. Do not ask for it again; continue without it."
                    .into(),
            );
        }
    }
    let root = spec.root.clone();
    // A read of the project may block (a slow mount, a file that turned into a pipe
    // after it was checked): it runs on a blocking thread, and neither a cancel nor
    // the turn waits for it longer than READ_TIMEOUT (invariant 15).
    // Whatever ends the wait (the read, a cancel, the time limit, the turn dropped)
    // also stops a walk of the project still going on the blocking thread.
    let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    let flag = stop.0.clone();
    let reading = tokio::task::spawn_blocking(move || read.run(&root, &flag));
    let result = tokio::select! {
        done = tokio::time::timeout(READ_TIMEOUT, reading) => match done {
            Ok(joined) => joined.unwrap_or_else(|e| Err(ReadError::Crashed(e.to_string()))),
            Err(_) => Err(ReadError::Crashed(format!(
                "the read did not finish within {} s",
                READ_TIMEOUT.as_secs()
            ))),
        },
        _ = cancel.cancelled() => return None,
    };
    match result {
        Ok(out) => {
            record("completed", &out.summary);
            Some(out.text)
        }
        Err(e) => {
            record("completed", &format!("Failed: {e}"));
            Some(format!("Error: {e}"))
        }
    }
}

/// Sets its flag when dropped: tells a blocking read that nobody waits for it.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How long a retrieval read of the project may take before the model is told it failed.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The assistant message that carries `text` and the tool `calls` of a response, sent
/// back to the model before the `tool` messages that answer the calls.
pub fn assistant_message(text: &str, calls: &[ToolCall]) -> ChatMessage {
    ChatMessage {
        tool_calls: calls
            .iter()
            .map(|c| ToolCallRequest {
                id: c.id.clone(),
                kind: "function",
                function: FunctionCall {
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                },
            })
            .collect(),
        ..ChatMessage::text(Role::Assistant, text)
    }
}
