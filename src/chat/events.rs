//! A chat's event trace (`chats/{id}/events.jsonl`, docs/PROTOCOL.md "Extension: the
//! event trace"): one JSON object per line, appended as a job (a turn, an apply, a
//! rollback) goes through its steps, numbered by `seq` from 1, for postmortems and for
//! clients that poll with a cursor (`events_get`). Payloads are summaries: paths,
//! sizes, hashes, counts and codes, never file contents, messages or keys.
//!
//! The file is append-only and untrusted when read back: a torn or damaged line (a
//! crash mid-append, a hand edit) is skipped, a file that is not a regular file is
//! neither read nor written, and a log over [`MAX_LOG_BYTES`] takes no more events.
//! Reading after a cursor is `chat::event_page`.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::project::fsutil::read_regular;

/// The trace's file name inside a chat's directory.
pub const FILE_NAME: &str = "events.jsonl";

/// Size past which a chat's trace takes no more events (about 50,000 of them).
pub const MAX_LOG_BYTES: u64 = 16 * 1024 * 1024;

/// What happened: the event's `type` on the wire and in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// A turn started (`send`).
    #[serde(rename = "job.started")]
    JobStarted,
    /// The model asked for a retrieval tool.
    #[serde(rename = "tool.call.requested")]
    ToolCallRequested,
    /// A retrieval tool ran, failed or was denied.
    #[serde(rename = "tool.call.completed")]
    ToolCallCompleted,
    /// The model asked the user a question (`clarify_user`).
    #[serde(rename = "clarification.requested")]
    ClarificationRequested,
    /// The user answered (or skipped) it.
    #[serde(rename = "clarification.received")]
    ClarificationReceived,
    /// A turn's answer proposed file changes (tool calls or blocks).
    #[serde(rename = "edits.proposed")]
    EditsProposed,
    /// The proposed changes were planned and stored as outputs, or failed.
    #[serde(rename = "diff.generated")]
    DiffGenerated,
    /// Hunks were accepted or rejected (`review_apply`).
    #[serde(rename = "review.updated")]
    ReviewUpdated,
    /// An apply began (`apply_file`, `apply_file_as`, `review_apply`).
    #[serde(rename = "apply.started")]
    ApplyStarted,
    /// An apply ended: written, or refused (`code`).
    #[serde(rename = "apply.completed")]
    ApplyCompleted,
    /// An attempt of a `hybrid_auto` turn was dropped: the turn runs again on the
    /// local provider or falls back to the remote one, and nothing of the attempt is
    /// kept but this summary.
    #[serde(rename = "attempt.dropped")]
    AttemptDropped,
    /// The validation command did not run: the local edits change files it runs or
    /// reads (`paths`); the attempt is then dropped as `validation_failed`.
    #[serde(rename = "validation.refused")]
    ValidationRefused,
    /// A turn ended with an error, a cancel or a `diff_error`.
    #[serde(rename = "job.failed")]
    JobFailed,
    /// A turn ended with its answer (bb7's addition to the design's list).
    #[serde(rename = "job.completed")]
    JobCompleted,
    /// An apply or a rollback recorded a checkpoint.
    #[serde(rename = "checkpoint.created")]
    CheckpointCreated,
    /// A rollback began.
    #[serde(rename = "checkpoint.rollback.started")]
    RollbackStarted,
    /// A rollback ended (files restored or in conflict).
    #[serde(rename = "checkpoint.rollback.completed")]
    RollbackCompleted,
    /// A rollback was refused (damaged checkpoint, unknown hunk, a path escape).
    #[serde(rename = "checkpoint.rollback.failed")]
    RollbackFailed,
}

