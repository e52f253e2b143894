//! The user's record of the prompt ledgers bb7 wrote, kept outside every repository in
//! `~/.bb7/prompt_ledgers.json`: canonical project root → chat id → the sha256 of the
//! `prompt.json` bb7 last wrote for that chat. Anything inside a project can be planted
//! with a clone, so a hash kept beside the ledger would prove nothing; this record,
//! written only by bb7 on this machine, tells a ledger bb7 wrote from any other (a
//! cloned or copied chat, a hand edit). A ledger that is not the recorded one is used
//! only when every text it holds is one bb7 still holds (`ledger_snapshots::differing`
//! with `strict`), since its entries for versions no longer held are judged by a 32-bit
//! id alone (docs/ARCHITECTURE.md, "State files").
//!
//! The record is a cache of trust: missing, damaged or stale, it costs one uncached
//! request, never a wrong prompt. It holds at most [`MAX_CHATS`] chats (the oldest
//! written are dropped), is replaced atomically (a temporary file renamed over it, not
//! flushed: a send does not wait for a sync), and is read-modified-written under an
//! exclusive `flock(2)` on `prompt_ledgers.lock`, so two bb7 processes neither corrupt
//! it nor lose each other's entries.

use std::collections::BTreeMap;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::chat::ids::sha256_tagged;
use crate::error::{Error, Result};
use crate::project::UserDirs;
use crate::project::fsutil::{read_regular_capped, replace_file};
use crate::project::state_file::SMALL_CAP;

/// File name of the record inside `~/.bb7/`.
pub const FILE: &str = "prompt_ledgers.json";
/// File name of the lock taken while the record is rewritten.
const LOCK_FILE: &str = "prompt_ledgers.lock";
/// The most chats the record holds: about 150 bytes each, far below its cap
/// ([`SMALL_CAP`]).
pub const MAX_CHATS: usize = 10_000;

/// One chat's last written ledger.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Written {
    /// `sha256:<64 hex>` of the file's bytes.
    sha256: String,
    /// When it was written, in Unix seconds (which entries go first at the cap).
    at: u64,
}

/// The whole record.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct Record {
    /// By canonical project root, then by chat id.
    projects: BTreeMap<String, BTreeMap<String, Written>>,
}

/// `(canonical project root, chat id)` of the ledger at `ledger_path`
/// (`{root}/.bb7/chats/{id}/prompt.json`; for a global chat the root is the home
/// directory holding `~/.bb7`).
fn key(ledger_path: &Path) -> Option<(String, String)> {
    let chat_dir = ledger_path.parent()?;
    let id = chat_dir.file_name()?.to_str()?.to_owned();
    let base = std::fs::canonicalize(chat_dir.parent()?.parent()?).ok()?;
    let root = base.parent()?;
    Some((root.to_string_lossy().into_owned(), id))
}

fn state_dir() -> Option<PathBuf> {
    UserDirs::from_env().ok().map(|d| d.state)
}

fn load(state: &Path) -> Record {
    read_regular_capped(&state.join(FILE), SMALL_CAP)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Whether `bytes`, read from the ledger at `ledger_path`, are the ledger bb7 last
/// wrote there on this machine.
pub fn is_recorded(ledger_path: &Path, bytes: &[u8]) -> bool {
    let (Some(state), Some((root, id))) = (state_dir(), key(ledger_path)) else {
        return false;
    };
    let sha = sha256_tagged(bytes);
    load(&state)
        .projects
        .get(&root)
        .and_then(|chats| chats.get(&id))
        .is_some_and(|w| w.sha256 == sha)
}

/// Records `bytes` as the ledger just written at `ledger_path`. Errors (`io`): `~/.bb7/`,
/// its lock or the record cannot be written; the ledger is then only not trusted at
/// its next read.
pub fn remember(ledger_path: &Path, bytes: &[u8]) -> Result<()> {
    let state = state_dir().ok_or_else(|| Error::invalid("no home directory"))?;
    remember_in(&state, ledger_path, bytes)
}

/// [`remember`] with the record in the directory `state`.
fn remember_in(state: &Path, ledger_path: &Path, bytes: &[u8]) -> Result<()> {
    let (root, id) = key(ledger_path).ok_or_else(|| Error::invalid("not a chat's ledger"))?;
    std::fs::create_dir_all(state)
        .map_err(|e| Error::io(format!("creating {}", state.display()), e))?;
    let lock_path = state.join(LOCK_FILE);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&lock_path)
        .map_err(|e| Error::io(format!("opening {}", lock_path.display()), e))?;
    // SAFETY: a valid open descriptor; the lock is released when `lock` is closed.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::io(format!("locking {}", lock_path.display()), e));
    }
    let mut record = load(state);
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let written = Written {
        sha256: sha256_tagged(bytes),
        at,
    };
    record.projects.entry(root).or_default().insert(id, written);
    trim(&mut record, MAX_CHATS);
    // Replaced whole, not flushed to disk: a record a power loss took back costs one
    // uncached request, and a send should not wait for a sync.
    let path = state.join(FILE);
    let bytes = serde_json::to_vec(&record)
        .map_err(|e| Error::invalid(format!("Cannot encode {}: {e}", path.display())))?;
    let result = replace_file(&path, &bytes, false).map(|_| ());
    drop(lock);
    result
}

/// Drops the oldest written chats until at most `max` remain, and projects left empty.
fn trim(record: &mut Record, max: usize) {
    let count: usize = record.projects.values().map(BTreeMap::len).sum();
    if count <= max {
        return;
    }
    let mut ats: Vec<u64> = record
        .projects
        .values()
        .flat_map(|c| c.values().map(|w| w.at))
        .collect();
    ats.sort_unstable();
    // Entries written at or before the cut go; ties may take a few more.
    let cut = ats[count - max - 1];
    for chats in record.projects.values_mut() {
        chats.retain(|_, w| w.at > cut);
    }
    record.projects.retain(|_, c| !c.is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writers on separate descriptors of the lock (as two processes are) lose none of
    /// each other's entries, and the record stays whole JSON.
    #[test]
    fn concurrent_writers_keep_every_entry() {
        let dir = tempfile::tempdir().unwrap();
        let chats = dir.path().join("p/.bb7/chats");
        std::fs::create_dir_all(&chats).unwrap();
        let state = dir.path().join("home/.bb7");
        let writers: Vec<_> = (0..2)
            .map(|t| {
                let (chats, state) = (chats.clone(), state.clone());
                std::thread::spawn(move || {
                    for i in 0..40 {
                        let ledger = chats.join(format!("c{t}x{i}")).join("prompt.json");
                        remember_in(&state, &ledger, b"{}").unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let record = load(&state);
        assert_eq!(
            record.projects.values().map(BTreeMap::len).sum::<usize>(),
            80
        );
    }

    #[test]
    fn trim_keeps_the_newest_chats() {
        let mut r = Record::default();
        for i in 0..10u64 {
            let w = Written {
                sha256: String::new(),
                at: i,
            };
            let project = format!("/p{}", i % 3);
            r.projects
                .entry(project)
                .or_default()
                .insert(format!("c{i}"), w);
        }
        trim(&mut r, 4);
        let mut left: Vec<u64> = r
            .projects
            .values()
            .flat_map(|c| c.values().map(|w| w.at))
            .collect();
        left.sort_unstable();
        assert_eq!(left, vec![6, 7, 8, 9]);
        trim(&mut r, 4);
        assert_eq!(r.projects.values().map(BTreeMap::len).sum::<usize>(), 4);
    }
}
