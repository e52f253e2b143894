//! The chat-completions request body, typed: the only place that shapes what bb7 sends
//! to the model API. The shape is OpenAI's `POST /chat/completions` as OpenRouter
//! accepts it, with OpenRouter's extensions (`usage`, `provider`, `reasoning`).

use serde::Serialize;
use serde_json::Value;

/// Who wrote a message of the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The user's turn (here: the one structured user message).
    User,
    /// The model's earlier answer, with its tool calls.
    Assistant,
    /// A tool call's result.
    Tool,
}

/// One message of the request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// Its text (empty for an assistant message that only calls tools), or parts that
    /// carry cache breakpoints.
    pub content: Content,
    /// The tool calls of an assistant message.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// The call a `tool` message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message with text only.
    pub fn text(role: Role, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role,
            content: Content::Text(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The result of tool call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            tool_call_id: Some(id.into()),
            ..ChatMessage::text(Role::Tool, content)
        }
    }
}

/// A message's content: one string, or text parts of which some end a cached prefix
/// (the `cache_control` breakpoints Anthropic models need; docs/ARCHITECTURE.md,
/// "The prompt's layout").
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// `[{"type":"text","text":…,"cache_control"?:…}]`.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The whole text, parts joined without separators (they are cut from one text).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Content::Text(t) => std::borrow::Cow::Borrowed(t),
            Content::Parts(parts) => parts.iter().map(|p| p.text.as_str()).collect(),
        }
    }

    /// Replaces the text and keeps the shape: plain text stays plain; parts become one
    /// part with the new text that keeps the breakpoint of the last one, so a request
    /// whose system text changes (edits as blocks after a refusal of `tools`) still asks
    /// the provider to cache up to its end.
    pub fn replace_text(&mut self, text: impl Into<String>) {
        let text = text.into();
        *self = match std::mem::replace(self, Content::Text(String::new())) {
            Content::Text(_) => Content::Text(text),
            Content::Parts(parts) => Content::Parts(vec![ContentPart {
                kind: "text",
                text,
                image_url: None,
                cache_control: parts.into_iter().last().and_then(|p| p.cache_control),
            }]),
        };
    }
}

/// One text part of a [`Content::Parts`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContentPart {
    /// `text`, or `image_url` for an image.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The text (empty, and left out, for an image).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Set on the last part of a prefix the provider should cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// An image: `{"url":"data:image/png;base64,…"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_url: Option<ImageUrl>,
}

/// The image of an `image_url` part: a `data:` URL with the bytes as base64.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageUrl {
    /// `data:{media type};base64,{data}`.
    pub url: String,
}

/// `{"type":"ephemeral","ttl"?:"1h"}`: the prefix up to here is cached (5 minutes, or
/// the `ttl`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheControl {
    /// Always `ephemeral`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `1h` for an hour; absent for the default 5 minutes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<&'static str>,
}

/// A tool call as it is sent back to the model in an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallRequest {
    /// The provider's call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function and its arguments.
    pub function: FunctionCall,
}

/// The function part of a [`ToolCallRequest`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCall {
    /// Tool name.
    pub name: String,
    /// The JSON arguments as the model streamed them (possibly invalid JSON).
    pub arguments: String,
}

/// OpenRouter's provider preferences.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderPrefs {
    /// `deny` (default) or `allow`: may providers train on the request.
    pub data_collection: &'static str,
    /// Only providers with zero data retention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zdr: Option<bool>,
}

/// `{"include": true}`: OpenRouter adds usage with cost to the last chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageOption {
    /// Always true.
    pub include: bool,
}

/// `{"include_usage": true}`: OpenAI-compatible servers report usage when streaming.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamOptions {
    /// Always true.
    pub include_usage: bool,
}

/// `{"effort": "high"}`: reasoning effort for models that reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reasoning {
    /// `minimal`, `low`, `medium` or `high`.
    pub effort: String,
}

/// A chat-completions request. `stream` is set by the provider when it sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// Model id, e.g. `anthropic/claude-sonnet-4.5`.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Tool definitions (JSON Schema objects, `{"type":"function","function":{…}}`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// `auto` when there are tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    /// Ask for usage with cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageOption>,
    /// Ask for usage when streaming.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// Provider preferences (data collection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderPrefs>,
    /// Reasoning effort.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// A stable key for the provider's prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// Upper bound of completion tokens (titles).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    /// A request for `model` with `messages` and nothing else.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            messages,
            tools: Vec::new(),
            tool_choice: None,
            usage: None,
            stream_options: None,
            provider: None,
            reasoning: None,
            prompt_cache_key: None,
            max_tokens: None,
        }
    }

    /// Offers `tools` to the model (`tool_choice: auto`); an empty list offers none.
    pub fn with_tools(mut self, tools: Vec<Value>) -> ChatRequest {
        self.tool_choice = (!tools.is_empty()).then_some("auto");
        self.tools = tools;
        self
    }

    /// Asks for usage with cost, streamed or not.
    pub fn with_usage(mut self) -> ChatRequest {
        self.usage = Some(UsageOption { include: true });
        self.stream_options = Some(StreamOptions {
            include_usage: true,
        });
        self
    }

    /// The request with `stream` set, ready to serialize straight into the HTTP body
    /// (no intermediate JSON tree: the context can be megabytes).
    pub fn wire(&self, stream: bool) -> Wire<'_> {
        Wire {
            request: self,
            stream,
        }
    }

    /// The JSON body with `stream` set, as sent.
    pub fn body(&self, stream: bool) -> Value {
        serde_json::to_value(self.wire(stream)).unwrap_or(Value::Null)
    }
}

/// A [`ChatRequest`] with its `stream` flag, as it goes on the wire.
#[derive(Debug, Serialize)]
pub struct Wire<'a> {
    #[serde(flatten)]
    request: &'a ChatRequest,
    stream: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_the_openai_shape() {
        let mut req = ChatRequest::new(
            "m",
            vec![
                ChatMessage::text(Role::System, "s"),
                ChatMessage::tool_result("c1", "ok"),
            ],
        )
        .with_tools(vec![serde_json::json!({"type": "function"})])
        .with_usage();
        req.reasoning = Some(Reasoning {
            effort: "high".into(),
        });
        let body = req.body(true);
        assert_eq!(body["stream"], true);
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(
            body["messages"][0],
            serde_json::json!({"role": "system", "content": "s"})
        );
        assert_eq!(
            body["messages"][1],
            serde_json::json!({"role": "tool", "content": "ok", "tool_call_id": "c1"})
        );
        assert_eq!(body["usage"]["include"], true);
        assert_eq!(body["reasoning"]["effort"], "high");
        assert!(body.get("max_tokens").is_none());
        let bare = ChatRequest::new("m", vec![]).with_tools(vec![]).body(false);
        assert!(bare.get("tools").is_none() && bare.get("tool_choice").is_none());
    }
}
