//! The eval's model endpoints on 127.0.0.1: one per provider role, either replaying a
//! trace's exchanges in order (offline, CI) or forwarding to the real endpoint and
//! recording each exchange (`--record`). bb7 talks to them as to any
//! OpenAI-compatible server; a forwarding endpoint adds the real key, so the config
//! bb7 runs with holds none and no trace can.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::task::Exchange;

/// Requests arrived at any endpoint so far: the order of a task's requests across
/// the local and the remote endpoint.
static ARRIVALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where a forwarding endpoint sends requests.
#[derive(Clone)]
pub struct Upstream {
    /// The real base URL.
    pub base_url: String,
    /// The real key, sent as a bearer token; never recorded.
    pub api_key: Option<String>,
    /// Extra headers of the provider's config.
    pub headers: Vec<(String, String)>,
    /// Anthropic's API takes the key as `x-api-key` and wants its version header.
    pub anthropic: bool,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Exchange>,
    served: Vec<Exchange>,
    /// Counts loads, so an answer still stalling when its task ended is not counted
    /// for the next task.
    generation: u64,
    /// Forwarded requests still waiting for the real endpoint.
    forwarding: usize,
}

/// A running endpoint for one provider role.
#[derive(Clone)]
pub struct EvalEndpoint {
    /// Its base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    provider: String,
    state: Arc<Mutex<State>>,
    upstream: Option<Upstream>,
    http: reqwest::Client,
}

/// An error body of OpenRouter's shape.
#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: u16,
    message: &'a str,
}

