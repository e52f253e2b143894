//! A server-sent events decoder (the `text/event-stream` format of the WHATWG HTML
//! standard, "Server-sent events") that yields the `data` of each event.
//!
//! It scans every byte once: a parser that re-reads a partial line from its start on
//! each network read takes quadratic time on a long `data:` line (a model writing a
//! large file in one tool-call fragment), which stalls a turn for minutes.

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

#[cfg(test)]
mod tests {
    use super::*;

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
