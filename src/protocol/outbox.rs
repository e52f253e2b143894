//! [`Outbox`]: where every outgoing message goes, from a handler or a background turn,
//! on its way to the one writer of stdout (invariant 1 in docs/ARCHITECTURE.md). It
//! lives with the wire types, below the server and the turn, so both can hold one.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, mpsc};

use super::{Encoded, error_message};
use crate::error::Error;

// `Outbox`'s methods for watchers of the served chat (`watch` on the holder socket).
mod watch;

/// Bytes of message lines that may wait for the writer before the server stops
/// reading requests. A client that keeps writing requests but stops reading replies
/// then finds its own writes blocked by the pipe, instead of bb7 growing without
/// bound (invariant 14 in docs/ARCHITECTURE.md). Large enough for the biggest single
/// reply plus a burst of small ones.
pub const BACKLOG_BUDGET: usize = 32 << 20;

/// Sends finished message lines to the writer task. Cloneable; background work (a
/// model turn) holds one to stream its messages.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<String>,
    backlog: Arc<Backlog>,
    /// Other bb7 processes connected to this one's holder socket
    /// (`server::guests`), by connection number: where the messages of their
    /// requests go instead of stdout.
    guests: Arc<Mutex<HashMap<u64, Guest>>>,
    /// Guests' `send` requests (ids inside the server) whose messages are also copied
    /// to stdout under their [`peer_id`], so that the holder's own client shows the
    /// turn live (docs/PROTOCOL.md, "One chat, many front-ends").
    mirrored: Arc<Mutex<HashSet<String>>>,
    /// Guests that watch the served chat's turns (`outbox/watch.rs`).
    watch: Arc<Watchers>,
}

/// The guest connections that watch the served chat (`watch`), and the turns copied
/// to them.
#[derive(Default)]
struct Watchers {
    /// Whether any connection watches: the common case (none) costs no lock.
    any: AtomicBool,
    inner: Mutex<WatchTurns>,
}

#[derive(Default)]
struct WatchTurns {
    /// Guest connection numbers.
    conns: HashSet<u64>,
    /// Request ids (inside the server) whose messages are copied, and the id the
    /// watchers see them under.
    turns: HashMap<String, String>,
    /// Queued `send` requests whose copies wait for their turn to start.
    queued: HashMap<String, QueuedTurn>,
}

/// A queued `send` whose copies start with its turn (`outbox/watch.rs`).
struct QueuedTurn {
    /// The id the watchers will see it under.
    seen: Option<String>,
    /// Whether the holder's client sees it too (a guest's turn).
    mirrored: bool,
    /// The `started` note, sent as it starts: to the holder's client (a guest's turn)
    /// and to the watchers but the guest that asked.
    note: Option<StartedNote>,
}

/// The `started` note of a queued turn.
pub struct StartedNote {
    /// The note as the holder's own client gets it, if it does.
    pub to_client: Option<Encoded>,
    /// The note as the watchers get it.
    pub to_watchers: Encoded,
    /// The guest connection that asked (it knows).
    pub except: Option<u64>,
}

/// Where one guest's messages wait for its connection's writer, and their byte count.
struct Guest {
    tx: mpsc::UnboundedSender<String>,
    backlog: Arc<Backlog>,
}

/// The start of the request id a guest's request carries inside the server
/// (`{prefix}{connection}:{its own id}`, or `{prefix}{connection}!` without one): the
/// outbox sends every message with such an id to that guest, with its own id back.
/// It begins with a control character, which no editor puts in its ids.
pub const GUEST_ID_PREFIX: &str = "\u{1}guest:";

/// The guest connection a request id routes to, and the guest's own id.
pub fn guest_route(request_id: &str) -> Option<(u64, Option<&str>)> {
    let rest = request_id.strip_prefix(GUEST_ID_PREFIX)?;
    let end = rest.find([':', '!'])?;
    let conn = rest[..end].parse().ok()?;
    match rest.as_bytes()[end] {
        b':' => Some((conn, Some(&rest[end + 1..]))),
        _ => Some((conn, None)),
    }
}

/// The id a request of guest `conn` whose own id is `own` carries inside the server
/// (the inverse of [`guest_route`]).
pub fn guest_id(conn: u64, own: Option<&str>) -> String {
    match own {
        Some(own) => format!("{GUEST_ID_PREFIX}{conn}:{own}"),
        None => format!("{GUEST_ID_PREFIX}{conn}!"),
    }
}

