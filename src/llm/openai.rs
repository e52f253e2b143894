//! The OpenAI-compatible chat-completions client over SSE (OpenRouter's API reference).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::sse::event_stream;
use super::{ApiError, ChatRequest, Provider, StreamEvent, StreamStart, Usage};

/// OpenRouter's base URL, the default.
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

/// A client for one base URL and key.
pub struct OpenAiCompatible {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    /// Extra headers of the provider's config, sent with every request.
    headers: Vec<(String, String)>,
}

/// The HTTP client of a model adapter: rustls, a 20 s connect timeout and no total
/// timeout (a stream may run for minutes; a stall is caught per event by the turn).
/// Errors: `ApiError::Network` when the TLS backend cannot start.
pub(crate) fn http_client() -> Result<reqwest::Client, ApiError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        .build()
        .map_err(|e| ApiError::Network(e.to_string()))
}

impl OpenAiCompatible {
    /// A client for `base_url` (no trailing slash needed) with an optional bearer key.
    pub fn new(base_url: &str, api_key: Option<String>) -> Result<Self, ApiError> {
        Ok(OpenAiCompatible {
            http: http_client()?,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()),
            headers: Vec::new(),
        })
    }

    /// The client with extra headers on every request (a provider's `headers`).
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.headers = headers;
        self
    }

    fn with_extra_headers(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        for (name, value) in &self.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        req
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(format!("{}/{path}", self.base_url))
            .header("X-Title", "bb7")
            .header("HTTP-Referer", "https://github.com/bb7");
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        self.with_extra_headers(req)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<reqwest::Response, ApiError> {
        send_checked(req).await
    }
}

/// Sends `req`; a response that is not a success becomes [`ApiError::Http`] with the
/// body's message and the URL that answered. Shared by the adapters of this module's
/// siblings.
pub(super) async fn send_checked(
    req: reqwest::RequestBuilder,
) -> Result<reqwest::Response, ApiError> {
    let resp = req
        .send()
        .await
        .map_err(|e| ApiError::Network(describe(&e)))?;
    if resp.status().is_success() {
        return Ok(resp);
    }
    let status = resp.status().as_u16();
    // The URL tried, so a wrong `base_url` shows itself, without its user info or
    // query, which may hold a key.
    let url = super::url::redacted(resp.url().as_str());
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let body = resp.text().await.unwrap_or_default();
    Err(ApiError::Http {
        status,
        message: format!("{} (from {url})", error_body_message(&body)),
        retry_after,
    })
}

/// The message of an error body: `error.message` of JSON, or the start of a non-JSON
/// body (an HTML gateway page) with tags removed.
fn error_body_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        if let Some(m) = v.pointer("/error/message").and_then(Value::as_str) {
            return m.to_owned();
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return m.to_owned();
        }
    }
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        "no details in the response".to_owned()
    } else {
        text.chars().take(200).collect()
    }
}

fn describe(e: &reqwest::Error) -> String {
    // reqwest's Display includes the URL (never headers), which may carry a key in
    // its user info or query: it is shown redacted.
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    match e.url() {
        Some(url) => super::url::redact_in(&s, url.as_str()),
        None => s,
    }
}

impl Provider for OpenAiCompatible {
    fn stream_chat<'a>(&'a self, request: &'a ChatRequest) -> StreamStart<'a> {
        Box::pin(async move {
            let resp = self
                .send(self.post("chat/completions").json(&request.wire(true)))
                .await?;
            Ok(event_stream(resp, decode_event))
        })
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            let resp = self
                .send(self.post("chat/completions").json(&request.wire(false)))
                .await?;
            resp.json::<Value>()
                .await
                .map_err(|e| ApiError::Decode(e.to_string()))
        })
    }

    fn get_json(&self, path: String) -> BoxFuture<'_, Result<Value, ApiError>> {
        Box::pin(async move {
            let mut req = self.http.get(format!("{}/{path}", self.base_url));
            if let Some(key) = &self.api_key {
                req = req.bearer_auth(key);
            }
            let resp = self.send(self.with_extra_headers(req)).await?;
            resp.json::<Value>()
                .await
                .map_err(|e| ApiError::Decode(e.to_string()))
        })
    }
}

