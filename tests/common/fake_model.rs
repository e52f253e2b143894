//! An in-process fake OpenAI-compatible server on 127.0.0.1 that answers the way
//! OpenRouter does (keep-alive comments, role chunk, deltas, tool-call fragments,
//! usage with cost, `[DONE]`), scripted per test, and records every request.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One step of a scripted SSE response.
#[derive(Debug, Clone)]
pub enum Step {
    /// `data: <payload>` and a blank line.
    Data(String),
    /// A comment line (`: OPENROUTER PROCESSING`).
    Comment,
    /// Wait before the next step.
    Sleep(Duration),
    /// Close the connection at once (no `[DONE]`).
    Drop,
    /// Send nothing more until the test opens the gate ([`Gate::open`]): a stall that
    /// lasts exactly as long as the test needs, however slow the machine.
    Wait(Gate),
}

/// A stall in a scripted response that the test ends ([`Step::Wait`]).
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets every response waiting at this gate go on.
    pub fn open(&self) {
        *self.0.0.lock().unwrap() = true;
        self.0.1.notify_all();
    }

    /// Blocks until the gate is opened; a hang guard of two minutes (the harness's
    /// `TIMEOUT`; this file is also built alone, by the benches) lets a test that
    /// failed before opening it end.
    fn pass(&self) {
        let (open, cv) = &*self.0;
        let guard = open.lock().unwrap();
        let _ = cv
            .wait_timeout_while(guard, Duration::from_secs(120), |o| !*o)
            .unwrap();
    }
}

/// A scripted answer to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200 text/event-stream` with these steps.
    Sse(Vec<Step>),
    /// Any status with a body.
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Raw bytes as a server sent them (status line, headers, body, chunked encoding
    /// included), written piece by piece with `pause` between pieces; the connection
    /// is closed after the last one.
    Raw {
        pieces: Vec<Vec<u8>>,
        pause: Duration,
    },
    /// Accept the request and send nothing for this long, then close.
    Silent(Duration),
    /// `head` (status line and headers, the blank line included), then `fill`
    /// repeated without end, until the client stops reading.
    Endless { head: String, fill: Vec<u8> },
}

