//! One streaming model call of a `send`, run in the background. It forwards `chunk`
//! and `thinking` lines as deltas arrive, assembles tool calls, and hands its outcome
//! to the server loop, which alone changes chat state (invariant 8 in docs/ARCHITECTURE.md).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::edit::blocks::{BlockStream, Piece};
use crate::llm::request::{ChatMessage, ChatRequest, FunctionCall, Role, ToolCallRequest};
use crate::llm::sse::CLOSED_MID_ANSWER;
use crate::llm::{ApiError, Provider, StreamEvent, Usage};
use crate::protocol::events::TurnMessage;
use crate::protocol::outbox::Outbox;
use crate::tools::ToolCall;
use crate::tools::retrieval::{ToolsMode, is_retrieval};
use crate::turn::liveness::{BLOCKS_NOTICE, Received, note_every, waiting_note};
use crate::turn::retrieval::retrieval_step;
pub use crate::turn::spec::{
    ClientAnswer, EditChannel, Interactions, ToolStep, TurnOutcome, TurnSpec,
};

/// The tool result of a file call in a round before the last: its changes are
/// collected and, when the response ends, proposed to the user, who reviews them;
/// nothing reaches the user's files before they apply them (docs/PROTOCOL.md).
const STAGED_FOR_REVIEW: &str = "Recorded: your file changes are staged for the user's review when your response is complete; the user's files change only when the user applies them.";

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
    let mut counted = crate::turn::call_limits::CallCount::default();
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
                    outbox.emit(
                        &waiting_note(spec.local_server, &spec.chat.id, got, elapsed.as_secs()),
                        Some(&rid),
                    );
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
                // A server on the user's side that refuses the connection is down, not
                // busy: waiting out the backoff would only delay the fallback or the
                // error (docs/PROTOCOL.md, "Hybrid routing").
                let local_down = matches!(e, ApiError::Network(_))
                    && spec.route.role == crate::llm::providers::ProviderRole::Local;
                if e.retryable() && attempt < spec.max_retries && !local_down {
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
                        let new_call = !calls.contains_key(&index);
                        if let Err(why) = counted.add(new_call, arguments.len()) {
                            // A flood is not read on, nor any of it staged.
                            tracing::warn!(request_id = %spec.request_id, %why, "model answer over a limit");
                            calls.clear();
                            error = Some(ApiError::OverLimit(why));
                            break 'attempts;
                        }
                        if new_call {
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
    let mut finish_reason = None;
    // A local attempt of a hybrid turn has a deadline: cancelling only this attempt's
    // token stops it like a cancel, and the outcome then says it timed out.
    let user_cancel = cancel;
    let cancel = user_cancel.child_token();
    let deadline = spec.route.attempt_deadline();
    // Only the `local` provider's prompt is checked for a silent cut (local servers fit
    // a prompt to their context without a word): counting a big prompt (and loading
    // the tokenizer) takes a while, so it runs beside the model's answer.
    let local = spec.route.role == crate::llm::providers::ProviderRole::Local;
    let prompt_estimate = local.then(|| {
        let body = spec.body.clone();
        tokio::task::spawn_blocking(move || crate::turn::route::estimate(&body))
    });
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
                STAGED_FOR_REVIEW.to_owned()
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
    // A failed or cancelled turn is not checked: it does not wait for the count.
    let estimated = match prompt_estimate {
        Some(counting) if usage.is_some() && error.is_none() && !cancelled => counting.await.ok(),
        _ => None,
    };
    let prompt_cut = usage
        .as_ref()
        .filter(|u| error.is_none() && !cancelled && u.prompt_tokens > 0)
        .zip(estimated)
        .map(|(u, estimated)| (u.prompt_tokens, estimated))
        .filter(|(reported, estimated)| crate::turn::route::prompt_was_cut(*estimated, *reported));
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
        finish_reason,
        prompt_cut,
        tools_exhausted,
    }
}

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
