//! The native Anthropic Messages adapter (`POST {base_url}/messages`, Anthropic's
//! "Messages" and "Streaming Messages" API reference). It takes the same
//! [`ChatRequest`] as the OpenAI-compatible client and yields the same
//! [`StreamEvent`]s, so a turn cannot tell them apart: the system prompt becomes the
//! top-level `system` blocks, tool calls become `tool_use` blocks and tool results
//! `tool_result` blocks, and the streamed `content_block_*` / `message_*` events are
//! turned back into text, reasoning, tool-call fragments, a finish reason and usage.
//! Cache breakpoints (`cache_control`) go on the system prompt and on the last user
//! turn, so a follow-up request (a retrieval round, the next message) reads both from
//! the cache.

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::openai::{read_json, send_checked, within_json_timeout};
use super::request::{CacheControl, Content, Role};
use super::sse::event_stream;
use super::{ApiError, ChatRequest, Provider, StreamEvent, StreamStart, Usage};

/// The API version header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request sets none (the API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A client for one Anthropic-compatible base URL (e.g. `https://api.anthropic.com/v1`).
pub struct AnthropicMessages {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
}

impl AnthropicMessages {
    /// A client for `base_url` with an optional `x-api-key` and extra headers.
    /// Errors: the HTTP client cannot be built.
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        headers: Vec<(String, String)>,
    ) -> Result<Self, ApiError> {
        Ok(AnthropicMessages {
            http: super::openai::http_client()?,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()),
            headers,
        })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .request(method, format!("{}/{path}", self.base_url))
            .header("anthropic-version", ANTHROPIC_VERSION);
        if let Some(key) = &self.api_key {
            req = req.header("x-api-key", key);
        }
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        req
    }
}

/// `{"type": "ephemeral"}`: a prompt cache breakpoint of the default five minutes.
const EPHEMERAL: CacheControl = CacheControl {
    kind: "ephemeral",
    ttl: None,
};

/// One content block of a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// A cache breakpoint after this block.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A tool call of the assistant.
    ToolUse {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments as a JSON object (`{}` when the model's text was not JSON).
        input: Value,
    },
    /// An image, in a user message.
    Image {
        /// `{"type":"base64","media_type","data"}`.
        source: ImageSource,
        /// A cache breakpoint after this block.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// The result of a tool call, in a user message.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The result text.
        content: String,
        /// A cache breakpoint after this block.
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// The bytes of an image block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageSource {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The bytes, base64.
    pub data: String,
}

impl Block {
    fn mark_cached(&mut self) {
        match self {
            Block::Text { cache_control, .. }
            | Block::ToolResult { cache_control, .. }
            | Block::Image { cache_control, .. } => *cache_control = Some(EPHEMERAL),
            Block::ToolUse { .. } => {}
        }
    }
}

/// One message: `user` or `assistant` with its blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: &'static str,
    /// Its blocks.
    pub content: Vec<Block>,
}

/// A tool definition in Anthropic's shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// JSON Schema of its input.
    pub input_schema: Value,
}

/// `{"type": "auto"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolChoice {
    /// Always `auto`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// The request body of `POST /messages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessagesRequest {
    /// Model id.
    pub model: String,
    /// Upper bound of output tokens.
    pub max_tokens: u32,
    /// The system prompt's blocks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<Block>,
    /// The conversation, user and assistant alternating.
    pub messages: Vec<Message>,
    /// Tool definitions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    /// `auto` when there are tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Stream the answer.
    pub stream: bool,
}

/// The OpenAI-shaped tool definition the request carries.
#[derive(Deserialize)]
struct OpenAiTool {
    function: OpenAiFunction,
}

#[derive(Deserialize)]
struct OpenAiFunction {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Value,
}

