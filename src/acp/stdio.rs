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

/// What the JSON-RPC layer reads in place of a line that is not UTF-8 (not JSON, so
/// it answers a parse error).
const NOT_UTF8: &str = "(a line that is not UTF-8 text)";

/// What it reads in place of a line over the limit.
const TOO_LONG: &str = "(a line over the length limit)";

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
                buf = Vec::new();
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
        return Ok(Some(TOO_LONG.to_owned()));
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
