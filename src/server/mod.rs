//! The stdio server: a line reader on stdin, the dispatcher, and one writer task that
//! owns stdout so that message lines never interleave (docs/ARCHITECTURE.md,
//! invariants 1, 2, 8).

pub mod session;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorCode};
use crate::protocol::outbox::Outbox;
use crate::protocol::{MAX_LINE_BYTES, Request};
use session::{Ctx, Flow, Session};

/// One line read from the client.
enum Line {
    Text(Vec<u8>),
    TooLong,
    Eof,
}

/// Reads `\n`-terminated lines, never holding more than [`MAX_LINE_BYTES`] of one.
struct LineReader<R> {
    inner: BufReader<R>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    async fn next(&mut self) -> std::io::Result<Line> {
        let mut buf = Vec::new();
        let mut too_long = false;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(match (too_long, buf.is_empty()) {
                    (true, _) => Line::TooLong,
                    (false, true) => Line::Eof,
                    (false, false) => Line::Text(buf),
                });
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
            self.inner.consume(consumed);
            if done.is_some() {
                if too_long {
                    return Ok(Line::TooLong);
                }
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(Line::Text(buf));
            }
        }
    }
}

/// Finishes background work; a bug there is logged and bb7 keeps serving.
fn on_background(session: &mut Session, msg: session::BackgroundResult, ctx: &Ctx) {
    guarded("finishing background work", || {
        session.on_background(msg, ctx);
    });
}

/// Runs a session step that must not end the process; a bug in it is logged.
fn guarded(what: &str, step: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).is_err() {
        tracing::error!("internal error while {what}");
    }
}

/// How long running turns get to save their partial results at shutdown.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// How long a turn whose file calls are being planned gets at shutdown before its
/// answer is saved without its changes: editors stop bb7 soon after asking (Neovim two
/// seconds after SIGTERM), and a plan of a huge edit can take longer than that.
const PLAN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves requests from `input` until `shutdown` or end of input, writing messages to
/// `output`. Returns the process exit status (always 0: no input ends bb7 any other
/// way, docs/ARCHITECTURE.md "Durability" 5) once every queued message is written.
pub async fn serve<R, W>(input: R, output: W) -> std::io::Result<i32>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    return_large_buffers_to_the_os();
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let outbox = Outbox::new(tx);
    let backlog = outbox.backlog();
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::BufWriter::new(output);
        while let Some(line) = rx.recv().await {
            if out.write_all(line.as_bytes()).await.is_err() || out.write_all(b"\n").await.is_err()
            {
                backlog.close();
                return;
            }
            backlog.written(line.len());
            drop(line);
            // Flush when nothing else is queued, so bursts go out in one write.
            if rx.is_empty() && out.flush().await.is_err() {
                backlog.close();
                return;
            }
        }
        let _ = out.flush().await;
    });
    let room = outbox.backlog();

    // The reader runs on its own task: a line half-read when the loop below turns to
    // a background result must not be lost.
    let (line_tx, mut lines) = mpsc::channel::<std::io::Result<Line>>(16);
    tokio::spawn(async move {
        let mut reader = LineReader {
            inner: BufReader::with_capacity(1 << 16, input),
        };
        loop {
            let line = reader.next().await;
            let end = matches!(line, Ok(Line::Eof) | Err(_));
            if line_tx.send(line).await.is_err() || end {
                break;
            }
        }
    });

    let (internal_tx, mut internal) = mpsc::unbounded_channel();
    let ctx = Ctx {
        outbox: outbox.clone(),
        background: internal_tx,
    };
    let mut session = Session::new();
    let mut read_error = None;
    loop {
        // While the client does not read what is queued, no new request is read
        // (invariant 14): background work still finishes meanwhile.
        let has_room = room.has_room();
        let line = tokio::select! {
            biased;
            Some(msg) = internal.recv() => {
                on_background(&mut session, msg, &ctx);
                continue;
            }
            _ = room.room(), if !has_room => continue,
            line = lines.recv(), if has_room => line,
        };
        let bytes = match line {
            None | Some(Ok(Line::Eof)) => break,
            Some(Err(e)) => {
                read_error = Some(e);
                break;
            }
            Some(Ok(Line::TooLong)) => {
                outbox.send_error(
                    &Error::invalid(format!(
                        "Request line too long: the limit is {} MiB",
                        MAX_LINE_BYTES / (1024 * 1024)
                    )),
                    None,
                );
                continue;
            }
            Some(Ok(Line::Text(b))) => b,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let req = match Request::parse(&bytes) {
            Ok(r) => r,
            Err(bad) => {
                tracing::info!(request_id = ?bad.request_id, error = %bad.error, "bad request line");
                outbox.send_error(&bad.error, bad.request_id.as_deref());
                continue;
            }
        };
        let id = req.request_id.as_deref();
        let started = std::time::Instant::now();
        // A bug must cost one request, never the process (docs/PROTOCOL.md "Conventions").
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session.handle(&req, &ctx)))
                .unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorCode::Internal,
                        format!("Internal error while handling {}", req.action),
                    ))
                });
        match &result {
            Ok(_) => {
                tracing::debug!(action = %req.action, request_id = ?id, micros = started.elapsed().as_micros() as u64, "handled")
            }
            Err(e) => {
                tracing::info!(action = %req.action, request_id = ?id, code = e.code.as_str(), "request failed")
            }
        }
        match result {
            Ok((reply, flow)) => {
                if let Some(reply) = reply {
                    outbox.send(reply, id);
                }
                if flow == Flow::Shutdown {
                    break;
                }
            }
            Err(err) => outbox.send_error(&err, id),
        }
    }
    // Let running turns save what they have; an answer whose changes are still being
    // planned is saved without them once PLAN_GRACE is over, never dropped.
    session.cancel_all();
    let started = tokio::time::Instant::now();
    let (grace, deadline) = (started + PLAN_GRACE, started + DRAIN_TIMEOUT);
    while session.has_in_flight() {
        let until = if session.is_planning() {
            grace
        } else {
            deadline
        };
        match tokio::time::timeout_at(until, internal.recv()).await {
            Ok(Some(msg)) => on_background(&mut session, msg, &ctx),
            Ok(None) => break,
            Err(_) if until == deadline => break,
            Err(_) => guarded("saving interrupted answers", || {
                session.interrupt_planning(&ctx)
            }),
        }
    }
    guarded("saving interrupted answers", || {
        session.interrupt_planning(&ctx)
    });
    // Deferred state writes reach the disk before the chat locks are let go
    // (docs/ARCHITECTURE.md, "Durability" 8).
    crate::project::flush_queue::flush_now();
    drop(session);
    drop(ctx);
    drop(outbox);
    let _ = writer.await;
    match read_error {
        Some(e) => Err(e),
        None => Ok(0),
    }
}

/// Makes the allocator give large buffers back to the system when they are freed.
///
/// A request over a big context (statuses with contents, a `send`) builds buffers of
/// the context's size. glibc raises its mmap threshold after such a buffer is freed,
/// so the next ones come from the heap of whichever thread ran the request and stay
/// resident there; across the runtime's threads that multiplies the peak memory.
/// A fixed threshold keeps every allocation of 1 MiB or more in its own mapping,
/// returned on free.
fn return_large_buffers_to_the_os() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before the server
    // allocates its request buffers and is safe to call at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 4 << 20);
    }
}