/// The Messages body for `request`: system text apart, consecutive messages of one
/// role merged (tool results follow their call as a user turn). The request's own
/// cache breakpoints (content parts with `cache_control`) are kept as they are; a
/// request without any gets them on the system prompt and the last user turn.
pub fn messages_request(request: &ChatRequest, stream: bool) -> MessagesRequest {
    let marked = request.messages.iter().any(|m| match &m.content {
        Content::Parts(parts) => parts.iter().any(|p| p.cache_control.is_some()),
        Content::Text(_) => false,
    });
    let mut system = Vec::new();
    let mut messages: Vec<Message> = Vec::new();
    for m in &request.messages {
        let (role, blocks) = match m.role {
            Role::System => {
                system.extend(text_block(&m.content));
                continue;
            }
            Role::User => ("user", text_block(&m.content)),
            Role::Tool => (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: m.tool_call_id.clone().unwrap_or_default(),
                    content: m.content.text().into_owned(),
                    cache_control: None,
                }],
            ),
            Role::Assistant => {
                let mut blocks = text_block(&m.content);
                blocks.extend(m.tool_calls.iter().map(|c| {
                    Block::ToolUse {
                        id: c.id.clone(),
                        name: c.function.name.clone(),
                        input: serde_json::from_str::<Value>(&c.function.arguments)
                            .ok()
                            .filter(Value::is_object)
                            .unwrap_or_else(|| Value::Object(Default::default())),
                    }
                }));
                ("assistant", blocks)
            }
        };
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(Message {
                role,
                content: blocks,
            }),
        }
    }
    if !marked {
        if let Some(last) = system.last_mut() {
            last.mark_cached();
        }
        if let Some(block) = messages
            .iter_mut()
            .rev()
            .find(|m| m.role == "user")
            .and_then(|m| m.content.last_mut())
        {
            block.mark_cached();
        }
    }
    let tools: Vec<ToolDef> = request
        .tools
        .iter()
        .filter_map(|t| serde_json::from_value::<OpenAiTool>(t.clone()).ok())
        .map(|t| ToolDef {
            name: t.function.name,
            description: t.function.description,
            input_schema: t.function.parameters,
        })
        .collect();
    MessagesRequest {
        model: request.model.clone(),
        max_tokens: request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        system,
        messages,
        tool_choice: (!tools.is_empty()).then_some(ToolChoice { kind: "auto" }),
        tools,
        stream,
    }
}

/// The text blocks of a message's content: one per part, with the part's breakpoint.
fn text_block(content: &Content) -> Vec<Block> {
    let block = |text: &str, cache_control: Option<CacheControl>| Block::Text {
        text: text.to_owned(),
        cache_control,
    };
    match content {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![block(t, None)],
        Content::Parts(parts) => parts
            .iter()
            .filter_map(|p| match &p.image_url {
                // A `data:{media type};base64,{data}` URL becomes a base64 source.
                Some(image) => {
                    let (head, data) = image.url.strip_prefix("data:")?.split_once(',')?;
                    Some(Block::Image {
                        source: ImageSource {
                            kind: "base64",
                            media_type: head.strip_suffix(";base64")?.to_owned(),
                            data: data.to_owned(),
                        },
                        cache_control: p.cache_control.clone(),
                    })
                }
                None if p.text.is_empty() => None,
                None => Some(block(&p.text, p.cache_control.clone())),
            })
            .collect(),
    }
}

