//! Watchers: guest connections of the holder socket that asked (`watch`) to see the
//! served chat's turns as they stream, whoever started them — the holder's own client
//! or another guest — and a note of every change to it (docs/PROTOCOL.md, "One chat,
//! many front-ends"). A process that shows a held chat read-only forwards what it
//! sees to its client (`server::viewer`).

use std::sync::atomic::Ordering;

use super::{
    BACKLOG_BUDGET, Encoded, Outbox, QueuedTurn, StartedNote, WatchTurns, guest_route, mirrors,
};

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

    /// Queues `msg` (a note: no request id) for every watcher but guest connection
    /// `except` (the guest whose request the note is about: it knows).
    pub fn to_watchers(&self, msg: &Encoded, except: Option<u64>) {
        if self.watch.any.load(Ordering::Acquire) {
            self.queue_for_watchers(msg.as_str().to_owned(), except);
        }
    }

    /// A `send` request registered with [`Outbox::watch_turn`] (and, a guest's, with
    /// [`Outbox::mirror`]) was queued behind the chat's running turn: its copies wait
    /// until it starts ([`Outbox::queued_starts`], which sends `note` first) or is
    /// dropped ([`Outbox::queued_dropped`]), so nothing of it reaches a watcher before.
    pub fn queued_waits(&self, request_id: &str, note: Option<StartedNote>) {
        let mirrored = self.mirrored.lock().is_ok_and(|mut m| m.remove(request_id));
        if let Ok(mut w) = self.watch.inner.lock() {
            let seen = w.turns.remove(request_id);
            w.queued.insert(
                request_id.to_owned(),
                QueuedTurn {
                    seen,
                    mirrored,
                    note,
                },
            );
        }
    }

    /// The queued `send` request `request_id` starts now: its `started` note goes
    /// out, then its messages are copied as they were to be before it was queued
    /// ([`Outbox::queued_waits`]).
    pub fn queued_starts(&self, request_id: &str) {
        let Some(q) = self
            .watch
            .inner
            .lock()
            .ok()
            .and_then(|mut w| w.queued.remove(request_id))
        else {
            return;
        };
        if let Some(note) = q.note {
            if let Some(own) = note.to_client {
                self.send(own, None);
            }
            self.to_watchers(&note.to_watchers, note.except);
        }
        if q.mirrored {
            self.mirror(request_id, true);
        }
        if let Some(seen) = q.seen {
            self.watch_turn(request_id, Some(seen));
        }
    }

    /// The queued `send` request `request_id` will not run (cancelled, or its chat
    /// let go): nothing of it is copied.
    pub fn queued_dropped(&self, request_id: &str) {
        if let Ok(mut w) = self.watch.inner.lock() {
            w.queued.remove(request_id);
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
            // A guest that watches sees its own turn on its own requests already.
            let own = guest_route(id).map(|(conn, _)| conn);
            self.queue_for_watchers(msg.clone().into_line(Some(&seen)), own);
        }
    }

    fn queue_for_watchers(&self, line: String, except: Option<u64>) {
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
        for conn in w.conns.iter().filter(|c| Some(**c) != except) {
            if let Some(g) = guests.get(conn) {
                g.backlog.queue(line.clone(), &g.tx);
            }
        }
        self.watch.any.store(!w.conns.is_empty(), Ordering::Release);
    }
}