/// An event's payload summary. Every field is optional and left out when absent; none
/// holds file contents, message text or a key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventData {
    /// The request that started the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The model of a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider of a turn (`local`, `remote`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A step's outcome: `completed`, `denied`, `failed`, `ok`, `conflict`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The project-relative path the event is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Several paths (a turn's proposed or written files, a rollback's files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Lines of proposed changes that add invisible characters (`edits.proposed`;
    /// docs/PROTOCOL.md "Invisible characters").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invisible: Vec<crate::text::invisible::InvisibleWarning>,
    /// A count: tool calls, results, files, questions' answer length, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// A size in bytes (a read's result, a file written, an answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Hunks or lines accepted / added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<u64>,
    /// Hunks or lines rejected / removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<u64>,
    /// Hunks left pending, or in conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<u64>,
    /// `sha256:…` of a file before the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_hash: Option<String>,
    /// `sha256:…` of a file after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_hash: Option<String>,
    /// The checkpoint recorded or rolled back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
    /// An error code (`conflict`, `api`, `cancelled`, `diff_error`, a failed call's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// A short reason (a rollback mode, a fallback reason, a refusal's kind); never a
    /// message that quotes content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The size in bytes of what a tool step gave the model (its result, an error
    /// message or a refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<u64>,
    /// The lines of a read's result (`read_file`, `list_files`, `search_project`);
    /// absent where lines mean nothing (a refusal, a clarification's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_lines: Option<u64>,
    /// Whether a tool step gave the model an error rather than a result (a read that
    /// failed, arguments that do not parse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The provider a dropped attempt's turn goes on with (`local` for a retry,
    /// `remote` for a fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_provider: Option<String>,
    /// Which attempt of the turn this is, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u64>,
    /// Model calls an attempt made (more than 1 with retrieval rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u64>,
    /// Retrieval tool steps an attempt made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Proposed changes (calls and blocks) that could not be applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    /// Prompt tokens the server reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens the server reported (reasoning included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// How long a step took, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// One event as stored and sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the chat's trace, from 1, without gaps in what one process writes.
    pub seq: u64,
    /// The job: a turn, or one apply or rollback request.
    pub job_id: String,
    /// RFC 3339 UTC with milliseconds.
    pub time: String,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// The payload summary.
    #[serde(default)]
    pub data: EventData,
}

/// A new job id: `job_<unix millis>_<6 hex>`, sorting by time.
pub fn new_job_id() -> String {
    let millis = chrono::Utc::now().timestamp_millis();
    format!("job_{millis}_{}", &super::ids::new_chat_id()[..6])
}

/// What a process knows of a trace file it appended to: the next `seq` and the
/// file's length after its last append (another length means another writer, so the
/// file is read again).
#[derive(Debug, Clone, Copy)]
struct Tail {
    next: u64,
    len: u64,
}

/// The appender of every chat's trace in this process: a cheap handle, shared by the
/// server and its turns.
#[derive(Debug, Clone, Default)]
pub struct EventLog(Arc<Mutex<HashMap<PathBuf, Tail>>>);

impl EventLog {
    /// Appends an event of `job_id` to the trace at `path` (a chat's
    /// [`FILE_NAME`], resolved through `state_path` by the caller) and queues its
    /// flush with the state directory `root`'s other caches. Returns the event, or
    /// `None` when it was not recorded (the file is not a regular file, is over
    /// [`MAX_LOG_BYTES`], or cannot be written): a trace never fails the work it
    /// describes.
    pub fn append(
        &self,
        path: &Path,
        root: &Path,
        job_id: &str,
        kind: EventKind,
        data: EventData,
    ) -> Option<Event> {
        let mut tails = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let len = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_file() => m.len(),
            Ok(_) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(_) => return None,
        };
        if len > MAX_LOG_BYTES {
            return None;
        }
        let tail = match tails.get(path) {
            Some(t) if t.len == len => *t,
            _ => Tail {
                next: last_seq(path, len).saturating_add(1),
                len,
            },
        };
        let event = Event {
            seq: tail.next,
            job_id: job_id.to_owned(),
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            kind,
            data,
        };
        let mut line = serde_json::to_string(&event).ok()?;
        line.push('\n');
        if len > 0 && !ends_with_newline(path, len) {
            // A torn last line (a crash mid-append) stays alone on its line.
            line.insert(0, '\n');
        }
        let written = append_line(path, line.as_bytes()).ok()?;
        tails.insert(
            path.to_path_buf(),
            Tail {
                next: event.seq.saturating_add(1),
                len: written,
            },
        );
        drop(tails);
        crate::project::flush_queue::write_later(path, root, Box::new(|| true));
        Some(event)
    }
}

/// The highest `seq` in the trace at `path` (`len` bytes), 0 for none: read from the
/// last 64 KiB (events are appended in order), or from the whole file when no event
/// parses there.
fn last_seq(path: &Path, len: u64) -> u64 {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL: u64 = 64 * 1024;
    let max_of = |events: &[Event]| events.iter().map(|e| e.seq).max();
    if len > TAIL {
        let mut bytes = Vec::new();
        let read = std::fs::File::open(path).and_then(|mut f| {
            f.seek(SeekFrom::Start(len - TAIL))?;
            f.take(TAIL).read_to_end(&mut bytes)
        });
        if read.is_ok()
            && let Some(seq) = max_of(&parse_lines(&bytes).0)
        {
            return seq;
        }
    }
    read_all(path)
        .ok()
        .and_then(|(events, _)| max_of(&events))
        .unwrap_or(0)
}

