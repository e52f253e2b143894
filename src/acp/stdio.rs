//! The ACP transport over stdin/stdout, as the crate's own `Stdio` but robust to what
//! a client may write: each line is cut out of the bytes read, never holding more than
//! [`crate::protocol::MAX_LINE_BYTES`] of one. A line that is not UTF-8 reaches the
//! JSON-RPC layer as a line that is not JSON, which answers it with the standard parse
//! error (-32700, `id` null) and reads on; a line over the limit is answered with the
//! id it starts with where it has one (see `instead_of_too_long`). The crate's `Stdio`
//! ends the connection, and every session on it, at the first such line.

use std::pin::Pin;
use std::sync::Arc;

use agent_client_protocol::Lines;
use futures_util::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Stdin};

use crate::protocol::MAX_LINE_BYTES;
use crate::protocol::head::{HEAD_BYTES, member_at_start};

/// What the JSON-RPC layer reads in place of a line that is not UTF-8 (not JSON, so
/// it answers a parse error).
const NOT_UTF8: &str = "(a line that is not UTF-8 text)";

/// What it reads in place of a line over the limit.
const TOO_LONG: &str = "(a line over the length limit)";

/// What becomes of a line over the limit.
enum OverLong {
    /// The JSON-RPC layer reads this line in its place.
    Read(String),
    /// bb7 writes this answer to the client itself and reads on.
    Answer(String),
}

/// A JSON-RPC 2.0 error response (JSON-RPC 2.0, section 5).
#[derive(serde::Serialize)]
struct ErrorResponse<'a> {
    /// Always "2.0".
    jsonrpc: &'static str,
    /// The id of the request or response the line began with.
    id: &'a serde_json::Value,
    /// The error.
    error: ErrorObject,
}

/// A JSON-RPC 2.0 error object (section 5.1).
#[derive(serde::Serialize)]
struct ErrorObject {
    /// [`TOO_LONG_CODE`].
    code: i32,
    /// Names the limit.
    message: String,
}

/// The error response with `id`, naming the limit in `message`.
fn error_line(id: &serde_json::Value, message: String) -> String {
    let e = ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: ErrorObject {
            code: TOO_LONG_CODE,
            message,
        },
    };
    serde_json::to_string(&e).unwrap_or_else(|_| TOO_LONG.to_owned())
}

/// What becomes of a line over the limit whose start is `head`.
///
/// - A client's *response* (an `id`, no `method`: the editor's text of a 70 MB
///   buffer answering `fs/read_text_file`) is read as an error response to the same
///   request, naming the limit, so the request bb7 waits on fails at once and by name.
/// - A client's *request* whose `id` comes before the long part is answered here,
///   with that id, so the client waiting on it gets its answer (docs/PROTOCOL.md,
///   "bb7 acp"). The code is -32600 "Invalid Request", not -32700 "Parse error":
///   JSON-RPC 2.0 (section 5.1) keeps -32700 for invalid JSON, which bb7 did not
///   find (it did not read the line), and its rule that the id is null applies only
///   when the id could not be detected, and here it was.
/// - Anything else (a notification, an id bb7 cannot read from the start) is read as
///   a line that is not JSON: a parse error with `id` null.
fn instead_of_too_long(head: &[u8]) -> OverLong {
    let id = member_at_start(head, "id").filter(|id| id.is_string() || id.is_number());
    match id {
        Some(id) if member_at_start(head, "method").is_none() => {
            OverLong::Read(error_line(&id, too_long_message()))
        }
        Some(id) => OverLong::Answer(error_line(
            &id,
            format!(
                "the request is over the {} MiB line limit",
                MAX_LINE_BYTES / (1024 * 1024)
            ),
        )),
        None => OverLong::Read(TOO_LONG.to_owned()),
    }
}

/// The JSON-RPC error code of a client's answer over the line limit (-32600, the
/// specification's "Invalid Request").
pub(super) const TOO_LONG_CODE: i32 = -32600;

/// The message of a client's answer over the line limit.
pub(super) fn too_long_message() -> String {
    format!(
        "the editor's answer is over the {} MiB line limit",
        MAX_LINE_BYTES / (1024 * 1024)
    )
}

/// The next line of `r`: `None` at the end of the input.
async fn next_line(r: &mut BufReader<Stdin>) -> std::io::Result<Option<OverLong>> {
    let mut buf = Vec::new();
    let mut too_long = false;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            if buf.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i, Some(i + 1)),
            None => (available.len(), None),
        };
        if !too_long {
            if buf.len() + take > MAX_LINE_BYTES {
                too_long = true;
                // Only the start is kept, to read the message's `id` from.
                buf.truncate(HEAD_BYTES);
                let room = HEAD_BYTES.saturating_sub(buf.len()).min(take);
                buf.extend_from_slice(&available[..room]);
                buf.shrink_to_fit();
            } else {
                buf.extend_from_slice(&available[..take]);
            }
        }
        let consumed = done.unwrap_or(take);
        r.consume(consumed);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Ok(Some(instead_of_too_long(&buf)));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(OverLong::Read(
        String::from_utf8(buf).unwrap_or_else(|_| NOT_UTF8.to_owned()),
    )))
}

/// Where the JSON-RPC layer writes its lines.
type Outgoing = Pin<Box<dyn Sink<String, Error = std::io::Error> + Send>>;
/// Where it reads them.
type Incoming = Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>>;

/// Writes `line` and a newline to `out` and flushes.
async fn write_line(out: &SharedOut, line: &str) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line.as_bytes()).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// Stdout, shared by the JSON-RPC layer's lines and the answers the reader writes
/// itself, one whole line at a time.
type SharedOut = Arc<tokio::sync::Mutex<tokio::io::Stdout>>;

/// The transport: lines of stdin in, lines to stdout out.
pub(super) fn transport() -> Lines<Outgoing, Incoming> {
    let out: SharedOut = Arc::new(tokio::sync::Mutex::new(tokio::io::stdout()));
    let reader_out = out.clone();
    let incoming =
        futures_util::stream::unfold(Some(BufReader::new(tokio::io::stdin())), move |state| {
            let out = reader_out.clone();
            async move {
                let mut r = state?;
                loop {
                    match next_line(&mut r).await {
                        Ok(Some(OverLong::Read(line))) => return Some((Ok(line), Some(r))),
                        Ok(Some(OverLong::Answer(line))) => {
                            if let Err(e) = write_line(&out, &line).await {
                                return Some((Err(e), None));
                            }
                        }
                        Ok(None) => return None,
                        Err(e) => return Some((Err(e), None)),
                    }
                }
            }
        });
    let outgoing = futures_util::sink::unfold(out, async |out, line: String| {
        write_line(&out, &line).await?;
        Ok::<_, std::io::Error>(out)
    });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}
