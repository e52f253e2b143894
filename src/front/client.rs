//! A protocol session with a server running in the same process on in-memory pipes,
//! so the command line does exactly what an editor session does.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::error::{ErrorCode, ErrorData};
use crate::protocol::action::Action;
use crate::protocol::events::{HolderLeft, PeerChange, TurnMessage};
use crate::protocol::{MAX_LINE_BYTES, MessageKind};

/// Exit statuses of the one-shot commands (listed in `bb7 --help`).
pub mod exit {
    /// A command failed (the message on stderr says why).
    pub const FAILED: u8 = 1;
    /// The command line was wrong (clap's own status for usage errors).
    pub const USAGE: u8 = 2;
    /// Your edits overlap the change: nothing was written to that file.
    pub const CONFLICT: u8 = 3;
    /// The chat is held by a process that does not answer on its holder socket.
    pub const HELD: u8 = 4;
    /// The answer arrived but the server cut it at its token limit (`bb7 ask`): it is
    /// saved, and its complete changes staged, but it is not whole.
    pub const TRUNCATED: u8 = 5;
    /// Stopped with Ctrl-C (128 + SIGINT, as shells report it).
    pub const INTERRUPTED: u8 = 130;
}

/// A failed command: the message for stderr and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong, for the user (printed after `bb7: `).
    pub message: String,
    /// Exit status, one of [`exit`].
    pub status: u8,
    /// The server's error code, when the failure is an `error` reply.
    pub code: Option<ErrorCode>,
    /// The error's facts (conflicting lines, the holder of a chat), when it sent any.
    pub data: Option<ErrorData>,
}

impl Failure {
    /// A failure with exit status 1.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            status: exit::FAILED,
            code: None,
            data: None,
        }
    }

    /// The server's error `code` with its `message`; the exit status follows the code.
    pub fn server(code: Option<ErrorCode>, message: impl Into<String>) -> Failure {
        let status = match code {
            Some(ErrorCode::Conflict) => exit::CONFLICT,
            Some(ErrorCode::Locked) => exit::HELD,
            Some(ErrorCode::Cancelled) => exit::INTERRUPTED,
            _ => exit::FAILED,
        };
        Failure {
            message: message.into(),
            status,
            code,
            data: None,
        }
    }

    /// This failure with exit status `status`.
    pub fn with_status(self, status: u8) -> Failure {
        Failure { status, ..self }
    }

    /// Whether the server answered with error code `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code == Some(code)
    }
}

/// The result of a command step.
pub type Res<T> = Result<T, Failure>;

/// The envelope of a request line: its id first, so that even a line the server
/// refuses whole (over `protocol::MAX_LINE_BYTES`) is answered with it
/// (`protocol::head`), then the request.
#[derive(Serialize)]
struct Line<'a> {
    request_id: &'a str,
    #[serde(flatten)]
    req: &'a Action,
}

/// The refusal of a request whose line would be over [`MAX_LINE_BYTES`]: it names
/// what made it so big (the file, the attachment, the message) and its size, before
/// anything is sent.
fn too_large(req: &Action, line_bytes: usize) -> Failure {
    let what = match req {
        Action::ContextAdd(p) => Some((format!("file {}", p.path.0), p.content.len())),
        Action::ContextUpdate(p) => Some((format!("file {}", p.path.0), p.content.len())),
        Action::ContextAddSection(p) => Some((format!("section of {}", p.path.0), p.content.len())),
        Action::ContextAttach(p) => Some((format!("attachment {}", p.name.0), p.content.len())),
        Action::Send(p) => Some(("the message".to_owned(), p.content.len())),
        _ => None,
    };
    let limit = MAX_LINE_BYTES / (1024 * 1024);
    let mib = |n: usize| format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0));
    let message = match what {
        Some((what, size)) => format!(
            "{} is too large to send: {} as text, {} as a request line (JSON escaping \
             grows control characters and quotes); the limit is {limit} MiB",
            // A file name may hold control characters: never raw to a terminal.
            what.chars()
                .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
                .collect::<String>(),
            mib(size),
            mib(line_bytes)
        ),
        None => format!(
            "request {} is too large to send: {}; the limit is {limit} MiB",
            req.name(),
            mib(line_bytes)
        ),
    };
    Failure::new(message)
}

/// An `error` reply, as far as the command line reads it.
#[derive(serde::Deserialize)]
struct ErrorReply {
    #[serde(default)]
    message: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    data: Option<ErrorData>,
}

