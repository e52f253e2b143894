//! Watchers: guest connections of the holder socket that asked (`watch`) to see the
//! served chat's turns as they stream, whoever started them — the holder's own client
//! or another guest — and a note of every change to it (docs/PROTOCOL.md, "One chat,
//! many front-ends"). A process that shows a held chat read-only forwards what it
//! sees to its client (`server::viewer`).

use std::sync::atomic::Ordering;

use super::{BACKLOG_BUDGET, Encoded, Outbox, WatchTurns, mirrors};

impl Outbox {
    /// Makes guest connection `conn` a watcher: it is sent a copy of the messages of
    /// every turn registered with [`Outbox::watch_turn`] and every note given to
    /// [`Outbox::to_watchers`], until it closes ([`Outbox::remove_guest`]) or falls
    /// more than [`BACKLOG_BUDGET`] bytes behind (it is then sent nothing more).
    pub fn watch(&self, conn: u64) {
        if let Ok(mut w) = self.watch.inner.lock() {
            w.conns.insert(conn);
            self.watch.any.store(true, Ordering::Release);
        }
    }

    /// Whether guest connection `conn` watches the served chat.
    pub fn is_watcher(&self, conn: u64) -> bool {
        self.watch
            .inner
            .lock()
            .is_ok_and(|w| w.conns.contains(&conn))
    }

    /// Forgets every watcher and watched turn: the chat they watched is no longer
    /// served here.
    pub fn unwatch_all(&self) {
        if let Ok(mut w) = self.watch.inner.lock() {
            *w = WatchTurns::default();
            self.watch.any.store(false, Ordering::Release);
        }
    }

    /// Starts (`Some(seen)`) or stops (`None`) copying the messages of request
    /// `request_id` (its id inside the server) to every watcher, under id `seen`.
    pub fn watch_turn(&self, request_id: &str, seen: Option<String>) {
        if let Ok(mut w) = self.watch.inner.lock() {
            match seen {
                Some(seen) => w.turns.insert(request_id.to_owned(), seen),
                None => w.turns.remove(request_id),
            };
        }
    }

    /// Queues `msg` (a note: no request id) for every watcher.
    pub fn to_watchers(&self, msg: &Encoded) {
        if self.watch.any.load(Ordering::Acquire) {
            self.queue_for_watchers(msg.as_str().to_owned());
        }
    }

    /// Copies `msg` of request `request_id` to the watchers when that request is a
    /// watched turn (a read approval or a clarifying question stays its asker's).
    pub(super) fn copy_to_watchers(&self, msg: &Encoded, request_id: Option<&str>) {
        let Some(id) = request_id else { return };
        if !self.watch.any.load(Ordering::Acquire) || !mirrors(msg) {
            return;
        }
        let seen = match self.watch.inner.lock() {
            Ok(w) => w.turns.get(id).cloned(),
            Err(_) => None,
        };
        if let Some(seen) = seen {
            self.queue_for_watchers(msg.clone().into_line(Some(&seen)));
        }
    }

    fn queue_for_watchers(&self, line: String) {
        let (Ok(mut w), Ok(guests)) = (self.watch.inner.lock(), self.guests.lock()) else {
            return;
        };
        // A watcher that left, or that stopped reading, is sent nothing more: what
        // waits for it never grows past the budget.
        w.conns.retain(|conn| {
            guests
                .get(conn)
                .is_some_and(|g| g.backlog.bytes.load(Ordering::Acquire) <= BACKLOG_BUDGET)
        });
        for conn in &w.conns {
            if let Some(g) = guests.get(conn) {
                g.backlog.queue(line.clone(), &g.tx);
            }
        }
        self.watch.any.store(!w.conns.is_empty(), Ordering::Release);
    }
}