/// The start of the id under which the holder's own client sees a guest's turn
/// (`peer:{connection}:{its own id}`, or `peer:{connection}!`).
pub const PEER_ID_PREFIX: &str = "peer:";

/// The id the holder's client sees for guest request `request_id` (an id made by
/// [`guest_id`]); `None` for any other id.
pub fn peer_id(request_id: &str) -> Option<String> {
    let rest = request_id.strip_prefix(GUEST_ID_PREFIX)?;
    Some(format!("{PEER_ID_PREFIX}{rest}"))
}

/// The id under which watchers see a turn of the holder's own client whose request id
/// is `own` (`peer:holder:{id}`, or `peer:holder!` without one). It is no guest's peer
/// id ([`from_peer_id`] names none), so no `cancel` can reach a guest by that name.
pub fn holder_peer_id(own: Option<&str>) -> String {
    match own {
        Some(id) => format!("{PEER_ID_PREFIX}holder:{id}"),
        None => format!("{PEER_ID_PREFIX}holder!"),
    }
}

/// The guest request id inside the server that peer id `id` names (the inverse of
/// [`peer_id`]); `None` when `id` is not a peer id.
pub fn from_peer_id(id: &str) -> Option<String> {
    let rest = id.strip_prefix(PEER_ID_PREFIX)?;
    let internal = format!("{GUEST_ID_PREFIX}{rest}");
    guest_route(&internal).is_some().then_some(internal)
}