/// Decodes one SSE `data:` payload into events.
pub fn decode_event(data: &str) -> Result<Vec<StreamEvent>, ApiError> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(vec![StreamEvent::Done]);
    }
    if data.is_empty() {
        return Ok(Vec::new());
    }
    let v: Value = match serde_json::from_str(data) {
        Ok(v) => v,
        // A provider may cut a surrogate pair across two events (`"\ud83d"` here,
        // `"\ude00"` in the next); raw invalid UTF-8 is already replaced, so escapes
        // are decoded as leniently: the lone half becomes U+FFFD.
        Err(e) => super::sse::replace_lone_surrogates(data)
            .and_then(|fixed| serde_json::from_str(&fixed).ok())
            .ok_or_else(|| ApiError::Decode(format!("bad stream chunk ({e})")))?,
    };
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        let code = match err.get("code") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("unknown error")
            .to_owned();
        return Err(ApiError::Stream { code, message });
    }
    let mut out = Vec::new();
    if let Some(choices) = v.get("choices").and_then(Value::as_array) {
        for choice in choices {
            let delta = &choice["delta"];
            for key in ["reasoning", "reasoning_content"] {
                if let Some(r) = delta.get(key).and_then(Value::as_str)
                    && !r.is_empty()
                {
                    out.push(StreamEvent::Reasoning(r.to_owned()));
                }
            }
            if let Some(t) = delta.get("content").and_then(Value::as_str)
                && !t.is_empty()
            {
                out.push(StreamEvent::Text(t.to_owned()));
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (pos, call) in calls.iter().enumerate() {
                    let f = &call["function"];
                    out.push(StreamEvent::ToolCall {
                        index: call
                            .get("index")
                            .and_then(Value::as_u64)
                            .map(|i| i as usize)
                            .unwrap_or(pos),
                        id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                        name: f.get("name").and_then(Value::as_str).map(str::to_owned),
                        arguments: f
                            .get("arguments")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    });
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                out.push(StreamEvent::Finish(reason.to_owned()));
            }
        }
    }
    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
        let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let prompt = n("/prompt_tokens");
        let completion = n("/completion_tokens");
        out.push(StreamEvent::Usage(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: n("/prompt_tokens_details/cached_tokens"),
            cache_write_tokens: n("/prompt_tokens_details/cache_write_tokens"),
            total_tokens: u
                .get("total_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(prompt + completion),
            cost: u.get("cost").and_then(Value::as_f64).unwrap_or(0.0),
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_text_reasoning_tools_usage_and_errors() {
        let ev = decode_event(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","reasoning":"hm"},"finish_reason":null}]}"#).unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::Reasoning("hm".into()),
                StreamEvent::Text("Hi".into())
            ]
        );
        let ev = decode_event(r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","type":"function","function":{"name":"write_file","arguments":"{\"pa"}}]}}]}"#).unwrap();
        assert_eq!(
            ev[0],
            StreamEvent::ToolCall {
                index: 1,
                id: Some("c".into()),
                name: Some("write_file".into()),
                arguments: "{\"pa".into()
            }
        );
        let ev = decode_event(r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"cost":0.5,"prompt_tokens_details":{"cached_tokens":4}}}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Usage(Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                cached_tokens: 4,
                cache_write_tokens: 0,
                total_tokens: 15,
                cost: 0.5
            })]
        );
        assert!(
            matches!(decode_event(r#"{"error":{"code":502,"message":"x"}}"#), Err(ApiError::Stream { code: Some(c), .. }) if c == "502")
        );
        assert!(matches!(
            decode_event(r#"{"error":{"code":"server_error","message":"x"}}"#),
            Err(ApiError::Stream { .. })
        ));
        assert_eq!(decode_event("[DONE]").unwrap(), vec![StreamEvent::Done]);
        assert_eq!(
            error_body_message("<html><body><h1>502 Bad Gateway</h1></body></html>"),
            "502 Bad Gateway"
        );
    }
}
