//! One streaming model call of a `send`, run in the background. It forwards `chunk`
//! and `thinking` lines as deltas arrive, assembles tool calls, and hands its outcome
//! to the server loop, which alone changes chat state (DESIGN.md invariant 8).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Outbox;
use crate::edit::ToolCall;
use crate::llm::{ApiError, Provider, StreamEvent, Usage};

/// Which chat a turn belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatKey {
    /// In the global store.
    pub global: bool,
    /// Chat id.
    pub id: String,
}

/// Everything a turn needs to run.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    /// The `send`'s request id, on every message of the stream.
    pub request_id: String,
    /// The chat.
    pub chat: ChatKey,
    /// The chat-completions request body.
    pub body: Value,
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
    /// Tool calls in index order.
    pub calls: Vec<ToolCall>,
    /// Usage, when the stream reported it.
    pub usage: Option<Usage>,
    /// Why it failed, if it did.
    pub error: Option<ApiError>,
    /// Stopped by `cancel`.
    pub cancelled: bool,
    /// Seconds from start to end.
    pub duration: f64,
}

#[derive(Default)]
struct CallParts {
    id: String,
    name: String,
    arguments: String,
}

/// Runs the turn to its end: `[DONE]`, an error, or cancellation (which is noticed
/// at once, also while waiting for data or a retry).
pub async fn run(
    provider: Arc<dyn Provider>,
    spec: TurnSpec,
    outbox: Outbox,
    cancel: CancellationToken,
) -> TurnOutcome {
    let started = Instant::now();
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls: BTreeMap<usize, CallParts> = BTreeMap::new();
    let mut usage = None;
    let mut error = None;
    let mut cancelled = false;
    let chat_id = spec.chat.id.clone();
    let rid = spec.request_id.clone();
    let send = |kind: &str, content: &str| {
        outbox.send(
            json!({"type": kind, "content": content, "chat_id": chat_id}),
            Some(&rid),
        );
    };

    tracing::info!(request_id = %spec.request_id, chat = %spec.chat.id, model = %spec.model, "turn started");
    let mut attempt = 0;
    'attempts: loop {
        let start = tokio::select! {
            _ = cancel.cancelled() => { cancelled = true; break 'attempts; }
            r = provider.stream_chat(spec.body.clone()) => r,
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
                        if spec.visible {
                            send("chunk", &t);
                        }
                        text.push_str(&t);
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
    tracing::info!(
        request_id = %spec.request_id,
        millis = started.elapsed().as_millis() as u64,
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
        duration: started.elapsed().as_secs_f64(),
    }
}
