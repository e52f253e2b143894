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

/// The most bytes bb7 reads of an error response's body: its message is in the first
/// few hundred; the rest of an endless body is never read.
pub const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// The most bytes of a JSON answer that is not streamed (the model list, credits, a
/// title): 32 MiB, over ten times OpenRouter's whole model list.
pub const MAX_JSON_BODY_BYTES: usize = 32 << 20;

/// How long a request that is not streamed (the model list, credits, a title) may
/// take, headers and body together. A streamed chat has the turn's limits instead
/// (`first_token_timeout_secs`, `stream_timeout_secs`).
pub const JSON_TIMEOUT: Duration = Duration::from_secs(60);

/// Same-origin redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;

/// The HTTP client of a model adapter: rustls, a 20 s connect timeout and no total
/// timeout (a stream may run for minutes; the turn watches it, and other requests
/// have [`JSON_TIMEOUT`]). A redirect is followed only within the origin (scheme,
/// host and port) of the configured URL: one to another host would carry the key,
/// every configured header and the prompt there (and the plain-HTTP rule of
/// `url::cleartext_risk` was checked for the configured host only), so it is not
/// followed and [`send_checked`] reports it. Errors: `ApiError::Network` when the TLS
/// backend cannot start.
pub(crate) fn http_client() -> Result<reqwest::Client, ApiError> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin || attempt.previous().len() > MAX_REDIRECTS {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(20))
        .redirect(policy)
        .build()
        .map_err(|e| ApiError::Network(e.to_string()))
}

/// Reads `resp`'s body up to `cap` bytes. Returns the bytes and whether more followed
/// (the rest is never read). Errors: the connection failed mid-body.
pub async fn read_capped(
    mut resp: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| ApiError::Dropped(describe(&e)))?
    {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The JSON of a successful answer that is not streamed, read within [`JSON_TIMEOUT`]
/// (counted from the request by the caller) and [`MAX_JSON_BODY_BYTES`].
pub(super) async fn read_json(resp: reqwest::Response) -> Result<Value, ApiError> {
    let (body, more) = read_capped(resp, MAX_JSON_BODY_BYTES).await?;
    if more {
        return Err(ApiError::Decode(format!(
            "the answer is over {} MiB; bb7 stopped reading it",
            MAX_JSON_BODY_BYTES >> 20
        )));
    }
    serde_json::from_slice(&body).map_err(|e| ApiError::Decode(e.to_string()))
}

/// `work` within [`JSON_TIMEOUT`]; past it, [`ApiError::Network`] saying so.
pub(super) async fn within_json_timeout<T>(
    work: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    tokio::time::timeout(JSON_TIMEOUT, work)
        .await
        .unwrap_or_else(|_| {
            Err(ApiError::Network(format!(
                "no complete answer within {} seconds",
                JSON_TIMEOUT.as_secs()
            )))
        })
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
    if resp.status().is_redirection() {
        let to = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| resp.url().join(l).ok())
            .map(|u| super::url::redacted(u.as_str()))
            .unwrap_or_else(|| "an address it did not name".to_owned());
        return Err(ApiError::Http {
            status,
            message: format!(
                "the server redirected the request to {to}; bb7 follows redirects only within the configured server, so the API key, headers and prompt were not sent there (set base_url to the address that answers) (from {url})"
            ),
            retry_after: None,
        });
    }
    // An error body is read only as far as its message can be (an endless one
    // never is), and a body that breaks off still yields what came.
    let (body, _) = read_capped(resp, MAX_ERROR_BODY_BYTES)
        .await
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body);
    Err(ApiError::Http {
        status,
        message: format!("{} (from {url})", error_body_message(&body)),
        retry_after,
    })
}

/// The message of an error body: JSON in any shape [`super::error_message`] reads, or
/// the start of any other body (plain text, an HTML gateway page) with tags removed.
fn error_body_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body)
        && let Some(m) = super::error_message(&v)
    {
        return m;
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

/// `e` with its causes, for the user: reqwest's Display includes the URL (never
/// headers), which may carry a key in its user info or query, so it is shown
/// [`super::url::redacted`].
pub fn describe(e: &reqwest::Error) -> String {
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
        Box::pin(within_json_timeout(async move {
            let resp = self
                .send(self.post("chat/completions").json(&request.wire(false)))
                .await?;
            read_json(resp).await
        }))
    }

    fn get_json(&self, path: String) -> BoxFuture<'_, Result<Value, ApiError>> {
        Box::pin(within_json_timeout(async move {
            let mut req = self.http.get(format!("{}/{path}", self.base_url));
            if let Some(key) = &self.api_key {
                req = req.bearer_auth(key);
            }
            let resp = self.send(self.with_extra_headers(req)).await?;
            read_json(resp).await
        }))
    }

    fn post_json(&self, path: String, body: Value) -> BoxFuture<'_, Result<Value, ApiError>> {
        Box::pin(within_json_timeout(async move {
            let resp = self.send(self.post(&path).json(&body)).await?;
            read_json(resp).await
        }))
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
    if v.get("error").is_some_and(|e| !e.is_null())
        && let Some(err) = super::stream_error(&v)
    {
        return Err(err);
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
