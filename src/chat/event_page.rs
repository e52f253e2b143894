//! Reading a chat's event trace after a cursor (`events_get`, docs/PROTOCOL.md
//! "Extension: the event trace") without reading the whole file: bb7 appends events
//! in `seq` order, so the first event after the cursor is found by bisecting the
//! file's bytes, and only the page from there on is read. A poll of a long trace
//! costs a few small reads, not the trace's size.
//!
//! The file is untrusted: damaged lines are skipped wherever they are, a line too
//! long for an event is skipped without being held in memory, and `seq` values that
//! repeat (two processes appending at once) are returned once. A hand-edited file
//! whose numbers go back may hide the events after such a place from a cursor past it.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::events::Event;
use crate::error::{Error, ErrorCode, Result};

/// Most events one `events_get` returns; the cursor pages through the rest.
pub const MAX_PAGE: usize = 1000;

/// Longest line read as an event; a longer one is damage (an event is a summary of
/// a few hundred bytes, a turn's path list at most some kilobytes).
const MAX_LINE_BYTES: usize = 4 << 20;

/// Below this many bytes left to bisect, the rest is read line by line.
const WINDOW: u64 = 64 * 1024;

/// One page of a trace: the events after a cursor.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Events with `seq` above the cursor, in `seq` order, at most [`MAX_PAGE`].
    pub events: Vec<Event>,
    /// The cursor to ask with next: the last event's `seq`, or the cursor given when
    /// there is none.
    pub next_cursor: u64,
    /// Whether more events follow this page.
    pub more: bool,
    /// Damaged lines skipped in the part of the file that was read.
    pub skipped: usize,
}

/// The events of the trace at `path` with `seq` above `after`. A missing file is an
/// empty trace. Errors (`io`): the file is not a regular file (a symlink, a FIFO, …)
/// or cannot be read.
pub fn read_after(path: &Path, after: u64) -> Result<Page> {
    let fail =
        |e: std::io::Error| Error::new(ErrorCode::Io, format!("Cannot read the event trace: {e}"));
    let file = match open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Page {
                events: Vec::new(),
                next_cursor: after,
                more: false,
                skipped: 0,
            });
        }
        Err(e) => return Err(fail(e)),
    };
    let len = file.metadata().map_err(fail)?.len();
    page_of(file, len, after).map_err(fail)
}

/// Opens `path` for reading when it is a regular file, never through a symlink in
/// its last component and never blocking on a FIFO.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")
            } else {
                e
            }
        })?;
    if !file.metadata()?.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// The page after `after` of a trace of `len` bytes read through `file`.
