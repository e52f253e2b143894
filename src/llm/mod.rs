//! Talking to models: a [`Provider`] trait and its OpenAI-compatible implementation
//! (OpenRouter, Ollama, llama.cpp, vLLM, LM Studio). Knows HTTP and SSE; knows
//! nothing about `.bb7/`.

pub mod anthropic;
pub mod models;
pub mod openai;
pub mod providers;
pub mod request;
pub mod sse;
pub mod url;

pub use request::{ChatMessage, ChatRequest, Role};

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::Serialize;
use serde_json::Value;

/// One decoded piece of a streamed chat completion.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A text delta (`delta.content`).
    Text(String),
    /// A reasoning delta (`delta.reasoning` or `delta.reasoning_content`).
    Reasoning(String),
    /// A fragment of a tool call; fragments with the same `index` concatenate.
    ToolCall {
        /// Position of the call in the response.
        index: usize,
        /// Call id, on the first fragment.
        id: Option<String>,
        /// Function name, on the first fragment.
        name: Option<String>,
        /// A piece of the JSON arguments string.
        arguments: String,
    },
    /// Token counts and cost, usually on the last chunk.
    Usage(Usage),
    /// `finish_reason` of the choice (`stop`, `tool_calls`, `length`, …).
    Finish(String),
    /// `data: [DONE]`: the stream is complete.
    Done,
}

/// Token usage of one response (OpenRouter's API reference, "Streaming response").
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens (reasoning included).
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's cache (`prompt_tokens_details.cached_tokens`).
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's cache, where it reports them
    /// (`prompt_tokens_details.cache_write_tokens`; Anthropic models).
    pub cache_write_tokens: u64,
    /// Prompt plus completion.
    pub total_tokens: u64,
    /// Cost in USD (OpenRouter only; 0 elsewhere).
    pub cost: f64,
}

impl Usage {
    /// One line for people: `4,813 tokens (4,100 cached), $0.0004` (the cached part
    /// only when the provider reported one).
    pub fn summary(&self) -> String {
        let mut s = format!("{} tokens", thousands(self.total_tokens));
        if self.cached_tokens > 0 {
            s.push_str(&format!(" ({} cached)", thousands(self.cached_tokens)));
        }
        s.push_str(&format!(", ${:.4}", self.cost));
        s
    }

    /// Adds another response's usage (a hidden repair round).
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.total_tokens += other.total_tokens;
        self.cost += other.cost;
    }
}

/// `4813` as `4,813`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// The server answered with an HTTP error before streaming.
    Http {
        /// HTTP status.
        status: u16,
        /// The error message from the body, or a description of a non-JSON body.
        message: String,
        /// `Retry-After` in seconds, when sent.
        retry_after: Option<u64>,
    },
    /// An `error` object arrived inside the stream (its `code` may be a string or a
    /// number).
    Stream {
        /// The error's code as text, if any.
        code: Option<String>,
        /// The error's message.
        message: String,
    },
    /// The connection ended before `data: [DONE]`.
    Dropped(String),
    /// No bytes for longer than the stall timeout (`stream_timeout_secs`) once the
    /// answer had begun.
    Stalled {
        /// The timeout in seconds.
        secs: u64,
        /// What had arrived before the silence, for the user ("after 1,204
        /// characters of text").
        received: String,
    },
    /// No text, reasoning or tool call within `first_token_timeout_secs` of sending
    /// the request (keep-alive bytes do not count: they say the server is alive, not
    /// that it answers).
    NoFirstToken {
        /// The limit in seconds.
        secs: u64,
        /// What did arrive ("the response headers and 14 keep-alive pings").
        received: String,
    },
    /// The attempt took longer than its deadline in milliseconds (a local attempt of
    /// a `hybrid_auto` turn, `hybrid_remote_on_timeout_ms`).
    Deadline(u64),
    /// The request could not be sent (connection refused, DNS, TLS).
    Network(String),
    /// The server's answer could not be understood.
    Decode(String),
    /// The answer went over a bound bb7 sets on one answer (`turn::call_limits`):
    /// what it went over. bb7 stopped reading it.
    OverLimit(String),
}

impl ApiError {
    /// Whether a retry may help: 429 and 5xx (OpenRouter's API reference, "Errors"), and failed
    /// connections. Only ever retried before any content arrived.
    pub fn retryable(&self) -> bool {
        match self {
            ApiError::Http { status, .. } => {
                (*status == 429 || *status >= 500) && !self.refuses_tools()
            }
            ApiError::Network(_) => true,
            _ => false,
        }
    }

    /// Whether the server refused the request because it carries `tools`: an HTTP
    /// error (or stream error) whose message speaks of tools it does not support, as
    /// Ollama ("does not support tools"), llama.cpp ("tools param requires --jinja
    /// flag"), vLLM ("requires --enable-auto-tool-choice") and OpenRouter ("No endpoints
    /// found that support tool use") word it. A rate limit or an auth failure never is.
    pub fn refuses_tools(&self) -> bool {
        let message = match self {
            ApiError::Http {
                status, message, ..
            } if !matches!(status, 401 | 402 | 403 | 408 | 429) => message,
            ApiError::Stream { message, .. } => message,
            _ => return false,
        };
        let m = message.to_lowercase();
        let about_tools = m.contains("tool") || m.contains("function call");
        let refused = [
            "support",
            "requires",
            "not allowed",
            "not enabled",
            "unrecognized",
            "unknown",
            "unexpected",
            "jinja",
            "invalid",
        ]
        .iter()
        .any(|w| m.contains(w));
        about_tools && refused
    }

