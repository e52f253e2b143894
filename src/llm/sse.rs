//! A server-sent events decoder (the `text/event-stream` format of the WHATWG HTML
//! standard, "Server-sent events") that yields the `data` of each event.
//!
//! It scans every byte once: a parser that re-reads a partial line from its start on
//! each network read takes quadratic time on a long `data:` line (a model writing a
//! large file in one tool-call fragment), which stalls a turn for minutes.

use super::{ApiError, EventStream, StreamEvent};

/// Incremental decoder: feed it the body's bytes as they arrive.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes not yet consumed as complete lines.
    buf: Vec<u8>,
    /// Offset in `buf` up to which no line end was found.
    scanned: usize,
    /// The `data` lines of the event being read, joined by `\n`.
    data: String,
    /// Whether the event being read has a `data` field.
    has_data: bool,
}

impl SseDecoder {
    /// Consumes `bytes`; returns the `data` of every event completed by them, in order.
    /// Comments and fields other than `data` are skipped; invalid UTF-8 in a line is
    /// replaced by U+FFFD (the JSON decoder then reports the chunk as malformed).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        loop {
            let Some(found) = memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                break;
            };
            let end = self.scanned + found;
            let next = if self.buf[end] == b'\r' {
                match self.buf.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    // A CR at the end of what arrived may be the first half of CRLF.
                    None => {
                        self.scanned = end;
                        break;
                    }
                }
            } else {
                end + 1
            };
            let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            self.line(&line, &mut events);
            start = next;
            self.scanned = next;
        }
        self.buf.drain(..start);
        self.scanned -= start;
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<String>) {
        if line.is_empty() {
            if std::mem::take(&mut self.has_data) {
                events.push(std::mem::take(&mut self.data));
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
    }
}

/// Rewrites every `\\uXXXX` escape of a lone UTF-16 surrogate in JSON text (a high
/// half not followed by a low one, or a low half alone) as `\\ufffd`, the
/// replacement character. Returns `None` when there is none, so the caller's error
/// stands. Escaped backslashes (`\\\\u`) are not escapes and are left alone.
pub fn replace_lone_surrogates(json: &str) -> Option<String> {
    let bytes = json.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let hex = json.get(at + 2..at + 6)?;
        (bytes.get(at + 1) == Some(&b'u'))
            .then(|| u16::from_str_radix(hex, 16).ok())
            .flatten()
    };
    let mut out = String::with_capacity(json.len());
    let mut changed = false;
    let mut copied = 0;
    let mut i = 0;
    while let Some(found) = memchr::memchr(b'\\', &bytes[i..]) {
        let at = i + found;
        match unit(at) {
            Some(0xD800..=0xDBFF) => {
                if matches!(unit(at + 6), Some(0xDC00..=0xDFFF))
                    && bytes.get(at + 6) == Some(&b'\\')
                {
                    i = at + 12;
                } else {
                    out.push_str(&json[copied..at]);
                    out.push_str("\\ufffd");
                    copied = at + 6;
                    changed = true;
                    i = at + 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.push_str(&json[copied..at]);
                out.push_str("\\ufffd");
                copied = at + 6;
                changed = true;
                i = at + 6;
            }
            Some(_) => i = at + 6,
            // Any other escape is two characters (`\\\\`, `\\"`, `\\n`).
            None => i = at + 2,
        }
        if i >= bytes.len() {
            break;
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&json[copied.min(json.len())..]);
    Some(out)
}

/// The events of a streamed response body: each SSE `data` payload through `decode`, in
/// order; a connection that breaks is one [`ApiError::Dropped`].
pub fn event_stream(
    resp: reqwest::Response,
    mut decode: impl FnMut(&str) -> Result<Vec<StreamEvent>, ApiError> + Send + 'static,
) -> EventStream {
    use futures_util::StreamExt;
    let mut sse = SseDecoder::default();
    resp.bytes_stream()
        .map(move |chunk| match chunk {
            Ok(bytes) => sse
                .push(&bytes)
                .iter()
                .map(|data| decode(data))
                .collect::<Vec<_>>(),
            Err(e) => vec![Err(ApiError::Dropped(e.to_string()))],
        })
        .flat_map(futures_util::stream::iter)
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        assert_eq!(
            replace_lone_surrogates(r#"{"a":"x\ud83d","b":"\ude00y"}"#).as_deref(),
            Some(r#"{"a":"x\ufffd","b":"\ufffdy"}"#)
        );
        assert_eq!(replace_lone_surrogates(r#"{"a":"\ud83d\ude00"}"#), None);
        assert_eq!(replace_lone_surrogates(r#"{"a":"\\ud83d"}"#), None);
        assert_eq!(
            replace_lone_surrogates(r#"{"a":"\ud83d\n"}"#).as_deref(),
            Some(r#"{"a":"\ufffd\n"}"#)
        );
    }

    #[test]
    fn events_split_anywhere_decode_the_same() {
        let body =
            ": comment\r\n\r\ndata: {\"a\":1}\r\n\r\ndata: x\ndata: y\n\nevent: e\rdata:z\r\r\n";
        let whole = SseDecoder::default().push(body.as_bytes());
        assert_eq!(whole, vec!["{\"a\":1}", "x\ny", "z"]);
        for cut in 0..body.len() {
            let mut d = SseDecoder::default();
            let mut got = d.push(&body.as_bytes()[..cut]);
            got.extend(d.push(&body.as_bytes()[cut..]));
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn an_unfinished_event_is_not_emitted() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"data: partial").is_empty());
        assert!(d.push(b" more\n").is_empty());
        assert_eq!(d.push(b"\n"), vec!["partial more"]);
    }
}