/// Whether the file's byte at `len - 1` is a newline.
fn ends_with_newline(path: &Path, len: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut byte = [0u8; 1];
    std::fs::File::open(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(len - 1))?;
            f.read_exact(&mut byte)
        })
        .map(|_| byte[0] == b'\n')
        .unwrap_or(true)
}

/// Appends `bytes` to a regular file (created when missing, never through a symlink,
/// never blocking on a FIFO); returns the file's length afterwards.
fn append_line(path: &Path, bytes: &[u8]) -> std::io::Result<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    file.write_all(bytes)?;
    Ok(file.metadata()?.len())
}

/// Every readable event of the trace at `path`, in file order, and how many lines
/// were skipped as damaged. A missing file is an empty trace.
fn read_all(path: &Path) -> std::io::Result<(Vec<Event>, usize)> {
    let bytes = match read_regular(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    Ok(parse_lines(&bytes))
}

/// The events of the lines in `bytes`, and how many non-blank lines did not parse.
fn parse_lines(bytes: &[u8]) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
    let mut skipped = 0;
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(e) => events.push(e),
            Err(_) => skipped += 1,
        }
    }
    (events, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sequence numbers continue across handles (another process) and past a torn
    /// line, which reading skips.
    #[test]
    fn appends_number_events_and_survive_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let log = EventLog::default();
        let data = EventData {
            path: Some("a.rs".into()),
            ..EventData::default()
        };
        let first = log
            .append(
                &path,
                dir.path(),
                "job_1",
                EventKind::JobStarted,
                data.clone(),
            )
            .unwrap();
        assert_eq!(first.seq, 1);
        // A torn line from a crash, then another process appends.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"seq\":2,\"job_").unwrap();
        let other = EventLog::default();
        let second = other
            .append(&path, dir.path(), "job_1", EventKind::JobCompleted, data)
            .unwrap();
        assert_eq!(second.seq, 2);
        let third = log
            .append(
                &path,
                dir.path(),
                "job_2",
                EventKind::JobStarted,
                EventData::default(),
            )
            .unwrap();
        assert_eq!(third.seq, 3, "the first handle sees the other's append");
        let (events, skipped) = read_all(&path).unwrap();
        assert_eq!(skipped, 1);
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        let line = std::fs::read_to_string(&path).unwrap();
        assert!(line.contains("\"type\":\"job.started\""), "{line}");
    }

    /// A long trace is numbered on from its tail, without reading it whole.
    #[test]
    fn a_long_trace_goes_on_from_its_last_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut text = String::new();
        for seq in 1..=2000u64 {
            let e = Event {
                seq,
                job_id: "job_1".into(),
                time: "2026-01-01T00:00:00.000Z".into(),
                kind: EventKind::ToolCallCompleted,
                data: EventData::default(),
            };
            text.push_str(&serde_json::to_string(&e).unwrap());
            text.push('\n');
        }
        assert!(text.len() > 64 * 1024);
        std::fs::write(&path, text).unwrap();
        let next = EventLog::default()
            .append(
                &path,
                dir.path(),
                "job_2",
                EventKind::JobStarted,
                EventData::default(),
            )
            .unwrap();
        assert_eq!(next.seq, 2001);
    }

    /// A planted `seq` of 2^64−1 saturates the counter instead of wrapping it to 0.
    #[test]
    fn a_planted_last_seq_saturates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let e = Event {
            seq: u64::MAX,
            job_id: "job_1".into(),
            time: "2026-01-01T00:00:00.000Z".into(),
            kind: EventKind::ToolCallCompleted,
            data: EventData::default(),
        };
        std::fs::write(&path, serde_json::to_string(&e).unwrap() + "\n").unwrap();
        let log = EventLog::default();
        for _ in 0..2 {
            let next = log
                .append(
                    &path,
                    dir.path(),
                    "job_2",
                    EventKind::JobStarted,
                    EventData::default(),
                )
                .unwrap();
            assert_eq!(next.seq, u64::MAX);
        }
    }
}