    /// A few words on why a request is retried: `HTTP 429`, `HTTP 503`, or
    /// `connection failed` (the full story is in [`ApiError::user_message`]).
    pub fn short_reason(&self) -> String {
        match self {
            ApiError::Http { status, .. } => format!("HTTP {status}"),
            ApiError::Network(_) => "connection failed".to_owned(),
            other => other.user_message(),
        }
    }

    /// A message for the user that says what happened.
    pub fn user_message(&self) -> String {
        match self {
            ApiError::Http {
                status, message, ..
            } => {
                let what = match status {
                    401 => "the API key is missing or invalid",
                    402 => "the account has insufficient credits",
                    403 => "the input was flagged by moderation",
                    408 => "the request timed out",
                    429 => "rate limited",
                    502 => "the model provider failed",
                    503 => "no model provider is available",
                    _ => "the model API returned an error",
                };
                format!("Model API error (HTTP {status}, {what}): {message}")
            }
            ApiError::Stream { code, message } => match code {
                Some(c) => format!("The model stream reported an error ({c}): {message}"),
                None => format!("The model stream reported an error: {message}"),
            },
            ApiError::Dropped(m) => format!("The connection to the model API dropped: {m}"),
            ApiError::Stalled { secs, received } => {
                format!(
                    "The model stream stalled: no data for {secs} seconds (stream_timeout_secs) {received}"
                )
            }
            ApiError::NoFirstToken { secs, received } => format!(
                "The model sent no answer within {secs} seconds (first_token_timeout_secs): {received}; no text, reasoning or tool call arrived"
            ),
            ApiError::Deadline(ms) => {
                format!("The model took longer than {ms} ms (hybrid_remote_on_timeout_ms)")
            }
            ApiError::Network(m) => format!("Cannot reach the model API: {m}"),
            ApiError::Decode(m) => format!("Cannot understand the model API's answer: {m}"),
            ApiError::OverLimit(m) => format!("The model's answer was refused: {m}"),
        }
    }
}

/// The message of a server's error value, in every shape servers send: the nested
/// `{"error":{"message":…}}` (OpenAI, OpenRouter, llama.cpp), the flat
/// `{"error":"…"}` (LM Studio, Ollama), and a bare `{"message":…}` (the payload of an
/// older llama.cpp server's SSE `error:` field). `None` when `v` holds none.
pub fn error_message(v: &Value) -> Option<String> {
    match v.get("error") {
        Some(Value::String(s)) => return Some(s.clone()),
        Some(e @ Value::Object(_)) => {
            if let Some(m) = e.get("message").and_then(Value::as_str) {
                return Some(m.to_owned());
            }
        }
        _ => {}
    }
    v.get("message").and_then(Value::as_str).map(str::to_owned)
}

/// The [`ApiError::Stream`] of an error value found in a stream (see [`error_message`]
/// for the shapes); its `code` may be a string or a number, nested or flat. `None`
/// when `v` is not an error.
pub fn stream_error(v: &Value) -> Option<ApiError> {
    let nested = v.get("error").filter(|e| !e.is_null());
    if nested.is_none() && v.get("message").is_none() {
        return None;
    }
    let holder = nested.filter(|e| e.is_object()).unwrap_or(v);
    let code = match holder.get("code") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let message = error_message(v).unwrap_or_else(|| "unknown error".to_owned());
    Some(ApiError::Stream { code, message })
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.user_message())
    }
}

impl std::error::Error for ApiError {}

/// A model API failure, as a request's error: code `api`, the user message.
impl From<ApiError> for crate::error::Error {
    fn from(e: ApiError) -> Self {
        crate::error::Error::new(crate::error::ErrorCode::Api, e.user_message())
    }
}

/// Chunks of a stream: each SSE event decodes to zero or more events.
pub type EventStream = BoxStream<'static, Result<Vec<StreamEvent>, ApiError>>;

/// What [`Provider::stream_chat`] returns: the stream once the server accepted the
/// request, or the error it answered with before streaming.
pub type StreamStart<'a> = BoxFuture<'a, Result<EventStream, ApiError>>;

/// A model API. Implementations must never log or return the API key.
pub trait Provider: Send + Sync {
    /// Starts a streaming chat completion. Errors before the stream starts are
    /// returned here; later ones arrive in the stream.
    fn stream_chat<'a>(&'a self, request: &'a ChatRequest) -> StreamStart<'a>;

    /// A non-streaming chat completion (titles); returns the response JSON.
    fn complete<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Value, ApiError>>;

    /// `GET {base_url}/{path}` returning JSON (`models`, `credits`). `path` may climb
    /// out of the base URL's path (`../props` of `http://h/v1` is `http://h/props`).
    fn get_json(&self, path: String) -> BoxFuture<'_, Result<Value, ApiError>>;

    /// `POST {base_url}/{path}` with a JSON body, returning JSON (Ollama's
    /// `../api/show`). Errors: [`ApiError::Decode`] for an adapter without it.
    fn post_json(&self, path: String, body: Value) -> BoxFuture<'_, Result<Value, ApiError>> {
        let _ = (path, body);
        Box::pin(async { Err(ApiError::Decode("not offered by this API".into())) })
    }
}

#[cfg(test)]
mod usage_tests {
    use super::Usage;

    #[test]
    fn the_summary_reads_like_a_bill() {
        let u = Usage {
            total_tokens: 4813,
            cached_tokens: 4100,
            cost: 0.00038,
            ..Usage::default()
        };
        assert_eq!(u.summary(), "4,813 tokens (4,100 cached), $0.0004");
        let plain = Usage {
            total_tokens: 1_234_567,
            ..Usage::default()
        };
        assert_eq!(plain.summary(), "1,234,567 tokens, $0.0000");
    }
}