/// An `error` reply read: its message and its code when this build knows it.
struct ServerError {
    message: String,
    code: Option<ErrorCode>,
    data: Option<ErrorData>,
}

/// Reads an `error` reply leniently: whatever else it carries, its message and code
/// reach the user, never a decoding error of the command line.
fn error_reply(msg: Value) -> ServerError {
    let e: ErrorReply = serde_json::from_value(msg).unwrap_or(ErrorReply {
        message: "error".into(),
        code: None,
        data: None,
    });
    ServerError {
        message: e.message,
        // Codes this bb7 does not know are kept out, not an error.
        code: e
            .code
            .and_then(|c| serde_json::from_value::<ErrorCode>(Value::String(c)).ok()),
        data: e.data,
    }
}

/// A title bb7 made for a chat (`title_updated`, sent without a request id).
#[derive(Debug, Clone, PartialEq)]
pub struct Titled {
    /// The chat.
    pub chat_id: String,
    /// Its new name.
    pub title: String,
}

/// A protocol session with a server: one running in this process on in-memory pipes,
/// or the process that holds the chat, through its holder socket.
pub struct Client {
    input: Box<dyn AsyncWrite + Unpin + Send>,
    lines: mpsc::UnboundedReceiver<std::io::Result<String>>,
    notes: Option<mpsc::UnboundedReceiver<PeerChange>>,
    titles: Option<mpsc::UnboundedReceiver<Titled>>,
    /// Messages of other processes' turns on the chat this session holds.
    peer_turns: Option<mpsc::UnboundedReceiver<PeerTurn>>,
    /// The holder of the chat followed here let it go (`holder_left`), as it happens.
    left: Option<mpsc::UnboundedReceiver<HolderLeft>>,
    /// Whether a `holder_left` came (or, on a guest's connection, the holder closed it),
    /// and its reason.
    left_seen: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    next: u64,
    /// Messages of requests read later ([`Client::keep`]) that arrived while another
    /// request was waited on, oldest first, by request id.
    kept: HashMap<String, VecDeque<Value>>,
}

