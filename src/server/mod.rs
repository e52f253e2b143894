//! The stdio server: a line reader on stdin, the dispatcher, and one writer task that
//! owns stdout so that message lines never interleave (docs/ARCHITECTURE.md,
//! invariants 1, 2, 8).

pub mod guests;
mod holder;
mod lines;
pub mod session;
mod viewer;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorCode};
use crate::protocol::Request;
use crate::protocol::outbox::{Backlog, Outbox};
use lines::{Line, LineCutter, LineReader, too_long};
use session::{Ctx, Flow, Session};

/// Lines of the client on their way to the request loop.
type Lines = mpsc::Receiver<std::io::Result<Line>>;

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

/// How long after the last context add the journal is folded into `chat.json`, so
/// that the file is current within a second after adds stop while a run of adds
/// still costs the same per add (docs/ARCHITECTURE.md, "Durability" 10).
const FOLD_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// How long running turns get to save their partial results at shutdown.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// How long a turn whose file calls are being planned gets at shutdown before its
/// answer is saved without its changes: editors stop bb7 soon after asking (Neovim two
/// seconds after SIGTERM), and a plan of a huge edit can take longer than that.
const PLAN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves requests from `input` until `shutdown` or end of input, writing messages to
/// `output`. Returns the process exit status (always 0: no input ends bb7 any other
/// way, docs/ARCHITECTURE.md "Durability" 5) once every queued message is written.
/// The command line serves itself this way over in-memory pipes; the stdio server
/// uses [`serve_stdio`].
pub async fn serve<R, W>(input: R, output: W) -> std::io::Result<i32>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let outbox = Outbox::new(tx);
    let backlog = outbox.backlog();
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::BufWriter::new(output);
        let mut rx = rx;
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
    // The reader runs on its own task: a line half-read when the loop turns to a
    // background result must not be lost.
    let (line_tx, lines) = mpsc::channel::<std::io::Result<Line>>(16);
    tokio::spawn(async move {
        let mut reader = LineReader {
            inner: BufReader::with_capacity(1 << 16, input),
            cutter: LineCutter::default(),
        };
        loop {
            let line = reader.next().await;
            let end = matches!(line, Ok(Line::Eof) | Err(_));
            if line_tx.send(line).await.is_err() || end {
                break;
            }
        }
    });
    let result = run(lines, outbox).await;
    let _ = writer.await;
    result
}

/// [`serve`] on the process's stdin and stdout, each served by a plain thread that
/// blocks on its pipe: a request line reaches the loop, and a reply the client, without
/// a hop through the runtime's pool of blocking threads, and starting the process
/// spawns no such pool. SIGTERM ends the input like the end of stdin, so a terminated
/// bb7 saves running turns and exits 0 (editors stop their job with SIGTERM right
/// after `shutdown`, and the reference plugin warns about any other exit status).
/// Errors: a thread cannot be started; reading stdin fails.
pub async fn serve_stdio() -> std::io::Result<i32> {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let outbox = Outbox::new(tx);
    let backlog = outbox.backlog();
    let writer = std::thread::Builder::new()
        .name("bb7-stdout".into())
        .spawn(move || write_stdout(rx, &backlog))?;
    let (line_tx, lines) = mpsc::channel::<std::io::Result<Line>>(16);
    let stdin_tx = line_tx.clone();
    std::thread::Builder::new()
        .name("bb7-stdin".into())
        .spawn(move || read_stdin(&stdin_tx))?;
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    {
        tokio::spawn(async move {
            if term.recv().await.is_some() {
                let _ = line_tx.send(Ok(Line::Eof)).await;
            }
        });
    }
    let result = run(lines, outbox).await;
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    result
}

/// The stdin thread: lines to the loop until the end of input, an error, or a loop
/// that no longer listens.
fn read_stdin(lines: &mpsc::Sender<std::io::Result<Line>>) {
    use std::io::BufRead;
    let mut input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut cutter = LineCutter::default();
    loop {
        let available = match input.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = lines.blocking_send(Err(e));
                return;
            }
        };
        if available.is_empty() {
            let _ = lines.blocking_send(Ok(cutter.finish()));
            let _ = lines.blocking_send(Ok(Line::Eof));
            return;
        }
        let (consumed, line) = cutter.take(available);
        input.consume(consumed);
        if let Some(line) = line
            && lines.blocking_send(Ok(line)).is_err()
        {
            return;
        }
    }
}

/// The stdout thread, the one writer of stdout (invariant 1): writes each queued line,
/// flushing when nothing else is queued so bursts go out in one write, and reports
/// what it wrote to `backlog` (invariant 14).
fn write_stdout(mut rx: mpsc::UnboundedReceiver<String>, backlog: &Backlog) {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    while let Some(line) = rx.blocking_recv() {
        if out.write_all(line.as_bytes()).is_err() || out.write_all(b"\n").is_err() {
            backlog.close();
            return;
        }
        backlog.written(line.len());
        drop(line);
        if rx.is_empty() && out.flush().is_err() {
            backlog.close();
            return;
        }
    }
    let _ = out.flush();
}