/// One streamed event's payload, as far as bb7 reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    index: usize,
    message: Option<EventMessage>,
    content_block: Option<EventBlock>,
    delta: Option<EventDelta>,
    usage: Option<EventUsage>,
    error: Option<EventError>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventMessage {
    usage: Option<EventUsage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventBlock {
    #[serde(rename = "type")]
    kind: String,
    text: String,
    id: Option<String>,
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventDelta {
    #[serde(rename = "type")]
    kind: String,
    text: String,
    thinking: String,
    partial_json: String,
    stop_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation_input_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventError {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: String,
}

/// Turns Messages stream events into [`StreamEvent`]s; keeps the usage of
/// `message_start` until `message_stop`.
#[derive(Debug, Default)]
pub struct EventDecoder {
    usage: Usage,
}

impl EventDecoder {
    /// Decodes one SSE `data:` payload. Errors: a payload that is not JSON, or an
    /// `error` event.
    pub fn decode(&mut self, data: &str) -> Result<Vec<StreamEvent>, ApiError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let ev: Event = serde_json::from_str(data)
            .map_err(|e| ApiError::Decode(format!("bad stream event ({e})")))?;
        let mut out = Vec::new();
        match ev.kind.as_str() {
            "message_start" => {
                if let Some(u) = ev.message.and_then(|m| m.usage) {
                    self.add_usage(&u);
                }
            }
            "content_block_start" => {
                let block = ev.content_block.unwrap_or_default();
                match block.kind.as_str() {
                    "tool_use" => out.push(StreamEvent::ToolCall {
                        index: ev.index,
                        id: block.id,
                        name: block.name,
                        arguments: String::new(),
                    }),
                    "text" if !block.text.is_empty() => out.push(StreamEvent::Text(block.text)),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = ev.delta.unwrap_or_default();
                match delta.kind.as_str() {
                    "text_delta" if !delta.text.is_empty() => {
                        out.push(StreamEvent::Text(delta.text))
                    }
                    "thinking_delta" if !delta.thinking.is_empty() => {
                        out.push(StreamEvent::Reasoning(delta.thinking))
                    }
                    "input_json_delta" => out.push(StreamEvent::ToolCall {
                        index: ev.index,
                        id: None,
                        name: None,
                        arguments: delta.partial_json,
                    }),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(u) = &ev.usage {
                    self.usage.completion_tokens = u.output_tokens;
                }
                if let Some(reason) = ev.delta.and_then(|d| d.stop_reason) {
                    out.push(StreamEvent::Finish(reason));
                }
            }
            "message_stop" => {
                let mut usage = self.usage.clone();
                usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
                out.push(StreamEvent::Usage(usage));
                out.push(StreamEvent::Done);
            }
            "error" => {
                let e = ev.error.unwrap_or_default();
                return Err(ApiError::Stream {
                    code: e.kind,
                    message: e.message,
                });
            }
            _ => {}
        }
        Ok(out)
    }

    fn add_usage(&mut self, u: &EventUsage) {
        // Anthropic counts cached input apart; bb7's prompt tokens include it.
        self.usage.prompt_tokens =
            u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
        self.usage.cached_tokens = u.cache_read_input_tokens;
        self.usage.cache_write_tokens = u.cache_creation_input_tokens;
        self.usage.completion_tokens = u.output_tokens;
    }
}

/// A non-streamed answer, as far as titles read it.
#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    content: Vec<CompletionBlock>,
}

#[derive(Deserialize)]
struct CompletionBlock {
    #[serde(default)]
    text: String,
}

/// The OpenAI shape callers of [`Provider::complete`] read: `choices[0].message.content`.
#[derive(Serialize)]
struct OpenAiCompletion {
    choices: Vec<OpenAiChoice>,
}

#[derive(Serialize)]
struct OpenAiChoice {
    message: OpenAiMessage,
}

#[derive(Serialize)]
struct OpenAiMessage {
    role: &'static str,
    content: String,
}

impl Provider for AnthropicMessages {
    fn stream_chat<'a>(&'a self, request: &'a ChatRequest) -> StreamStart<'a> {
        Box::pin(async move {
            let body = messages_request(request, true);
            let resp =
                send_checked(self.request(reqwest::Method::POST, "messages").json(&body)).await?;
            let mut events = EventDecoder::default();
            Ok(event_stream(resp, move |data| events.decode(data)))
        })
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(within_json_timeout(async move {
            let body = messages_request(request, false);
            let resp =
                send_checked(self.request(reqwest::Method::POST, "messages").json(&body)).await?;
            let answer: Completion = serde_json::from_value(read_json(resp).await?)
                .map_err(|e| ApiError::Decode(e.to_string()))?;
            let content = answer.content.into_iter().map(|b| b.text).collect();
            serde_json::to_value(OpenAiCompletion {
                choices: vec![OpenAiChoice {
                    message: OpenAiMessage {
                        role: "assistant",
                        content,
                    },
                }],
            })
            .map_err(|e| ApiError::Decode(e.to_string()))
        }))
    }

    fn get_json(&self, path: String) -> BoxFuture<'_, Result<Value, ApiError>> {
        Box::pin(within_json_timeout(async move {
            let resp = send_checked(self.request(reqwest::Method::GET, &path)).await?;
            read_json(resp).await
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::{ChatMessage, FunctionCall, ToolCallRequest};
    use serde_json::json;

    #[test]
    fn the_body_moves_system_tools_and_results_into_anthropics_shape() {
        let call = ToolCallRequest {
            id: "toolu_1".into(),
            kind: "function",
            function: FunctionCall {
                name: "read_file".into(),
                arguments: r#"{"path":"a.rs"}"#.into(),
            },
        };
        let mut assistant = ChatMessage::text(Role::Assistant, "");
        assistant.tool_calls = vec![call];
        let request = ChatRequest::new(
            "claude-sonnet-4-5",
            vec![
                ChatMessage::text(Role::System, "rules"),
                ChatMessage::text(Role::User, "fix it"),
                assistant,
                ChatMessage::tool_result("toolu_1", "fn a() {}"),
            ],
        )
        .with_tools(vec![json!({"type": "function", "function": {
            "name": "read_file", "description": "Read", "parameters": {"type": "object"}}})]);
        let body = serde_json::to_value(messages_request(&request, true)).unwrap();
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["messages"][0]["content"][0]["text"], "fix it");
        assert!(
            body["messages"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}}]})
        );
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn a() {}",
                   "cache_control": {"type": "ephemeral"}})
        );
        assert_eq!(
            body["tools"],
            json!([{"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}])
        );
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    }

    #[test]
    fn the_requests_own_breakpoints_are_kept_and_none_are_added() {
        use crate::llm::request::ContentPart;
        let part = |text: &str, cached: bool| ContentPart {
            kind: "text",
            text: text.into(),
            cache_control: cached.then_some(EPHEMERAL),
            image_url: None,
        };
        let mut user = ChatMessage::text(Role::User, "");
        user.content = Content::Parts(vec![part("files", true), part("question", false)]);
        let request = ChatRequest::new("m", vec![ChatMessage::text(Role::System, "rules"), user]);
        let body = serde_json::to_value(messages_request(&request, true)).unwrap();
        assert!(body["system"][0].get("cache_control").is_none(), "{body}");
        let blocks = &body["messages"][0]["content"];
        assert_eq!(blocks[0]["cache_control"]["type"], "ephemeral");
        assert_eq!(blocks[1]["text"], "question");
        assert!(blocks[1].get("cache_control").is_none());
    }

    #[test]
    fn stream_events_become_the_same_events_as_openais() {
        let mut d = EventDecoder::default();
        let feed = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"edit_file","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":25}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let events: Vec<StreamEvent> = feed.iter().flat_map(|f| d.decode(f).unwrap()).collect();
        assert_eq!(
            events,
            vec![
                StreamEvent::Reasoning("hm".into()),
                StreamEvent::Text("Hi".into()),
                StreamEvent::ToolCall {
                    index: 2,
                    id: Some("toolu_1".into()),
                    name: Some("edit_file".into()),
                    arguments: String::new()
                },
                StreamEvent::ToolCall {
                    index: 2,
                    id: None,
                    name: None,
                    arguments: "{\"pa".into()
                },
                StreamEvent::Finish("tool_use".into()),
                StreamEvent::Usage(Usage {
                    prompt_tokens: 100,
                    completion_tokens: 25,
                    cached_tokens: 90,
                    cache_write_tokens: 0,
                    total_tokens: 125,
                    cost: 0.0
                }),
                StreamEvent::Done,
            ]
        );
        let err = d
            .decode(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap_err();
        assert_eq!(
            err,
            ApiError::Stream {
                code: Some("overloaded_error".into()),
                message: "Overloaded".into()
            }
        );
    }
}