/// A recorded server response from `tests/fixtures/wire/` (see its README), byte for
/// byte.
pub fn wire_fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/wire")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `raw` cut into its head (status line and headers) and each HTTP/1.1 chunk of a
/// chunked body (RFC 9112, section 7.1), every byte kept: joined, the pieces are `raw`.
pub fn wire_pieces(raw: &[u8]) -> Vec<Vec<u8>> {
    let find = |from: usize, pat: &[u8]| {
        raw[from..]
            .windows(pat.len())
            .position(|w| w == pat)
            .map(|i| from + i)
    };
    let head_end = find(0, b"\r\n\r\n").expect("an HTTP head") + 4;
    let mut pieces = vec![raw[..head_end].to_vec()];
    let chunked = String::from_utf8_lossy(&raw[..head_end])
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    if !chunked {
        pieces.push(raw[head_end..].to_vec());
        return pieces;
    }
    let mut at = head_end;
    while at < raw.len() {
        let Some(line_end) = find(at, b"\r\n") else {
            pieces.push(raw[at..].to_vec());
            break;
        };
        let size = usize::from_str_radix(String::from_utf8_lossy(&raw[at..line_end]).trim(), 16)
            .unwrap_or(0);
        let end = (line_end + 2 + size + 2).min(raw.len());
        pieces.push(raw[at..end].to_vec());
        at = end;
    }
    pieces
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

/// Answers a request when no reply is queued (used by the `fake_openai` example).
pub type Fallback = Box<dyn Fn(&Recorded) -> Option<Reply> + Send>;

#[derive(Default)]
struct State {
    fallback: Option<Fallback>,
    streams: VecDeque<Reply>,
    completions: VecDeque<Reply>,
    models: Option<Reply>,
    credits: Option<Reply>,
    requests: Vec<Recorded>,
    /// When each `data:` step was written (for latency measurements).
    sent_at: Vec<Instant>,
    /// Simulate a provider's prompt cache in the usage chunks.
    cache: bool,
    /// The prompt text of the last chat request and where its cached prefixes end.
    last_prompt: String,
    last_breakpoints: Vec<usize>,
}

/// The running fake server.
#[derive(Clone)]
pub struct FakeModel {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl FakeModel {
    pub fn start() -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/api/v1", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { break };
                let st = st.clone();
                std::thread::spawn(move || serve(conn, st));
            }
        });
        FakeModel { url, state }
    }

    /// Queues an answer for the next streaming chat request.
    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().streams.push_back(reply);
    }

    /// Queues a streamed response made of these SSE steps.
    pub fn push_sse(&self, steps: Vec<Step>) {
        self.push(Reply::Sse(steps));
    }

    /// Queues an answer for the next non-streaming chat request (titles).
    pub fn push_completion(&self, text: &str) {
        let body = json!({"id": "gen-t", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
        self.state
            .lock()
            .unwrap()
            .completions
            .push_back(Reply::Http {
                status: 200,
                headers: vec![],
                body: body.to_string(),
            });
    }

    /// Sets the answer source used when the queue is empty.
    pub fn set_fallback(&self, f: Fallback) {
        self.state.lock().unwrap().fallback = Some(f);
    }

    pub fn set_models(&self, reply: Reply) {
        self.state.lock().unwrap().models = Some(reply);
    }

    pub fn set_credits(&self, reply: Reply) {
        self.state.lock().unwrap().credits = Some(reply);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Bodies of the chat-completion requests, in order.
    pub fn chat_bodies(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body)
            .collect()
    }

    /// Makes the usage chunk of every streamed answer report what a provider's prompt
    /// cache would: `prompt_tokens` (4 bytes a token) of the request's prompt text, and
    /// `cached_tokens` for the prefix it shares with the previous request. Models
    /// `anthropic/…` read only up to a `cache_control` breakpoint of the previous request
    /// and report `cache_write_tokens` up to their own last one; others cache any shared
    /// prefix of at least 1,024 tokens.
    pub fn simulate_cache(&self) {
        self.state.lock().unwrap().cache = true;
    }

    pub fn sent_at(&self) -> Vec<Instant> {
        self.state.lock().unwrap().sent_at.clone()
    }
}

/// The prompt text of a chat request: every message's text (a string, or its parts'
/// texts) in order, as the provider's cache sees it.
pub fn prompt_text(body: &Value) -> String {
    prompt_parts(body).into_iter().map(|(t, _)| t).collect()
}

/// The texts of a request's messages, part by part, with whether a part carries a
/// `cache_control` breakpoint.
fn prompt_parts(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::String(s) => out.push((s.clone(), false)),
            Value::Array(parts) => {
                for p in parts {
                    let text = p["text"].as_str().unwrap_or("").to_owned();
                    out.push((text, p.get("cache_control").is_some()));
                }
            }
            _ => {}
        }
    }
    out
}

/// `cache_control` markers of a request.
pub fn breakpoints(body: &Value) -> usize {
    prompt_parts(body).iter().filter(|(_, b)| *b).count()
}

/// Bytes at the start of `next` equal to the start of `prev`.
pub fn shared_prefix(prev: &str, next: &str) -> usize {
    prev.bytes()
        .zip(next.bytes())
        .take_while(|(a, b)| a == b)
        .count()
}

/// What the simulated cache reports for `body` after a request with `prev` text and
/// breakpoints: (prompt, cached, written) tokens.
fn simulated_usage(body: &Value, prev: &str, prev_marks: &[usize]) -> (u64, u64, u64, Vec<usize>) {
    let parts = prompt_parts(body);
    let text: String = parts.iter().map(|(t, _)| t.as_str()).collect();
    let mut marks = Vec::new();
    let mut at = 0;
    for (t, b) in &parts {
        at += t.len();
        if *b {
            marks.push(at);
        }
    }
    let shared = shared_prefix(prev, &text);
    let anthropic = body["model"]
        .as_str()
        .unwrap_or("")
        .starts_with("anthropic/");
    let cached = if anthropic {
        prev_marks
            .iter()
            .copied()
            .filter(|m| *m <= shared)
            .max()
            .unwrap_or(0)
    } else if shared >= 4096 {
        shared
    } else {
        0
    };
    let written = if anthropic {
        marks.last().copied().unwrap_or(0).saturating_sub(cached)
    } else {
        0
    };
    (
        text.len() as u64 / 4,
        cached as u64 / 4,
        written as u64 / 4,
        marks,
    )
}

