//! The ACP transport over stdin/stdout, as the crate's own `Stdio` but robust to what
//! a client may write: each line is cut out of the bytes read, never holding more than
//! [`crate::protocol::MAX_LINE_BYTES`] of one, and a line that is not UTF-8 or is over
//! that limit reaches the JSON-RPC layer as a line that is not JSON, which answers it
//! with the standard parse error (-32700, `id` null) and reads on. The crate's `Stdio`
//! ends the connection, and every session on it, at the first such line.

use std::pin::Pin;

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

/// What the JSON-RPC layer reads in place of a line over the limit whose start is
/// `head`. A client's *response* (an `id`, no `method`: the editor's text of a
/// 70 MB buffer answering `fs/read_text_file`) becomes an error response to the same
/// request, naming the limit, so the request bb7 waits on fails at once and by name
/// (docs/PROTOCOL.md, "bb7 acp"); anything else is a line that is not JSON.
fn instead_of_too_long(head: &[u8]) -> String {
    let id = member_at_start(head, "id").filter(|id| id.is_string() || id.is_number());
    match id {
        Some(id) if member_at_start(head, "method").is_none() => {
            let reply = serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": TOO_LONG_CODE, "message": too_long_message()},
            });
            reply.to_string()
        }
        _ => TOO_LONG.to_owned(),
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
async fn next_line(r: &mut BufReader<Stdin>) -> std::io::Result<Option<String>> {
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
    Ok(Some(
        String::from_utf8(buf).unwrap_or_else(|_| NOT_UTF8.to_owned()),
    ))
}

/// Where the JSON-RPC layer writes its lines.
type Outgoing = Pin<Box<dyn Sink<String, Error = std::io::Error> + Send>>;
/// Where it reads them.
type Incoming = Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>>;

/// The transport: lines of stdin in, lines to stdout out.
pub(super) fn transport() -> Lines<Outgoing, Incoming> {
    let incoming =
        futures_util::stream::unfold(Some(BufReader::new(tokio::io::stdin())), async |state| {
            let mut r = state?;
            match next_line(&mut r).await {
                Ok(Some(line)) => Some((Ok(line), Some(r))),
                Ok(None) => None,
                Err(e) => Some((Err(e), None)),
            }
        });
    let outgoing =
        futures_util::sink::unfold(tokio::io::stdout(), async |mut out, line: String| {
            out.write_all(line.as_bytes()).await?;
            out.write_all(b"\n").await?;
            out.flush().await?;
            Ok::<_, std::io::Error>(out)
        });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}