/// The request loop: requests from `lines` in arrival order, background results as
/// they come (docs/ARCHITECTURE.md, invariants 2, 8, 14). Returns when the input ends
/// or on `shutdown`, after running turns saved what they have and deferred writes
/// reached the disk; dropping `outbox` then lets the writer finish.
async fn run(mut lines: Lines, outbox: Outbox) -> std::io::Result<i32> {
    return_large_buffers_to_the_os();
    // A crashed bb7's validation copies go (off the request path).
    std::thread::spawn(crate::project::scratch::sweep_stale);
    let room = outbox.backlog();
    let (internal_tx, mut internal) = mpsc::unbounded_channel();
    let ctx = Ctx {
        outbox: outbox.clone(),
        background: internal_tx,
    };
    let mut session = Session::new();
    // Other bb7 processes on the chat this one holds (docs/PROTOCOL.md, "One chat,
    // many front-ends"): their lines join this loop.
    let (guest_tx, mut guest_lines) = mpsc::channel(16);
    let mut holder = holder::Holder::new(guests::Hub {
        tx: guest_tx,
        outbox: outbox.clone(),
    });
    // The chat shown read-only, followed on its holder's socket.
    let (view_tx, mut view_lines) = mpsc::channel(16);
    let mut viewer = viewer::Viewer::new(view_tx);
    let mut read_error = None;
    // When the journaled adds are folded: FOLD_AFTER after the last one seen.
    let mut fold = JournalFold::default();
    loop {
        fold.seen(session.journal_adds());
        // While the client does not read what is queued, no new request is read
        // (invariant 14): background work still finishes meanwhile.
        let has_room = room.has_room();
        let line = tokio::select! {
            biased;
            Some(msg) = internal.recv() => {
                // The turn that ended is told of before a queued one starts.
                guarded("finishing background work", || {
                    session.on_background_result(msg, &ctx);
                });
                holder.turns_ended(&session, &ctx);
                guarded("starting a queued message", || session.start_queued(&ctx));
                holder.turns_ended(&session, &ctx);
                continue;
            }
            _ = room.room(), if !has_room => continue,
            line = lines.recv(), if has_room => line,
            Some(ev) = guest_lines.recv(), if has_room => {
                guarded("answering another bb7 process", || holder.on_event(&mut session, ev, &ctx));
                continue;
            }
            Some(ev) = view_lines.recv(), if has_room => {
                guarded("following the held chat", || viewer.on_line(&mut session, ev, &ctx));
                continue;
            }
            _ = fold.due(), if fold.armed() => {
                guarded("folding the context journal", || session.fold_journal());
                // A fold that could not happen (the chat was taken over) is not
                // retried until another add.
                fold.at = None;
                continue;
            }
        };
        let bytes = match line {
            None | Some(Ok(Line::Eof)) => break,
            Some(Err(e)) => {
                read_error = Some(e);
                break;
            }
            Some(Ok(Line::TooLong(id))) => {
                outbox.send_error(&too_long(), id.as_deref());
                continue;
            }
            Some(Ok(Line::Text(b))) => b,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut req = match Request::parse(&bytes) {
            Ok(r) => r,
            Err(bad) => {
                tracing::info!(request_id = ?bad.request_id, error = %bad.error, "bad request line");
                outbox.send_error(&bad.error, bad.request_id.as_deref());
                continue;
            }
        };
        holder::own_request(&mut req);
        // A cancel of a turn of the chat shown read-only goes to its holder.
        if viewer.forward_cancel(&req) {
            continue;
        }
        let id = req.request_id.as_deref();
        let started = std::time::Instant::now();
        holder.before_own(&req, &ctx);
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
        // The holder socket is bound before the reply leaves: a client that starts
        // another bb7 on the chat as soon as `chat_new` or `chat_select` answered
        // finds it a guest, never a chat without a holder to take over.
        holder.after_own(&req, result.is_ok(), &session, &ctx);
        holder.follow(&session);
        viewer.follow(&session);
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
    // No guest is served while this process lets its chats go.
    holder.close();
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
    // No validation command outlives bb7.
    crate::project::scratch::kill_running();
    guarded("folding the context journal", || session.fold_journal());
    // Deferred state writes reach the disk before the chat locks are let go
    // (docs/ARCHITECTURE.md, "Durability" 8).
    crate::project::flush_queue::flush_now();
    drop(session);
    drop(ctx);
    drop(outbox);
    match read_error {
        Some(e) => Err(e),
        None => Ok(0),
    }
}

/// The debounce of the context journal's fold: armed while adds are journaled, its
/// deadline moved on by each new add, so a run of adds folds once, after it.
#[derive(Default)]
struct JournalFold {
    adds: usize,
    at: Option<tokio::time::Instant>,
}

impl JournalFold {
    /// Notes the journal's current count of adds; a new one moves the deadline on.
    fn seen(&mut self, adds: usize) {
        if adds == 0 {
            *self = JournalFold::default();
        } else if adds != self.adds {
            // A new add (or another chat's journal): the deadline moves on.
            self.adds = adds;
            self.at = Some(tokio::time::Instant::now() + FOLD_AFTER);
        }
    }

    fn armed(&self) -> bool {
        self.at.is_some()
    }

    async fn due(&self) {
        if let Some(at) = self.at {
            tokio::time::sleep_until(at).await;
        }
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
