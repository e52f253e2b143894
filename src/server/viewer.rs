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
use crate::protocol::events::PeerChange;
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
    );
}

/// Queues `note` for the watchers of the served chat.
pub(super) fn to_watchers(ctx: &Ctx, note: &PeerChange) {
    if let Ok(msg) = crate::protocol::Encoded::encode(note) {
        ctx.outbox.to_watchers(&msg);
    }
}

/// One line a holder sent this viewer about chat `chat`.
pub(super) struct ViewLine {
    chat: ChatKey,
    line: Vec<u8>,
}

/// The viewer's state in the request loop: the watch connection of the chat shown
/// read-only, if any.
pub(super) struct Viewer {
    tx: mpsc::Sender<ViewLine>,
    watching: Option<(ChatKey, tokio::task::JoinHandle<()>)>,
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
        if self.watching.as_ref().map(|(k, _)| k) == viewed.as_ref().map(|(k, _)| k) {
            return;
        }
        self.stop();
        if let Some((key, dir)) = viewed {
            let (tx, chat) = (self.tx.clone(), key.clone());
            let task = tokio::spawn(async move {
                if let Err(e) = watch(&dir, &chat, &tx).await {
                    tracing::info!(error = %e, "the held chat is not followed");
                }
            });
            self.watching = Some((key, task));
        }
    }

    fn stop(&mut self) {
        if let Some((_, task)) = self.watching.take() {
            task.abort();
        }
        self.turns.clear();
    }

    /// Forwards one line of the holder to this process's client: a note, or a message
    /// of a turn (its `peer:` id kept). A note, and the first and the final message
    /// of a turn, come after the holder saved the chat (the question, the answer): the
    /// chat is read again first, so what the client then asks shows it.
    pub(super) fn on_line(&mut self, session: &mut Session, ev: ViewLine, ctx: &Ctx) {
        if self.watching.as_ref().map(|(k, _)| k) != Some(&ev.chat) {
            return;
        }
        let Ok(Value::Object(msg)) = serde_json::from_slice::<Value>(&ev.line) else {
            return;
        };
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

/// Connects to the holder of the chat in `chat_dir`, asks to watch, and sends each
/// line it then writes to the loop, until the holder closes the connection.
async fn watch(
    chat_dir: &std::path::Path,
    chat: &ChatKey,
    tx: &mpsc::Sender<ViewLine>,
) -> std::io::Result<()> {
    let stream = guests::connect(chat_dir).await?;
    let (read, mut write) = stream.into_split();
    let mut line = serde_json::to_vec(&Action::Watch(NoParams {}))?;
    line.push(b'\n');
    write.write_all(&line).await?;
    let mut reader = LineReader {
        inner: BufReader::with_capacity(1 << 16, read),
        cutter: LineCutter::default(),
    };
    loop {
        match reader.next().await? {
            Line::Text(line) => {
                let ev = ViewLine {
                    chat: chat.clone(),
                    line,
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
