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
use crate::llm::{ApiError, Provider, StreamEvent, Usage};
use crate::protocol::events::TurnMessage;
use crate::protocol::outbox::Outbox;
use crate::protocol::trace::{JobTrace, tool_data};
use crate::tools::ToolCall;
use crate::tools::retrieval::{Limits, ReadError, RetrievalCall, ToolsMode, is_retrieval};
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
    /// Fail when no stream data arrives for this long.
    pub stall_timeout: Duration,
    /// Retries of 429/5xx/connection failures before any content.
    pub max_retries: u32,
    /// First backoff delay; doubled per retry unless `Retry-After` says otherwise.
    pub backoff: Duration,
    /// Forward deltas to the client (false for a hidden repair round).
    pub visible: bool,
    /// Retrieval tools mode of the chat.
    pub tools: ToolsMode,
    /// The retrieval limits (calls per turn, result sizes).
    pub limits: Limits,
    /// Project root, for the retrieval tools.
    pub root: PathBuf,
    /// Where approvals and clarifications wait for the client's answer.
    pub interactions: Interactions,
    /// How the model sends its file edits.
    pub edits: EditChannel,
    /// Which provider this attempt runs on and what happened before it.
    pub route: Route,
    /// The turn's event trace (tool and clarification steps are recorded here).
    pub trace: JobTrace,
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
    /// The turn made retrieval calls and spent its whole tool budget.
    pub tools_exhausted: bool,
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
    'attempts: loop {
        let start = tokio::select! {
            _ = cancel.cancelled() => { cancelled = true; break 'attempts; }
            r = provider.stream_chat(body) => r,
        };
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
        let mut received = false;
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => { cancelled = true; break 'attempts; }
                n = tokio::time::timeout(spec.stall_timeout, stream.next()) => n,
            };
            let item = match next {
                Err(_) => {
                    error = Some(ApiError::Stalled(spec.stall_timeout.as_secs()));
                    break 'attempts;
                }
                Ok(None) => {
                    error = Some(ApiError::Dropped(
                        "the stream ended before the response was complete".into(),
                    ));
                    break 'attempts;
                }
                Ok(Some(item)) => item,
            };
            let events = match item {
                Ok(ev) => ev,
                Err(e) => {
                    // A failure before anything arrived may be retried like an HTTP error.
                    if !received && e.retryable() && attempt < spec.max_retries {
                        attempt += 1;
                        continue 'attempts;
                    }
                    error = Some(e);
                    break 'attempts;
                }
            };
            for ev in events {
                match ev {
                    StreamEvent::Text(t) => {
                        received = true;
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
                        received = true;
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
                        received = true;
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
                    StreamEvent::Finish(_) => {}
                    StreamEvent::Done => break 'attempts,
                }
            }
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
    }
}

/// Runs the turn: model calls in rounds while the model uses retrieval tools (at most
/// `limits.calls_per_turn` of them), then hands the file tool calls of every round back in
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
    let mut budget = spec.route.tool_budget(spec.limits.calls_per_turn);
    let mut blocks = Vec::new();
    let mut read_blocks = spec.edits == EditChannel::Blocks;
    let mut fell_back_to_blocks = false;
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
            round = stream_round(&provider, body, &spec, &outbox, &cancel, true).await;
        }
        blocks.append(&mut round.blocks);
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
    let tools_exhausted = !steps.is_empty() && budget == 0;
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
        tools_exhausted,
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
    let traced = tool_data(&call.name, &args);
    let mut record = |status: &str, summary: &str| {
        spec.trace.tool_step(&traced, Some(status));
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
            "The limit of {} tool calls for this response is reached. Answer with what you have.",
            spec.route.tool_budget(spec.limits.calls_per_turn)
        ));
    }
    *budget -= 1;
    let n = spec.route.tool_budget(spec.limits.calls_per_turn) - *budget;
    let read = match parsed {
        RetrievalCall::Read(read) => read,
        RetrievalCall::Clarify(c) => {
            let question = c.question.unwrap_or_default();
            outbox.emit(&step("requested", &question), Some(&spec.request_id));
            let id = format!("{}-q{n}", spec.request_id);
            spec.trace.clarification(&id, None, question.len());
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
            let answered = answer != "no_user_answer";
            spec.trace.clarification(&id, Some(answered), answer.len());
            record("completed", &format!("Asked: {question}"));
            return Some(answer);
        }
    };
    let payload = read.approval_payload();
    let description = payload.description().to_owned();
    outbox.emit(&step("requested", &description), Some(&spec.request_id));
    spec.trace.tool_step(&traced, None);
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
    let limits = spec.limits;
    let reading = tokio::task::spawn_blocking(move || read.run(&root, &limits, &flag));
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
