//! [`Outbox`]: where every outgoing message goes, from a handler or a background turn,
//! on its way to the one writer of stdout (invariant 1 in docs/ARCHITECTURE.md). It
//! lives with the wire types, below the server and the turn, so both can hold one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::{Notify, mpsc};

use super::{Encoded, error_message};
use crate::error::Error;

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
        }
    }

    /// The count of queued bytes, for the writer to drain and the request loop to
    /// wait on.
    pub fn backlog(&self) -> Arc<Backlog> {
        self.backlog.clone()
    }

    /// Queues `msg` with `request_id` set. A closed writer (stdout gone) drops it.
    pub fn send(&self, msg: Encoded, request_id: Option<&str>) {
        let line = msg.into_line(request_id);
        let len = line.len();
        self.backlog.bytes.fetch_add(len, Ordering::AcqRel);
        if self.tx.send(line).is_err() {
            self.backlog.bytes.fetch_sub(len, Ordering::AcqRel);
        }
    }

    /// Queues a typed message (a [`crate::protocol::events::TurnMessage`] or a reply
    /// struct) with `request_id` set.
    pub fn emit(&self, msg: &impl serde::Serialize, request_id: Option<&str>) {
        match Encoded::encode(msg) {
            Ok(json) => self.send(json, request_id),
            Err(e) => self.send_error(&e, request_id),
        }
    }

    /// Queues an `error` message for `err`.
    pub fn send_error(&self, err: &Error, request_id: Option<&str>) {
        self.send(error_message(err), request_id);
    }
}