impl EvalEndpoint {
    /// Starts an endpoint for `provider` (`local` or `remote`) that replays queued
    /// exchanges, or forwards to `upstream` when given. Errors: no local port.
    pub async fn start(provider: &str, upstream: Option<Upstream>) -> Result<EvalEndpoint, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot open a local port for the eval: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot open a local port for the eval: {e}"))?;
        let endpoint = EvalEndpoint {
            url: format!("http://{addr}/v1"),
            provider: provider.to_owned(),
            state: Arc::default(),
            upstream,
            // bb7's own client: no redirect to another host, which would carry the key.
            http: crate::llm::openai::http_client().map_err(|e| e.user_message())?,
        };
        let server = endpoint.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let server = server.clone();
                tokio::spawn(async move { server.serve(conn).await });
            }
        });
        Ok(endpoint)
    }

    /// Sets the exchanges to replay for the next task (this provider's, in order) and
    /// forgets what was served.
    pub fn load(&self, exchanges: impl IntoIterator<Item = Exchange>) {
        if let Ok(mut st) = self.state.lock() {
            st.queue = exchanges
                .into_iter()
                .filter(|e| e.provider == self.provider)
                .collect();
            st.served.clear();
            st.generation += 1;
        }
    }

    /// Waits until no forwarded request is still running (at most `limit`): bb7 may
    /// give up on a slow answer that the trace must still hold.
    pub async fn settle(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let busy = self
                .state
                .lock()
                .map(|st| st.forwarding > 0)
                .unwrap_or(false);
            if !busy {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Answers of the loaded trace that no request asked for.
    pub fn unused(&self) -> usize {
        self.state.lock().map(|st| st.queue.len()).unwrap_or(0)
    }

    /// The real server a forwarding endpoint talks to, as `local: <URL>` without user
    /// info or query; `None` on replay.
    pub fn upstream_url(&self) -> Option<String> {
        self.upstream.as_ref().map(|u| {
            format!(
                "{}: {}",
                self.provider,
                crate::llm::url::redacted(&u.base_url)
            )
        })
    }

    /// Whether it answers from a trace (no upstream).
    fn replaying(&self) -> bool {
        self.upstream.is_none()
    }

    /// The exchanges answered since the last [`EvalEndpoint::load`].
    pub fn served(&self) -> Vec<Exchange> {
        self.state
            .lock()
            .map(|st| st.served.clone())
            .unwrap_or_default()
    }

    async fn serve(&self, conn: TcpStream) {
        let mut reader = BufReader::new(conn);
        // bb7's overhead before a request ends when its first byte is here, not when
        // the connection was accepted or the body read.
        if !matches!(reader.fill_buf().await, Ok(b) if !b.is_empty()) {
            return;
        }
        let first_byte = Instant::now();
        let Some((path, body)) = read_request(&mut reader).await else {
            return;
        };
        // Only model calls are traced; a question about the server (bb7 asks a local
        // server its context size) is answered 404, as a server without it would.
        if !(path.ends_with("/chat/completions") || path.ends_with("/messages")) {
            let mut conn = reader.into_inner();
            let _ = conn
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            let _ = conn.shutdown().await;
            return;
        }
        let started = Instant::now();
        let generation = self.state.lock().map(|st| st.generation).unwrap_or(0);
        let (status, response, mut exchange) = match &self.upstream {
            Some(up) => {
                self.count_forwarding(1);
                let answer = self.forward(up, &path, &body).await;
                self.count_forwarding(-1);
                answer
            }
            None => self.replay().await,
        };
        exchange.latency_ms = exchange
            .latency_ms
            .max(started.elapsed().as_millis() as u64);
        exchange.sent = serde_json::from_slice(&body).unwrap_or_default();
        exchange.first_byte = Some(first_byte);
        exchange.order = ARRIVALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        exchange.answer_ms = started.elapsed().as_millis() as u64 + exchange.stall_ms;
        // A recording keeps what was sent; a replay keeps the trace's expectation.
        if !self.replaying() {
            exchange.request = exchange.sent.clone();
            exchange.model = exchange
                .sent
                .get("model")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned);
        }
        let stall = Duration::from_millis(exchange.stall_ms);
        // Counted before a stall: bb7 may give up on a slow answer and end the task.
        let mut slot = None;
        if let Ok(mut st) = self.state.lock()
            && st.generation == generation
        {
            slot = Some(st.served.len());
            st.served.push(exchange);
        }
        tokio::time::sleep(stall).await;
        let kind = if status == 200 && response.starts_with("data:") {
            "text/event-stream"
        } else {
            "application/json"
        };
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            response.len()
        );
        let mut conn = reader.into_inner();
        let _ = conn.write_all(head.as_bytes()).await;
        let written = conn.write_all(response.as_bytes()).await.is_ok();
        let last_byte = Instant::now();
        let _ = conn.shutdown().await;
        // An answer bb7 hung up on before its end has no last byte.
        if let (true, Some(i)) = (written, slot)
            && let Ok(mut st) = self.state.lock()
            && st.generation == generation
            && let Some(e) = st.served.get_mut(i)
        {
            e.last_byte = Some(last_byte);
        }
    }

    fn count_forwarding(&self, delta: isize) {
        if let Ok(mut st) = self.state.lock() {
            st.forwarding = st.forwarding.saturating_add_signed(delta);
        }
    }

    async fn replay(&self) -> (u16, String, Exchange) {
        let next = self
            .state
            .lock()
            .ok()
            .and_then(|mut st| st.queue.pop_front());
        let Some(exchange) = next else {
            let message = format!(
                "the trace has no more answers from the {} provider",
                self.provider
            );
            // 400, not 5xx: bb7 would retry a server error.
            let body = serde_json::to_string(&ErrorBody {
                error: ErrorDetail {
                    code: 400,
                    message: &message,
                },
            })
            .unwrap_or_default();
            let missing = Exchange {
                provider: self.provider.clone(),
                status: 400,
                response: body.clone(),
                unscripted: true,
                ..Exchange::default()
            };
            return (400, body, missing);
        };
        (exchange.status, exchange.body(), exchange)
    }

    async fn forward(&self, up: &Upstream, path: &str, body: &[u8]) -> (u16, String, Exchange) {
        // The path bb7 asked for below this endpoint's `/v1`, under the real base URL.
        let rest = path.strip_prefix("/v1").unwrap_or(path);
        let mut req = self
            .http
            .post(format!("{}{rest}", up.base_url.trim_end_matches('/')))
            .header("Content-Type", "application/json")
            .header("X-Title", "bb7 eval")
            .body(body.to_vec());
        match (&up.api_key, up.anthropic) {
            (Some(key), true) => req = req.header("x-api-key", key),
            (Some(key), false) => req = req.bearer_auth(key),
            (None, _) => {}
        }
        if up.anthropic {
            req = req.header(
                "anthropic-version",
                crate::llm::anthropic::ANTHROPIC_VERSION,
            );
        }
        for (k, v) in &up.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let (status, text) = match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let cap = crate::llm::openai::MAX_JSON_BODY_BYTES;
                let (bytes, _) = crate::llm::openai::read_capped(resp, cap)
                    .await
                    .unwrap_or_default();
                (status, String::from_utf8_lossy(&bytes).into_owned())
            }
            Err(e) => {
                // Neither the base URL nor the client's error (which quotes the URL)
                // may carry a `?key=` or `user:pass@` into the trace.
                let message = format!(
                    "the eval could not reach {}: {}",
                    crate::llm::url::redacted(&up.base_url),
                    crate::llm::openai::describe(&e)
                );
                let body = serde_json::to_string(&ErrorBody {
                    error: ErrorDetail {
                        code: 400,
                        message: &message,
                    },
                })
                .unwrap_or_default();
                (400, body)
            }
        };
        let exchange = Exchange {
            provider: self.provider.clone(),
            status,
            response: text.clone(),
            ..Exchange::default()
        };
        (status, text, exchange)
    }
}

/// Reads one HTTP/1.1 request: its path and body (by `Content-Length`).
async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    reader.read_line(&mut line).await.ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).await.ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some((path, body))
}