impl Client {
    /// Starts a server on in-memory pipes (needs a Tokio runtime).
    pub fn start() -> Client {
        let (client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        tokio::spawn(crate::server::serve(server_in, server_out));
        Client::over(client_in, client_out)
    }

    /// A session with the process holding a chat, over its holder socket
    /// (`server::guests`, docs/PROTOCOL.md "One chat, many front-ends").
    pub fn guest(stream: tokio::net::UnixStream) -> Client {
        let (read, write) = stream.into_split();
        Client::over_as(write, read, true)
    }

    /// A session that writes requests to `input` and reads messages from `output`: a
    /// task reads every line as it comes, so the `peer_change` notes and the
    /// `title_updated` events of a quiet session reach [`Client::notes`] and
    /// [`Client::titles`] while no request waits.
    fn over(
        input: impl AsyncWrite + Unpin + Send + 'static,
        output: impl AsyncRead + Unpin + Send + 'static,
    ) -> Client {
        Client::over_as(input, output, false)
    }

    /// [`Client::over`]; `guest`: the other end is a holder socket, whose close is
    /// told as a `holder_left` (`quit`) unless the holder said so first.
    fn over_as(
        input: impl AsyncWrite + Unpin + Send + 'static,
        output: impl AsyncRead + Unpin + Send + 'static,
        guest: bool,
    ) -> Client {
        let (tx, lines) = mpsc::unbounded_channel();
        let (left_tx, left) = mpsc::unbounded_channel();
        let left_seen = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
        let seen = left_seen.clone();
        // Records the first `holder_left` only; whether this one was the first.
        let first = move |reason: &str| {
            seen.lock().is_ok_and(|mut r| {
                let first = r.is_none();
                r.get_or_insert_with(|| reason.to_owned());
                first
            })
        };
        let (note_tx, notes) = mpsc::unbounded_channel();
        let (title_tx, titles) = mpsc::unbounded_channel();
        let (peer_tx, peer_turns) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(output).lines();
            loop {
                let line = match reader.next_line().await {
                    Ok(Some(l)) => Ok(l),
                    Ok(None) => {
                        if guest && first("quit") {
                            let _ = left_tx.send(HolderLeft {
                                chat_id: String::new(),
                                reason: "quit".to_owned(),
                                pid: None,
                            });
                        }
                        break;
                    }
                    Err(e) => Err(e),
                };
                if let Ok(l) = &line
                    && l.starts_with(r#"{"type":"holder_left""#)
                    && let Ok(left) = serde_json::from_str::<HolderLeft>(l)
                {
                    if first(&left.reason) {
                        let _ = left_tx.send(left);
                    }
                    continue;
                }
                if let Ok(l) = &line
                    && l.starts_with(r#"{"type":"peer_change""#)
                    && let Ok(note) = serde_json::from_str::<PeerChange>(l)
                {
                    let _ = note_tx.send(note);
                    continue;
                }
                // A guest's turn mirrored to the holder: no request of this session
                // reads it (docs/PROTOCOL.md, "One chat, many front-ends").
                if let Ok(l) = &line
                    && let Some(turn) = peer_turn(l)
                {
                    let _ = peer_tx.send(turn);
                    continue;
                }
                // No request reads a title (it has no request id): it goes to `titles`.
                if let Ok(l) = &line
                    && l.starts_with(r#"{"type":"title_updated""#)
                    && let Ok(TurnMessage::TitleUpdated { chat_id, title }) =
                        serde_json::from_str::<TurnMessage>(l)
                {
                    let _ = title_tx.send(Titled { chat_id, title });
                    continue;
                }
                let end = line.is_err();
                if tx.send(line).is_err() || end {
                    break;
                }
            }
        });
        Client {
            input: Box::new(input),
            lines,
            notes: Some(notes),
            titles: Some(titles),
            peer_turns: Some(peer_turns),
            left: Some(left),
            left_seen,
            next: 0,
            kept: HashMap::new(),
        }
    }

    /// Whether the other end has gone (a holder that quit): nothing more can be read,
    /// and a request would fail with "bb7 stopped".
    pub fn closed(&self) -> bool {
        self.lines.is_closed() && self.lines.is_empty()
    }

    /// The `peer_change` notes of this session's server: what other bb7 processes did
    /// to the chat it holds. `None` after the first call.
    pub fn notes(&mut self) -> Option<mpsc::UnboundedReceiver<PeerChange>> {
        self.notes.take()
    }

    /// The messages of other processes' turns on the chat this session's server
    /// holds, as they stream (their `peer:` ids). `None` after the first call.
    pub fn peer_turns(&mut self) -> Option<mpsc::UnboundedReceiver<PeerTurn>> {
        self.peer_turns.take()
    }

    /// Why the holder of the chat followed here let it go (`switched`, `quit`), once it
    /// did: the session should select the chat again before its next request.
    pub fn holder_left(&self) -> Option<String> {
        self.left_seen.lock().ok().and_then(|r| r.clone())
    }

    /// The `holder_left` of the chat followed here, as it comes (once). `None` after
    /// the first call.
    pub fn left(&mut self) -> Option<mpsc::UnboundedReceiver<HolderLeft>> {
        self.left.take()
    }

    /// The titles this session's server makes for its chats (`title_updated`), as they
    /// are made, whether or not a request waits. `None` after the first call.
    pub fn titles(&mut self) -> Option<mpsc::UnboundedReceiver<Titled>> {
        self.titles.take()
    }

    /// Writes `req` with a fresh request id; returns the id.
    pub async fn send(&mut self, req: &Action) -> Res<String> {
        self.next += 1;
        let id = format!("cli{}", self.next);
        let mut line = serde_json::to_string(&Line {
            req,
            request_id: &id,
        })
        .map_err(|e| Failure::new(format!("cannot encode a request: {e}")))?;
        if line.len() > MAX_LINE_BYTES {
            return Err(too_large(req, line.len()));
        }
        line.push('\n');
        self.input
            .write_all(line.as_bytes())
            .await
            .map_err(|e| Failure::new(format!("bb7 stopped: {e}")))?;
        Ok(id)
    }

    /// Keeps the messages of request `id` that arrive while another request is waited
    /// on, for a later [`Client::next_for`]: a queued `send` whose answer may start as
    /// soon as the one before it ends. Kept until its final message is read or
    /// [`Client::forget`].
    pub fn keep(&mut self, id: &str) {
        self.kept.entry(id.to_owned()).or_default();
    }

    /// Stops keeping request `id`'s messages and drops those kept (a cancelled queued
    /// question).
    pub fn forget(&mut self, id: &str) {
        self.kept.remove(id);
    }

    /// The next message for request `id` (messages for other requests and events
    /// without a request id are skipped, except those of requests [`Client::keep`]
    /// holds). Cancel-safe: no line is lost when dropped.
    pub async fn next_for(&mut self, id: &str) -> Res<Value> {
        let msg = match self.kept.get_mut(id).and_then(VecDeque::pop_front) {
            Some(msg) => msg,
            None => self.read_for(id).await?,
        };
        if self.kept.contains_key(id) && MessageKind::of(&msg).is_final() {
            self.kept.remove(id);
        }
        Ok(msg)
    }

    /// Reads lines until one for request `id`, keeping those of kept requests.
    async fn read_for(&mut self, id: &str) -> Res<Value> {
        loop {
            let line = self
                .lines
                .recv()
                .await
                .ok_or_else(|| Failure::new("bb7 stopped"))?
                .map_err(|e| Failure::new(format!("bb7 stopped: {e}")))?;
            let msg: Value =
                serde_json::from_str(&line).map_err(|e| Failure::new(format!("bad reply: {e}")))?;
            match msg.get("request_id").and_then(Value::as_str) {
                Some(of) if of == id => return Ok(msg),
                Some(of) => {
                    if let Some(queue) = self.kept.get_mut(of) {
                        queue.push_back(msg);
                    }
                }
                None => {}
            }
        }
    }

    /// The next stream message of `send` request `id`, in the server's own type.
    /// Cancel-safe like [`Client::next_for`].
    pub async fn next_stream(&mut self, id: &str) -> Res<TurnMessage> {
        loop {
            let msg = self.next_for(id).await?;
            let kind = MessageKind::of(&msg);
            // A `send` refused before its stream starts (no API key, no active chat,
            // a held chat) is a plain `error` reply without `chat_id`: it is the
            // server's own error, read as such.
            if kind == MessageKind::Error && msg.get("chat_id").is_none() {
                let e = error_reply(msg);
                return Ok(TurnMessage::Error {
                    message: e.message,
                    code: e.code.unwrap_or(ErrorCode::Internal),
                    chat_id: String::new(),
                });
            }
            match serde_json::from_value(msg) {
                Ok(m) => return Ok(m),
                // A malformed final message still ends the stream; any other is
                // skipped like a type this build does not know.
                Err(e) if kind.is_final() => {
                    return Ok(TurnMessage::Error {
                        message: format!("bb7 sent a malformed {kind:?} message: {e}"),
                        code: ErrorCode::Internal,
                        chat_id: String::new(),
                    });
                }
                Err(_) => continue,
            }
        }
    }

    /// Sends `req` and decodes its reply as `T`; an `error` reply is a [`Failure`]
    /// with its message (prefixed by its code for `conflict`).
    pub async fn call<T: DeserializeOwned>(&mut self, req: Action) -> Res<T> {
        let id = self.send(&req).await?;
        let msg = self.next_for(&id).await?;
        if msg.get("type").and_then(Value::as_str) == Some("error") {
            let ServerError {
                message,
                code,
                data,
            } = error_reply(msg);
            // An apply that could not merge names its lines in `data`; say what it is.
            let merge_conflict = data.as_ref().is_some_and(|d| d.path.is_some());
            let message = match code {
                Some(ErrorCode::Conflict) if merge_conflict => format!("conflict: {message}"),
                _ => message,
            };
            return Err(Failure {
                data,
                ..Failure::server(code, message)
            });
        }
        serde_json::from_value(msg).map_err(|e| Failure::new(format!("bad reply: {e}")))
    }
}

/// One message of another process's turn on the held chat.
#[derive(Debug, Clone)]
pub struct PeerTurn {
    /// Its `peer:…` request id, as the `peer_change` note names it.
    pub id: String,
    /// The message.
    pub message: TurnMessage,
}

/// `line` as a message of a mirrored turn: its `request_id` starts with
/// [`crate::protocol::outbox::PEER_ID_PREFIX`]. `None` for any other line.
fn peer_turn(line: &str) -> Option<PeerTurn> {
    let prefix = format!(
        r#""request_id":"{}"#,
        crate::protocol::outbox::PEER_ID_PREFIX
    );
    if !line.contains(&prefix) {
        return None;
    }
    let v: Value = serde_json::from_str(line).ok()?;
    let id = v.get("request_id")?.as_str()?;
    if !id.starts_with(crate::protocol::outbox::PEER_ID_PREFIX) {
        return None;
    }
    let id = id.to_owned();
    let message = serde_json::from_value(v).ok()?;
    Some(PeerTurn { id, message })
}