/// Whether a message of a mirrored guest turn is copied to stdout: a read approval and
/// a clarifying question are the guest's to answer, and shown to it only; the
/// `queued` answer of a send that waits is its asker's (the copy starts with the turn).
fn mirrors(line: &Encoded) -> bool {
    let s = line.as_str();
    !(s.starts_with(r#"{"type":"tool_approval""#)
        || s.starts_with(r#"{"type":"clarification""#)
        || s.starts_with(r#"{"type":"queued""#))
}

/// The bytes queued for stdout and not yet written, shared by the outbox and the
/// writer.
#[derive(Debug, Default)]
pub struct Backlog {
    bytes: AtomicUsize,
    /// The writer is gone (stdout closed): nothing will drain, so nothing waits.
    closed: AtomicBool,
    drained: Notify,
}

impl Backlog {
    /// Queues `line` on `tx`, counted until its writer reports it written; a closed
    /// receiver (the writer is gone) drops it uncounted.
    fn queue(&self, line: String, tx: &mpsc::UnboundedSender<String>) {
        let len = line.len();
        self.bytes.fetch_add(len, Ordering::AcqRel);
        if tx.send(line).is_err() {
            self.bytes.fetch_sub(len, Ordering::AcqRel);
        }
    }

    /// The writer wrote a line of `len` bytes.
    pub fn written(&self, len: usize) {
        let before = self.bytes.fetch_sub(len, Ordering::AcqRel);
        if before.saturating_sub(len) <= BACKLOG_BUDGET {
            self.drained.notify_one();
        }
    }

    /// The writer stopped: waiting for it would never end.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.drained.notify_one();
    }

    /// Whether the queue is within [`BACKLOG_BUDGET`] (or the writer is gone).
    pub fn has_room(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.bytes.load(Ordering::Acquire) <= BACKLOG_BUDGET
    }

    /// Waits until [`Backlog::has_room`]. Meant for one waiter, the request loop.
    pub async fn room(&self) {
        while !self.has_room() {
            self.drained.notified().await;
        }
    }
}

impl Outbox {
    /// An outbox that queues lines on `tx`; the receiver is the one writer of stdout
    /// (invariant 1 in docs/ARCHITECTURE.md), which reports each line it wrote to
    /// [`Outbox::backlog`].
    pub fn new(tx: mpsc::UnboundedSender<String>) -> Outbox {
        Outbox {
            tx,
            backlog: Arc::default(),
            guests: Arc::default(),
            mirrored: Arc::default(),
            watch: Arc::default(),
        }
    }

    /// Starts (`on`) or stops copying the messages of guest request `request_id` to
    /// stdout under its [`peer_id`].
    pub fn mirror(&self, request_id: &str, on: bool) {
        if let Ok(mut m) = self.mirrored.lock() {
            if on {
                m.insert(request_id.to_owned());
            } else {
                m.remove(request_id);
            }
        }
    }

    /// Registers guest connection `conn`: messages of its requests (ids made by
    /// [`guest_id`]) are queued on the returned receiver instead of stdout, and counted
    /// in the returned backlog, which the connection's writer drains
    /// ([`Backlog::written`]) and its reader waits on ([`Backlog::room`]) before it
    /// reads the next request: a guest that stops reading stops being served at
    /// [`BACKLOG_BUDGET`] queued bytes, as stdout's client does (invariant 14).
    pub fn add_guest(&self, conn: u64) -> (mpsc::UnboundedReceiver<String>, Arc<Backlog>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::<Backlog>::default();
        if let Ok(mut g) = self.guests.lock() {
            g.insert(
                conn,
                Guest {
                    tx,
                    backlog: backlog.clone(),
                },
            );
        }
        (rx, backlog)
    }

    /// Forgets guest connection `conn`; its later messages are dropped, and its
    /// receiver ends once the queued ones are read.
    pub fn remove_guest(&self, conn: u64) {
        if let Ok(mut g) = self.guests.lock() {
            g.remove(&conn);
        }
    }

    /// The count of queued bytes, for the writer to drain and the request loop to
    /// wait on.
    pub fn backlog(&self) -> Arc<Backlog> {
        self.backlog.clone()
    }

    /// Queues `msg` with `request_id` set. A closed writer (stdout gone) drops it.
    pub fn send(&self, msg: Encoded, request_id: Option<&str>) {
        self.copy_to_watchers(&msg, request_id);
        if let Some((conn, own)) = request_id.and_then(guest_route) {
            let id = request_id.unwrap_or_default();
            let copy = self.mirrored.lock().is_ok_and(|m| m.contains(id)) && mirrors(&msg);
            if copy && let Some(peer) = peer_id(id) {
                self.backlog
                    .queue(msg.clone().into_line(Some(&peer)), &self.tx);
            }
            let line = msg.into_line(own);
            if let Ok(g) = self.guests.lock()
                && let Some(guest) = g.get(&conn)
            {
                guest.backlog.queue(line, &guest.tx);
            }
            return;
        }
        self.backlog.queue(msg.into_line(request_id), &self.tx);
    }

    /// Queues a typed message (a [`crate::protocol::events::TurnMessage`] or a reply
    /// struct) with `request_id` set.
    pub fn emit(&self, msg: &impl serde::Serialize, request_id: Option<&str>) {
        match Encoded::encode(msg) {
            Ok(json) => self.send(json, request_id),
            Err(e) => self.send_error(&e, request_id),
        }
    }

    /// Whether `request_id` belongs to a guest's request that is still connected.
    pub fn guest_connected(&self, request_id: &str) -> bool {
        guest_route(request_id).is_some_and(|(conn, _)| {
            self.guests
                .lock()
                .map(|g| g.contains_key(&conn))
                .unwrap_or(false)
        })
    }

    /// Queues an `error` message for `err`.
    pub fn send_error(&self, err: &Error, request_id: Option<&str>) {
        self.send(error_message(err), request_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_id_routes_back_to_its_connection_and_own_id() {
        assert_eq!(
            guest_route(&guest_id(7, Some("cli3"))),
            Some((7, Some("cli3")))
        );
        assert_eq!(
            guest_route(&guest_id(7, Some("a:b!"))),
            Some((7, Some("a:b!")))
        );
        assert_eq!(guest_route(&guest_id(12, None)), Some((12, None)));
        assert_eq!(guest_route("cli3"), None);
    }

    #[test]
    fn a_peer_id_names_the_guest_request_and_nothing_else() {
        let inside = guest_id(7, Some("cli3"));
        assert_eq!(peer_id(&inside).as_deref(), Some("peer:7:cli3"));
        assert_eq!(from_peer_id("peer:7:cli3"), Some(inside));
        assert_eq!(from_peer_id("peer:7!"), Some(guest_id(7, None)));
        assert_eq!(from_peer_id("peer:x"), None);
        assert_eq!(from_peer_id("nv3"), None);
        assert_eq!(peer_id("nv3"), None);
    }
}
