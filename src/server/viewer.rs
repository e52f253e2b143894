//! A held chat followed live: the process that shows a chat read-only (its lock is
//! another process's) connects to the holder socket, sends `watch`, and forwards to its
//! own client the holder's notes (`peer_change`) and the messages of every turn on the
//! chat (`peer:` ids), reading the chat again from disk when a turn or change ended,
//! before its client hears of it. The holder's side: [`note_own`], [`to_watchers`]
//! and `protocol::outbox` (docs/PROTOCOL.md, "One chat, many front-ends").

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::guests;
use super::lines::{Line, LineCutter, LineReader};
use super::session::{Ctx, Session};
use crate::chat::ChatKey;
use crate::protocol::action::Action;
use crate::protocol::events::{HolderLeft, PeerChange};
use crate::protocol::outbox::{PEER_ID_PREFIX, holder_peer_id};
use crate::protocol::params::NoParams;

/// Tells the watchers of the served chat of a change made by this process's own
/// client (`turn`: the request id of a `send`, whose messages they see under
/// [`holder_peer_id`]).
pub(super) fn note_own(ctx: &Ctx, chat: &ChatKey, action: &str, status: &str, turn: Option<&str>) {
    to_watchers(
        ctx,
        &PeerChange {
            chat_id: chat.id.clone(),
            action: action.to_owned(),
            status: status.to_owned(),
            pid: Some(std::process::id()),
            peer_request_id: turn.map(|id| holder_peer_id(Some(id))),
        },
        None,
    );
}

/// Queues `note` for the watchers of the served chat but guest connection `except`.
pub(super) fn to_watchers(ctx: &Ctx, note: &PeerChange, except: Option<u64>) {
    if let Ok(msg) = crate::protocol::Encoded::encode(note) {
        ctx.outbox.to_watchers(&msg, except);
    }
}

/// Tells the watchers of `chat` that this process no longer serves it (`reason`:
/// `switched` or `quit`), before they are let go.
pub(super) fn holder_left(outbox: &crate::protocol::outbox::Outbox, chat: &ChatKey, reason: &str) {
    let left = HolderLeft {
        chat_id: chat.id.clone(),
        reason: reason.to_owned(),
        pid: Some(std::process::id()),
    };
    if let Ok(msg) = crate::protocol::Encoded::encode(&left) {
        outbox.to_watchers(&msg, None);
    }
}

/// The request id inside the holder of the turn that a `cancel` from a watcher names
/// by the id the watcher saw (`peer:holder:{id}`: the holder's own client's; another
/// `peer:…`: a guest's), if it names one.
pub(super) fn watched_target(req: &crate::protocol::Request) -> Option<String> {
    let target = req.fields.get("target_request_id")?.as_str()?;
    let own = format!("{PEER_ID_PREFIX}holder:");
    match target.strip_prefix(&own) {
        Some(id) if !id.is_empty() => Some(id.to_owned()),
        Some(_) => None,
        None => crate::protocol::outbox::from_peer_id(target),
    }
}

/// One line a holder sent this viewer about chat `chat` (`None`: the connection,
/// once made, closed: the holder quit or died, and `pid`, the holder's, let the lock
/// go).
pub(super) struct ViewLine {
    chat: ChatKey,
    line: Option<Vec<u8>>,
    pid: Option<u32>,
}

