//! Cutting request lines out of a byte stream (stdin, the command line's pipe, a
//! guest's socket), never holding more than `protocol::MAX_LINE_BYTES` of one.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::protocol::MAX_LINE_BYTES;
use crate::protocol::head::{HEAD_BYTES, request_id_at_start};

/// One line read from the client.
pub(super) enum Line {
    /// A complete line, without its `\n` (and `\r`).
    Text(Vec<u8>),
    /// A line over the limit, skipped; the request id its start names, if any
    /// (`protocol::head`).
    TooLong(Option<String>),
    /// The end of the input.
    Eof,
}

/// Cuts `\n`-terminated lines out of the bytes read so far, never holding more than
/// [`MAX_LINE_BYTES`] of one; shared by the async reader and the stdin thread.
#[derive(Default)]
pub(super) struct LineCutter {
    buf: Vec<u8>,
    too_long: bool,
    /// The start of an over-long line, to read its request id from.
    head: Vec<u8>,
}

impl LineCutter {
    /// Takes what it can of `available`: how many bytes it consumed, and the line they
    /// completed, if any.
    pub(super) fn take(&mut self, available: &[u8]) -> (usize, Option<Line>) {
        let (take, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i, Some(i + 1)),
            None => (available.len(), None),
        };
        if !self.too_long {
            if self.buf.len() + take > MAX_LINE_BYTES {
                self.too_long = true;
                let mut head = std::mem::take(&mut self.buf);
                let room = HEAD_BYTES.saturating_sub(head.len()).min(take);
                head.extend_from_slice(&available[..room]);
                head.truncate(HEAD_BYTES);
                head.shrink_to_fit();
                self.head = head;
            } else {
                self.buf.extend_from_slice(&available[..take]);
            }
        }
        let Some(consumed) = done else {
            return (take, None);
        };
        let mut buf = std::mem::take(&mut self.buf);
        if std::mem::take(&mut self.too_long) {
            return (consumed, Some(self.too_long_line()));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        (consumed, Some(Line::Text(buf)))
    }

    /// The over-long line just skipped, with the id its start names.
    fn too_long_line(&mut self) -> Line {
        let head = std::mem::take(&mut self.head);
        Line::TooLong(request_id_at_start(&head))
    }

    /// The bytes of the unfinished line held now (none once it went over the limit:
    /// only its start is kept then).
    pub(super) fn held(&self) -> usize {
        self.buf.len()
    }

    /// The request id the start of the unfinished line names, if any.
    pub(super) fn id_so_far(&self) -> Option<String> {
        let held = if self.too_long { &self.head } else { &self.buf };
        request_id_at_start(&held[..held.len().min(HEAD_BYTES)])
    }

    /// The input ended: the unterminated rest, if any, is a last line.
    pub(super) fn finish(&mut self) -> Line {
        let buf = std::mem::take(&mut self.buf);
        match (std::mem::take(&mut self.too_long), buf.is_empty()) {
            (true, _) => self.too_long_line(),
            (false, true) => Line::Eof,
            (false, false) => Line::Text(buf),
        }
    }
}

/// Reads `\n`-terminated lines from an async reader (the command line's in-memory pipe).
pub(super) struct LineReader<R> {
    /// The reader.
    pub(super) inner: BufReader<R>,
    /// The line being cut.
    pub(super) cutter: LineCutter,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// The next line.
    pub(super) async fn next(&mut self) -> std::io::Result<Line> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(self.cutter.finish());
            }
            let (consumed, line) = self.cutter.take(available);
            self.inner.consume(consumed);
            if let Some(line) = line {
                return Ok(line);
            }
        }
    }
}

/// The error for a request line over [`MAX_LINE_BYTES`]; it is sent with the request
/// id the line's start names (`protocol::head`).
pub(super) fn too_long() -> crate::error::Error {
    crate::error::Error::invalid(format!(
        "Request line too long: the limit is {} MiB; nothing of it was done",
        MAX_LINE_BYTES / (1024 * 1024)
    ))
}
