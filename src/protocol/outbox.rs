//! [`Outbox`]: where every outgoing message goes, from a handler or a background turn,
//! on its way to the one writer of stdout (invariant 1 in docs/ARCHITECTURE.md). It
//! lives with the wire types, below the server and the turn, so both can hold one.

use tokio::sync::mpsc;

use super::{Encoded, error_message};
use crate::error::Error;

/// Sends finished message lines to the writer task. Cloneable; background work (a
/// model turn) holds one to stream its messages.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<String>,
}

impl Outbox {
    /// An outbox that queues lines on `tx`; the receiver is the one writer of stdout
    /// (invariant 1 in docs/ARCHITECTURE.md).
    pub fn new(tx: mpsc::UnboundedSender<String>) -> Outbox {
        Outbox { tx }
    }

    /// Queues `msg` with `request_id` set. A closed writer (stdout gone) drops it.
    pub fn send(&self, msg: Encoded, request_id: Option<&str>) {
        let _ = self.tx.send(msg.into_line(request_id));
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