/// Whether `line` is a holder's `holder_left` note of its quitting.
fn is_quit_note(line: &[u8]) -> bool {
    line.starts_with(br#"{"type":"holder_left""#)
        && serde_json::from_slice::<HolderLeft>(line).is_ok_and(|l| l.reason == "quit")
}

/// The watch connection of the chat shown read-only.
struct Watching {
    chat: ChatKey,
    task: tokio::task::JoinHandle<()>,
    /// Lines to write to the holder (a `cancel` of a turn shown).
    to_holder: mpsc::UnboundedSender<Vec<u8>>,
    /// The ids of the cancels sent to the holder, and the client's ids of them.
    cancels: std::collections::HashMap<String, Option<String>>,
    next: u64,
    /// The client was told that the holder let the chat go (`holder_left`).
    left: bool,
}

/// The viewer's state in the request loop: the watch connection of the chat shown
/// read-only, if any.
pub(super) struct Viewer {
    tx: mpsc::Sender<ViewLine>,
    watching: Option<Watching>,
    /// The turns (their `peer:` ids) whose first message was forwarded and whose
    /// final one was not yet.
    turns: std::collections::HashSet<String>,
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Viewer {
    /// A viewer whose connections send their lines on `tx`, to the request loop.
    pub(super) fn new(tx: mpsc::Sender<ViewLine>) -> Viewer {
        Viewer {
            tx,
            watching: None,
            turns: Default::default(),
        }
    }

    /// Keeps a watch connection on the chat the session shows read-only: made when
    /// such a chat became active, closed when the session left it. A holder that does
    /// not answer (a reference BB-7, one that quit) only means the chat is not
    /// followed: it is shown as it was read.
    pub(super) fn follow(&mut self, session: &Session) {
        let viewed = session.viewed_chat();
        // A holder that let the chat go may have a successor: the next request looks
        // for it.
        let live = self.watching.as_ref().filter(|w| !w.left);
        if self.watching.is_some() == live.is_some()
            && live.map(|w| &w.chat) == viewed.as_ref().map(|(k, _)| k)
        {
            return;
        }
        self.stop();
        if let Some((key, dir)) = viewed {
            let (tx, chat) = (self.tx.clone(), key.clone());
            let (to_holder, outgoing) = mpsc::unbounded_channel();
            let task = tokio::spawn(async move {
                if let Err(e) = watch(&dir, &chat, &tx, outgoing).await {
                    tracing::info!(error = %e, "the held chat is not followed");
                }
            });
            self.watching = Some(Watching {
                chat: key,
                task,
                to_holder,
                cancels: Default::default(),
                next: 0,
                left: false,
            });
        }
    }

    fn stop(&mut self) {
        if let Some(w) = self.watching.take() {
            w.task.abort();
        }
        self.turns.clear();
    }

    /// Forwards one line of the holder to this process's client: a note, or a message
    /// of a turn (its `peer:` id kept). A note, and the first and the final message
    /// of a turn, come after the holder saved the chat (the question, the answer): the
    /// chat is read again first, so what the client then asks shows it.
    pub(super) fn on_line(&mut self, session: &mut Session, ev: ViewLine, ctx: &Ctx) {
        let Some(watching) = self.watching.as_mut().filter(|w| w.chat == ev.chat) else {
            return;
        };
        let Some(line) = ev.line else {
            // The holder's connection closed (it quit, or died) and its lock is let
            // go: the client hears it as a note, and may take the chat.
            if !watching.left {
                watching.left = true;
                session.reload_viewed();
                ctx.outbox.emit(
                    &HolderLeft {
                        chat_id: ev.chat.id.clone(),
                        reason: "quit".to_owned(),
                        pid: ev.pid,
                    },
                    None,
                );
            }
            self.turns.clear();
            return;
        };
        let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(&line) else {
            return;
        };
        // The holder let the chat go: said once, and nothing more follows.
        if msg.get("type").and_then(Value::as_str) == Some("holder_left") {
            if msg.get("chat_id") == Some(&Value::from(ev.chat.id.clone())) && !watching.left {
                watching.left = true;
                self.turns.clear();
                session.reload_viewed();
                ctx.outbox.emit(&msg, None);
            }
            return;
        }
        // The holder's answer to a cancel this viewer forwarded: the client's, by its id.
        if let Some(own) = msg.get("request_id").and_then(Value::as_str)
            && let Some(client_id) = watching.cancels.remove(own)
        {
            msg.remove("request_id");
            ctx.outbox.emit(&msg, client_id.as_deref());
            return;
        }
        let kind = msg.get("type").and_then(Value::as_str).unwrap_or("");
        let turn = msg
            .get("request_id")
            .and_then(Value::as_str)
            .filter(|id| id.starts_with(PEER_ID_PREFIX));
        let note =
            kind == "peer_change" && msg.get("chat_id") == Some(&Value::from(ev.chat.id.clone()));
        let reload = match turn {
            Some(id) if matches!(kind, "done" | "error" | "diff_error") => {
                self.turns.remove(id);
                true
            }
            Some(id) => self.turns.insert(id.to_owned()),
            None if note => true,
            None => return,
        };
        if reload {
            session.reload_viewed();
        }
        ctx.outbox.emit(&msg, None);
    }
}

impl Viewer {
    /// Sends `req` to the holder when it is a `cancel` of a turn this viewer shows
    /// (its `peer:` id); the holder's answer comes back with `req`'s id
    /// ([`Viewer::on_line`]). `false`: `req` is the session's to answer.
    pub(super) fn forward_cancel(&mut self, req: &crate::protocol::Request) -> bool {
        if req.action != "cancel" {
            return false;
        }
        let Some(target) = req.fields.get("target_request_id").and_then(Value::as_str) else {
            return false;
        };
        let Some(w) = self.watching.as_mut() else {
            return false;
        };
        if !self.turns.contains(target) {
            return false;
        }
        w.next += 1;
        let own = format!("view-cancel-{}", w.next);
        let cancel = Action::Cancel(crate::protocol::params::Cancel {
            target_request_id: crate::protocol::params::RequestId(target.to_owned()),
        });
        let Ok(Value::Object(mut line)) = serde_json::to_value(&cancel) else {
            return false;
        };
        line.insert("request_id".into(), Value::String(own.clone()));
        let Ok(mut bytes) = serde_json::to_vec(&line) else {
            return false;
        };
        bytes.push(b'\n');
        if w.to_holder.send(bytes).is_err() {
            return false;
        }
        w.cancels.insert(own, req.request_id.clone());
        true
    }
}

/// Connects to the holder of the chat in `chat_dir`, asks to watch, and sends each
/// line it then writes to the loop, until the holder closes the connection (said to
/// the loop with a last `None` line). Errors: no holder answers (nothing is said).
async fn watch(
    chat_dir: &std::path::Path,
    chat: &ChatKey,
    tx: &mpsc::Sender<ViewLine>,
    outgoing: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    let stream = guests::connect(chat_dir).await?;
    let pid = crate::project::lock::holder(chat_dir);
    let end = follow_holder(stream, chat, tx, outgoing).await;
    // Told once the holder let the lock go, so that the client can take the chat.
    guests::lock_let_go(chat_dir, pid).await;
    let closed = ViewLine {
        chat: chat.clone(),
        line: None,
        pid,
    };
    let _ = tx.send(closed).await;
    end
}

/// Asks the holder on `stream` to watch and sends its lines to the loop until it
/// closes the connection.
async fn follow_holder(
    stream: tokio::net::UnixStream,
    chat: &ChatKey,
    tx: &mpsc::Sender<ViewLine>,
    mut outgoing: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = serde_json::to_vec(&Action::Watch(NoParams {}))?;
    line.push(b'\n');
    write.write_all(&line).await?;
    let mut reader = LineReader {
        inner: BufReader::with_capacity(1 << 16, read),
        cutter: LineCutter::default(),
    };
    loop {
        let line = tokio::select! {
            line = reader.next() => line?,
            Some(out) = outgoing.recv() => {
                write.write_all(&out).await?;
                continue;
            }
        };
        match line {
            // A holder that quits says so before it lets the lock go: the loop is
            // told when the connection closes and the lock is free.
            Line::Text(line) if is_quit_note(&line) => {}
            Line::Text(line) => {
                let ev = ViewLine {
                    chat: chat.clone(),
                    line: Some(line),
                    pid: None,
                };
                if tx.send(ev).await.is_err() {
                    return Ok(());
                }
            }
            // A line over the limit is not a message this viewer forwards.
            Line::TooLong(_) => {}
            Line::Eof => return Ok(()),
        }
    }
}