fn page_of<R: Read + Seek>(mut file: R, len: u64, after: u64) -> std::io::Result<Page> {
    let start = first_after(&mut file, len, after)?;
    let mut lines = Lines::at(&mut file, start)?;
    let mut events: Vec<Event> = Vec::new();
    let mut skipped = 0;
    while events.len() <= MAX_PAGE {
        let Some((_, line)) = lines.next_line()? else {
            break;
        };
        let Some(line) = line else {
            skipped += 1;
            continue;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(&line) {
            Ok(e) if e.seq > after => {
                if events.last().is_none_or(|last| last.seq != e.seq) {
                    events.push(e);
                }
            }
            Ok(_) => {}
            Err(_) => skipped += 1,
        }
    }
    // Sorted for a file whose numbers were shuffled by hand within the page read.
    events.sort_by_key(|e| e.seq);
    events.dedup_by_key(|e| e.seq);
    let more = events.len() > MAX_PAGE;
    events.truncate(MAX_PAGE);
    let next_cursor = events.last().map_or(after, |e| e.seq);
    Ok(Page {
        events,
        next_cursor,
        more,
        skipped,
    })
}

/// A byte offset, at the start of a line, before which every event has `seq` at most
/// `after` (events rise through the file), found by bisecting `[0, len)` down to
/// [`WINDOW`] bytes.
fn first_after<R: Read + Seek>(file: &mut R, len: u64, after: u64) -> std::io::Result<u64> {
    let (mut lo, mut hi) = (0u64, len);
    while hi > lo && hi - lo > WINDOW {
        let mid = lo + (hi - lo) / 2;
        match event_from(file, mid, hi)? {
            Some((seq, next)) if seq <= after => lo = next,
            // The first event at or after `mid` is past the cursor, or none starts
            // in `[mid, hi)`: what is looked for starts before `mid`, or at the event
            // found, which a read from `lo` reaches.
            _ => hi = mid,
        }
    }
    Ok(lo)
}

/// The first event whose line starts in `[from, to)` (`from` > 0): its `seq` and
/// where the line after it starts.
fn event_from<R: Read + Seek>(
    file: &mut R,
    from: u64,
    to: u64,
) -> std::io::Result<Option<(u64, u64)>> {
    // From the byte before `from`, the first line read is the end of the line that
    // `from` falls in (or just the newline before `from`).
    let mut lines = Lines::at(file, from - 1)?;
    lines.next_line()?;
    while let Some((start, line)) = lines.next_line()? {
        if start >= to {
            return Ok(None);
        }
        if let Some(e) = line.and_then(|l| serde_json::from_slice::<Event>(&l).ok()) {
            return Ok(Some((e.seq, lines.pos)));
        }
    }
    Ok(None)
}

/// A line's start offset and its bytes, `None` for a line over [`MAX_LINE_BYTES`].
type Line = (u64, Option<Vec<u8>>);

/// Lines of a file from an offset, each with its start; a line over
/// [`MAX_LINE_BYTES`] comes as `None`, read past but not kept.
struct Lines<R> {
    inner: BufReader<R>,
    pos: u64,
}

impl<R: Read + Seek> Lines<R> {
    fn at(mut file: R, pos: u64) -> std::io::Result<Lines<R>> {
        file.seek(SeekFrom::Start(pos))?;
        Ok(Lines {
            inner: BufReader::with_capacity(16 * 1024, file),
            pos,
        })
    }

    /// The next line (without its newline) and where it starts; `None` at the end.
    fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let start = self.pos;
        let mut line = Some(Vec::new());
        let mut read_any = false;
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            read_any = true;
            let (take, ended) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if let Some(l) = &mut line {
                if l.len() + take > MAX_LINE_BYTES {
                    line = None;
                } else {
                    l.extend_from_slice(&buf[..take]);
                }
            }
            self.inner.consume(take);
            self.pos += take as u64;
            if ended {
                break;
            }
        }
        if !read_any {
            return Ok(None);
        }
        if let Some(l) = &mut line
            && l.last() == Some(&b'\n')
        {
            l.pop();
        }
        Ok(Some((start, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::events::{EventData, EventKind, EventLog, FILE_NAME};
    use std::io::Write;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            job_id: "job_1".into(),
            time: "2026-01-01T00:00:00.000Z".into(),
            kind: EventKind::ToolCallCompleted,
            data: EventData {
                path: Some(format!("src/file_{seq}.rs")),
                ..EventData::default()
            },
        }
    }

    /// A trace of events 1..=n, with damage sprinkled in: a torn line every 997
    /// events, garbage every 1500, and event 4000 written twice.
    fn long_trace(n: u64) -> Vec<u8> {
        let mut text = Vec::new();
        for seq in 1..=n {
            let line = serde_json::to_string(&event(seq)).unwrap();
            text.extend_from_slice(line.as_bytes());
            text.push(b'\n');
            if seq == 4000 {
                text.extend_from_slice(line.as_bytes());
                text.push(b'\n');
            }
            if seq % 997 == 0 {
                text.extend_from_slice(&line.as_bytes()[..line.len() / 2]);
                text.push(b'\n');
            }
            if seq % 1500 == 0 {
                text.extend_from_slice(b"not json\n\n");
            }
        }
        text
    }

    /// Counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        read: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read.set(self.read.get() + n as u64);
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(to)
        }
    }

    /// Every cursor gives the events right after it, paging through a long damaged
    /// trace reaches every event once, and a page near the end reads a small part of
    /// the file.
    #[test]
    fn a_cursor_reads_its_page_and_not_the_whole_trace() {
        let n = 50_000;
        let text = long_trace(n);
        let len = text.len() as u64;
        let page = |after: u64| page_of(std::io::Cursor::new(&text), len, after).unwrap();
        for after in [
            0, 1, 996, 997, 998, 3999, 4000, 25_000, 48_999, 49_000, 49_999,
        ] {
            let p = page(after);
            let want: Vec<u64> = (after + 1..=n).take(MAX_PAGE).collect();
            assert_eq!(
                p.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
                want,
                "after {after}"
            );
            assert_eq!(p.more, after + (MAX_PAGE as u64) < n, "after {after}");
        }
        let last = page(n);
        assert_eq!(
            (last.events.len(), last.next_cursor, last.more),
            (0, n, false)
        );
        assert_eq!(page(n + 7).next_cursor, n + 7);

        let mut cursor = 0;
        let mut seen = 0;
        loop {
            let p = page(cursor);
            seen += p.events.len() as u64;
            cursor = p.next_cursor;
            if !p.more {
                break;
            }
        }
        assert_eq!((seen, cursor), (n, n));

        let read = std::rc::Rc::new(std::cell::Cell::new(0));
        let counting = Counting {
            inner: std::io::Cursor::new(&text),
            read: read.clone(),
        };
        let p = page_of(counting, len, 49_500).unwrap();
        assert_eq!(p.events.first().map(|e| e.seq), Some(49_501));
        assert!(
            read.get() * 20 < len,
            "read {} bytes of {len} for the last page",
            read.get()
        );
    }

    /// Sequence numbers continue across handles and past a torn line, which reading
    /// skips; a line too long for an event is skipped too.
    #[test]
    fn reading_skips_torn_and_overlong_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let log = EventLog::default();
        let append = |log: &EventLog, kind| {
            log.append(&path, dir.path(), "job_1", kind, EventData::default())
                .unwrap()
                .seq
        };
        assert_eq!(append(&log, EventKind::JobStarted), 1);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"seq\":2,\"job_").unwrap();
        assert_eq!(append(&EventLog::default(), EventKind::JobCompleted), 2);
        f.write_all(&vec![b'x'; MAX_LINE_BYTES + 10]).unwrap();
        f.write_all(b"\n").unwrap();
        assert_eq!(append(&log, EventKind::JobStarted), 3);
        let page = read_after(&path, 1).unwrap();
        assert_eq!(page.skipped, 2);
        assert_eq!(
            page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [2, 3]
        );
        assert_eq!(page.next_cursor, 3);
        assert_eq!(read_after(&path, 3).unwrap().next_cursor, 3);
        let missing = read_after(&dir.path().join("none.jsonl"), 5).unwrap();
        assert_eq!((missing.events.len(), missing.next_cursor), (0, 5));
        std::os::unix::fs::symlink(&path, dir.path().join("link.jsonl")).unwrap();
        assert!(read_after(&dir.path().join("link.jsonl"), 0).is_err());
    }
}
