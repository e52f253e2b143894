//! Byte budgets of the holder's guests: what a guest connection has in flight (the
//! line being read, plus its lines read but not yet handled by the request loop) is
//! counted against a budget of its own and against one shared by every guest of the
//! process. A guest whose next bytes would go over either is closed with an `error`
//! naming the limit; the holder and its own client are never charged (docs/PROTOCOL.md,
//! "One chat, many front-ends").
//!
//! Why these numbers: bb7's front-ends refuse to build a request line over
//! `protocol::MAX_LINE_BYTES` (64 MiB), so the largest real request a guest sends (a
//! `bb7 add` of a big file, JSON-escaped) is one such line. A guest's budget holds one
//! of them plus [`SLACK_BYTES`] of small requests written behind it; the shared budget
//! holds two, so two users' big adds through one holder both go through, while sixteen
//! guests (`guests::MAX_GUESTS`) can never make the holder buffer more than
//! [`ALL_GUESTS_BYTES`] of their input (without it, 16 unfinished 64 MiB lines are
//! 1 GiB).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::protocol::MAX_LINE_BYTES;

/// What a guest may have in flight beyond one full-size line: small requests it wrote
/// without waiting for the big one's answer.
pub const SLACK_BYTES: usize = 8 * 1024 * 1024;

/// The bytes one guest connection may have in flight: the line being read plus its
/// lines waiting for the request loop (72 MiB).
pub const GUEST_BYTES: usize = MAX_LINE_BYTES + SLACK_BYTES;

/// The bytes all guests of one process may have in flight together (144 MiB).
pub const ALL_GUESTS_BYTES: usize = 2 * GUEST_BYTES;

/// The process's budget shared by its guests.
pub static POOL: Pool = Pool::new(ALL_GUESTS_BYTES);

/// A budget shared by several connections.
pub struct Pool {
    used: AtomicUsize,
    limit: usize,
}

impl Pool {
    /// A budget of `limit` bytes, nothing used.
    pub const fn new(limit: usize) -> Pool {
        Pool {
            used: AtomicUsize::new(0),
            limit,
        }
    }

    /// Bytes in flight now.
    #[cfg(test)]
    fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// Which budget a guest went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// Its own ([`GUEST_BYTES`]).
    Guest,
    /// The one all guests share ([`ALL_GUESTS_BYTES`]).
    AllGuests,
}

impl Over {
    /// The `error` the guest gets before its connection closes, naming the limit.
    pub fn error(self) -> crate::error::Error {
        let mib = |b: usize| b / (1024 * 1024);
        let what = match self {
            Over::Guest => format!(
                "this connection had more than {} MiB of requests unanswered (the limit of one guest)",
                mib(GUEST_BYTES)
            ),
            Over::AllGuests => format!(
                "the holder's guests together had more than {} MiB of requests unanswered (the limit of all guests)",
                mib(ALL_GUESTS_BYTES)
            ),
        };
        crate::error::Error::new(
            crate::error::ErrorCode::Busy,
            format!(
                "Guest connection closed: {what}; nothing of the unfinished request was done. Send one large request at a time and wait for its answer"
            ),
        )
    }
}

/// One guest connection's account: its own budget, and the pool it draws on.
#[derive(Clone)]
pub struct Account {
    used: Arc<AtomicUsize>,
    limit: usize,
    pool: &'static Pool,
}

impl Account {
    /// An account of `limit` bytes drawing on `pool`.
    pub fn new(limit: usize, pool: &'static Pool) -> Account {
        Account {
            used: Arc::new(AtomicUsize::new(0)),
            limit,
            pool,
        }
    }

    /// A charge of nothing yet, to be grown as a line is read.
    pub fn charge(&self) -> Charge {
        Charge {
            account: self.clone(),
            bytes: 0,
        }
    }
}

/// Bytes held for a connection: released when dropped (the line was handled, or
/// dropped with its connection).
pub struct Charge {
    account: Account,
    bytes: usize,
}

impl Charge {
    /// Makes the charge `bytes` (the line read so far), or says which budget that
    /// would go over. A refused charge gives back all it held at once (its
    /// connection closes), and never counts, even for a moment, against the others.
    pub fn set(&mut self, bytes: usize) -> Result<(), Over> {
        if bytes <= self.bytes {
            self.release(self.bytes - bytes);
            return Ok(());
        }
        let more = bytes - self.bytes;
        let a = &self.account;
        let over = if !reserve(&a.used, more, a.limit) {
            Some(Over::Guest)
        } else if !reserve(&a.pool.used, more, a.pool.limit) {
            a.used.fetch_sub(more, Ordering::AcqRel);
            Some(Over::AllGuests)
        } else {
            None
        };
        if let Some(over) = over {
            self.release(self.bytes);
            return Err(over);
        }
        self.bytes = bytes;
        Ok(())
    }

    /// The charge so far, leaving this one empty for the next line.
    pub fn take(&mut self) -> Charge {
        let bytes = std::mem::take(&mut self.bytes);
        Charge {
            account: self.account.clone(),
            bytes,
        }
    }

    fn release(&mut self, n: usize) {
        self.account.used.fetch_sub(n, Ordering::AcqRel);
        self.account.pool.used.fetch_sub(n, Ordering::AcqRel);
        self.bytes -= n;
    }
}

/// Adds `more` to `used` unless that goes over `limit`; whether it did.
fn reserve(used: &AtomicUsize, more: usize, limit: usize) -> bool {
    used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
        u.checked_add(more).filter(|&n| n <= limit)
    })
    .is_ok()
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_is_held_to_its_own_budget_and_the_shared_one() {
        static P: Pool = Pool::new(100);
        let (a, b) = (Account::new(60, &P), Account::new(60, &P));
        let mut line = a.charge();
        line.set(40).unwrap();
        let queued = line.take();
        assert_eq!(P.used(), 40);
        // The line read next and the one queued count together.
        line.set(10).unwrap();
        assert_eq!(line.set(30), Err(Over::Guest));
        assert_eq!(P.used(), 40, "a refused line gives back what it held");
        line.set(20).unwrap();
        let mut other = b.charge();
        assert_eq!(other.set(50), Err(Over::AllGuests));
        assert_eq!(P.used(), 60, "a refused charge takes nothing");
        drop(queued);
        other.set(50).unwrap();
        line.set(0).unwrap();
        drop((line, other));
        assert_eq!(P.used(), 0);
    }
}
