//! A server-sent events decoder (the `text/event-stream` format of the WHATWG HTML
//! standard, "Server-sent events") that yields the `data` of each event.
//!
//! It scans every byte once: a parser that re-reads a partial line from its start on
//! each network read takes quadratic time on a long `data:` line (a model writing a
//! large file in one tool-call fragment), which stalls a turn for minutes.

use super::{ApiError, EventStream, StreamEvent};

/// The most bytes one SSE line, or one event's joined `data`, may hold: 32 MiB, far
/// above any answer's fragment (a whole file in one tool-call delta included) and far
/// below what would exhaust memory. A body that exceeds it is a decode error, never
/// buffered further.
pub const MAX_SSE_EVENT_BYTES: usize = 32 << 20;

/// One event of an SSE body, as far as bb7 reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// The `data` of an event, its lines joined by `\n`.
    Data(String),
    /// The value of an `error` field: older llama.cpp servers send a failure as an
    /// event of its own, `error: {"code":…,"message":…}`, instead of a `data` line.
    Error(String),
}

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
    /// The `error` field of the event being read, if any.
    error: Option<String>,
}

impl SseDecoder {
    /// Consumes `bytes`; returns the `data` of every event completed by them, in order.
    /// Comments and fields other than `data` and `error` are skipped; invalid UTF-8 in
    /// a line is replaced by U+FFFD (the JSON decoder then reports the chunk as
    /// malformed). Errors: [`ApiError::Decode`] when a line or an event's data grows
    /// past [`MAX_SSE_EVENT_BYTES`]; the decoder should then be dropped.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseItem>, ApiError> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        loop {
            let Some(found) = memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                if self.buf.len() - start > MAX_SSE_EVENT_BYTES {
                    return Err(too_long());
                }
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
            if self.data.len() > MAX_SSE_EVENT_BYTES {
                return Err(too_long());
            }
            start = next;
            self.scanned = next;
        }
        self.buf.drain(..start);
        self.scanned -= start;
        Ok(events)
    }

    fn line(&mut self, line: &str, events: &mut Vec<SseItem>) {
        if line.is_empty() {
            if let Some(error) = self.error.take() {
                events.push(SseItem::Error(error));
            }
            if std::mem::take(&mut self.has_data) {
                events.push(SseItem::Data(std::mem::take(&mut self.data)));
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
        } else if field == "error" {
            self.error = Some(value.to_owned());
        }
    }
}

fn too_long() -> ApiError {
    ApiError::Decode(format!(
        "the server sent a stream event over {} MiB; bb7 stopped reading it",
        MAX_SSE_EVENT_BYTES >> 20
    ))
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

/// What a closed connection is called in every message: the server (or something
/// between) ended the body before the stream's end marker.
pub const CLOSED_MID_ANSWER: &str =
    "the server closed the connection before the answer was complete";

/// The events of a streamed response body: each SSE `data` payload through `decode`,
/// and each `error` field as [`ApiError::Stream`], in order. A network read that
/// completes no event (a keep-alive comment, part of a line) yields `Ok(vec![])`, so
/// a reader sees that bytes arrive. A connection that breaks is one
/// [`ApiError::Dropped`] naming the cause; a line or event over
/// [`MAX_SSE_EVENT_BYTES`] one [`ApiError::Decode`].
pub fn event_stream(
    resp: reqwest::Response,
    mut decode: impl FnMut(&str) -> Result<Vec<StreamEvent>, ApiError> + Send + 'static,
) -> EventStream {
    use futures_util::StreamExt;
    let mut sse = SseDecoder::default();
    resp.bytes_stream()
        .map(move |chunk| {
            let items = match chunk.map_err(|e| dropped(&e)).and_then(|b| sse.push(&b)) {
                Ok(items) => items,
                Err(e) => return vec![Err(e)],
            };
            if items.is_empty() {
                return vec![Ok(Vec::new())];
            }
            items
                .iter()
                .map(|item| match item {
                    SseItem::Data(data) => decode(data),
                    SseItem::Error(value) => Err(error_field(value)),
                })
                .collect()
        })
        .flat_map(futures_util::stream::iter)
        .boxed()
}

/// The error of an SSE `error:` field: JSON in any shape `super::stream_error` reads,
/// else the text itself.
fn error_field(value: &str) -> ApiError {
    serde_json::from_str::<serde_json::Value>(value)
        .ok()
        .and_then(|v| super::stream_error(&v))
        .unwrap_or_else(|| ApiError::Stream {
            code: None,
            message: value.trim().chars().take(500).collect(),
        })
}

/// A body read that failed: [`CLOSED_MID_ANSWER`] and the innermost cause the HTTP
/// library gives (its own words, "error decoding response body", name no cause).
fn dropped(e: &reqwest::Error) -> ApiError {
    let mut cause = None;
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        cause = Some(inner.to_string());
        source = inner.source();
    }
    let detail = cause.map(|c| format!(" ({c})")).unwrap_or_default();
    ApiError::Dropped(format!("{CLOSED_MID_ANSWER}{detail}"))
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
        let whole = SseDecoder::default().push(body.as_bytes()).unwrap();
        let data = |s: &str| SseItem::Data(s.to_owned());
        assert_eq!(whole, vec![data("{\"a\":1}"), data("x\ny"), data("z")]);
        for cut in 0..body.len() {
            let mut d = SseDecoder::default();
            let mut got = d.push(&body.as_bytes()[..cut]).unwrap();
            got.extend(d.push(&body.as_bytes()[cut..]).unwrap());
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn an_unfinished_event_is_not_emitted() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"data: partial").unwrap().is_empty());
        assert!(d.push(b" more\n").unwrap().is_empty());
        assert_eq!(
            d.push(b"\n").unwrap(),
            vec![SseItem::Data("partial more".into())]
        );
    }

    #[test]
    fn an_error_field_is_an_event_and_endless_lines_are_refused() {
        let mut d = SseDecoder::default();
        assert_eq!(
            d.push(b"error: {\"code\":500}\n\n").unwrap(),
            vec![SseItem::Error("{\"code\":500}".into())]
        );
        let mut d = SseDecoder::default();
        let chunk = vec![b'x'; 1 << 20];
        let mut failed = false;
        for _ in 0..40 {
            if d.push(&chunk).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "a 40 MiB line was buffered");
        assert!(
            matches!(error_field(r#"{"code":400,"message":"too long"}"#), ApiError::Stream { code: Some(c), message } if c == "400" && message == "too long")
        );
    }
}