/// `HTTP {status}` with a JSON error body of OpenRouter's shape.
pub fn http_error(status: u16, message: &str) -> Reply {
    Reply::Http {
        status,
        headers: vec![],
        body: json!({"error": {"code": status, "message": message}}).to_string(),
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> Step {
    Step::Data(
        json!({"id": "gen-1", "object": "chat.completion.chunk", "model": "fake/model",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string(),
    )
}

pub fn role() -> Step {
    chunk(json!({"role": "assistant", "content": ""}), None)
}
pub fn text(t: &str) -> Step {
    chunk(json!({"content": t}), None)
}
pub fn reasoning(t: &str) -> Step {
    chunk(json!({"reasoning": t}), None)
}
pub fn reasoning_content(t: &str) -> Step {
    chunk(json!({"reasoning_content": t}), None)
}
pub fn finish(reason: &str) -> Step {
    chunk(json!({}), Some(reason))
}
pub fn usage(prompt: u64, completion: u64, cost: f64) -> Step {
    Step::Data(
        json!({"id": "gen-1", "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                         "total_tokens": prompt + completion, "cost": cost,
                         "prompt_tokens_details": {"cached_tokens": 3},
                         "completion_tokens_details": {"reasoning_tokens": 2}}})
        .to_string(),
    )
}
/// A usage chunk rewritten with simulated prompt, cached and written tokens.
fn with_cache_usage(data: &str, (prompt, cached, written): (u64, u64, u64)) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(data) else {
        return data.to_owned();
    };
    let completion = v["usage"]["completion_tokens"].as_u64().unwrap_or(0);
    v["usage"]["prompt_tokens"] = json!(prompt);
    v["usage"]["total_tokens"] = json!(prompt + completion);
    v["usage"]["prompt_tokens_details"] =
        json!({"cached_tokens": cached, "cache_write_tokens": written});
    v.to_string()
}

pub fn done() -> Step {
    Step::Data("[DONE]".into())
}
pub fn stream_error(code: Value, message: &str) -> Step {
    Step::Data(
        json!({"id": "gen-1", "object": "chat.completion.chunk",
               "error": {"code": code, "message": message},
               "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]})
        .to_string(),
    )
}

/// A tool call streamed as OpenRouter does: a first fragment with id and name, then
/// the arguments JSON cut into `pieces` fragments (split mid-token).
pub fn tool_call(index: usize, name: &str, args: Value, pieces: usize) -> Vec<Step> {
    let args = args.to_string();
    let mut steps = vec![chunk(
        json!({"tool_calls": [{"index": index, "id": format!("call_{index}"), "type": "function",
                               "function": {"name": name, "arguments": ""}}]}),
        None,
    )];
    let chars: Vec<char> = args.chars().collect();
    let size = chars.len().div_ceil(pieces.max(1));
    for piece in chars.chunks(size.max(1)) {
        let frag: String = piece.iter().collect();
        steps.push(chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": frag}}]}),
            None,
        ));
    }
    steps
}

/// A response that streams `before`, then stalls for `pause` before `after` and the end:
/// a turn still running when the test acts.
pub fn paused(before: &[Step], pause: Duration, after: &str) -> Vec<Step> {
    paused_at(before, Step::Sleep(pause), after)
}

/// [`paused`] with the stall a [`Gate`]: `after` is sent once the test opens it.
pub fn gated(before: &[Step], gate: &Gate, after: &str) -> Vec<Step> {
    paused_at(before, Step::Wait(gate.clone()), after)
}

fn paused_at(before: &[Step], stall: Step, after: &str) -> Vec<Step> {
    let mut steps = vec![role()];
    steps.extend(before.iter().cloned());
    steps.extend([stall, text(after), done()]);
    steps
}

/// A complete, ordinary response: role, optional reasoning, text, tool calls, usage.
pub fn response(thinking: &str, answer: &str, calls: Vec<(&str, Value)>) -> Vec<Step> {
    let mut steps = vec![Step::Comment, role()];
    if !thinking.is_empty() {
        steps.push(reasoning(thinking));
    }
    for word in answer.split_inclusive(' ') {
        steps.push(text(word));
    }
    for (i, (name, args)) in calls.into_iter().enumerate() {
        steps.extend(tool_call(i, name, args, 3));
    }
    steps.push(finish("tool_calls"));
    steps.push(usage(100, 20, 0.0015));
    steps.push(done());
    steps
}

fn serve(mut conn: TcpStream, state: Arc<Mutex<State>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_owned();
        let path = parts.next().unwrap_or("").to_owned();
        let mut length = 0;
        let mut authorization = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "authorization" => authorization = Some(v.trim().to_owned()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let streaming = body["stream"] == true;
        let simulated = {
            let mut st = state.lock().unwrap();
            if st.cache && path.ends_with("/chat/completions") && streaming {
                let (prompt, cached, written, marks) =
                    simulated_usage(&body, &st.last_prompt, &st.last_breakpoints);
                st.last_prompt = prompt_text(&body);
                st.last_breakpoints = marks;
                Some((prompt, cached, written))
            } else {
                None
            }
        };
        let reply = {
            let mut st = state.lock().unwrap();
            let rec = Recorded {
                method: method.clone(),
                path: path.clone(),
                authorization,
                body,
            };
            st.requests.push(rec.clone());
            let queued = if path.ends_with("/chat/completions") {
                if streaming {
                    st.streams.pop_front()
                } else {
                    st.completions.pop_front()
                }
            } else if path.ends_with("/models") {
                st.models.clone()
            } else if path.ends_with("/credits") {
                st.credits.clone()
            } else {
                None
            };
            queued.or_else(|| st.fallback.as_ref().and_then(|f| f(&rec)))
        };
        let reply = reply.unwrap_or_else(|| http_error(404, "not scripted"));
        match reply {
            Reply::Raw { pieces, pause } => {
                for (i, piece) in pieces.iter().enumerate() {
                    if i > 0 {
                        std::thread::sleep(pause);
                    }
                    if conn.write_all(piece).and_then(|_| conn.flush()).is_err() {
                        return;
                    }
                }
                let _ = conn.shutdown(std::net::Shutdown::Both);
                return;
            }
            Reply::Silent(d) => {
                std::thread::sleep(d);
                let _ = conn.shutdown(std::net::Shutdown::Both);
                return;
            }
            Reply::Endless { head, fill } => {
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                while conn.write_all(&fill).is_ok() {}
                return;
            }
            Reply::Http {
                status,
                headers,
                body,
            } => {
                // A scripted Content-Type replaces the default one.
                let typed = headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
                let content_type = if typed {
                    ""
                } else {
                    "Content-Type: application/json\r\n"
                };
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\n{content_type}Content-Length: {}\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if conn.write_all(head.as_bytes()).is_err()
                    || conn.write_all(body.as_bytes()).is_err()
                {
                    return;
                }
            }
            Reply::Sse(steps) => {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for step in steps {
                    let step = match (step, simulated) {
                        (Step::Data(d), Some(sim)) if d.contains("\"usage\"") => {
                            Step::Data(with_cache_usage(&d, sim))
                        }
                        (step, _) => step,
                    };
                    let ok = match step {
                        Step::Data(d) => {
                            let r = conn
                                .write_all(format!("data: {d}\r\n\r\n").as_bytes())
                                .and_then(|_| conn.flush());
                            state.lock().unwrap().sent_at.push(Instant::now());
                            r.is_ok()
                        }
                        Step::Comment => conn.write_all(b": OPENROUTER PROCESSING\r\n\r\n").is_ok(),
                        Step::Sleep(d) => {
                            std::thread::sleep(d);
                            true
                        }
                        Step::Wait(gate) => {
                            gate.pass();
                            true
                        }
                        Step::Drop => {
                            let _ = conn.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                    };
                    if !ok {
                        return;
                    }
                }
                let _ = conn.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
}
