//! The context journal: context adds appended to `chats/{id}/journal-{generation}.jsonl`
//! instead of rewriting `chat.json` on each add, so a run of adds costs the same per
//! add at the 50,000th as at the first (docs/ARCHITECTURE.md, "Durability" 10).
//!
//! `chat.json` names the journal that belongs to it (`"context_journal": generation`); a
//! journal it does not name is stale and never read. Each line is one add: the
//! context entry and the event message that records it, applied in order after
//! `chat.json` is read ([`replay`]). A line that does not parse (the tail of an append
//! a power loss cut), or the size cap, ends the replay, and the next add then starts a
//! new journal.
//! The journal is folded into `chat.json` by any full save of the chat
//! (`ChatStore::save` writes the whole chat and names no journal), when it holds as
//! many adds as the chat has context entries (so folding costs a constant per add),
//! when adds pause (the server's request loop folds a journal a moment after its
//! last add, so `chat.json` is current then), and when the chat is let go.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::chat::model::{Chat, ContextFile, Message};
use crate::chat::store::ChatStore;
use crate::error::{Error, ErrorCode, Result};
use crate::project::flush_queue::{self, Rank};
use crate::project::fsutil::{self, Stamp, file_stamp};
use crate::project::state_file::CHAT_CAP;

/// Adds a journal holds at least before it is folded into `chat.json`.
const FOLD_MIN: usize = 1024;
/// File name prefix and suffix of a journal inside a chat's directory.
const PREFIX: &str = "journal-";
const SUFFIX: &str = ".jsonl";
/// Bytes one journal line may take: an add is a context entry and its event, far
/// smaller; a longer line is planted or damaged and ends the replay.
const LINE_CAP: u64 = 1 << 20;

/// One journaled add.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The new context entry.
    entry: ContextFile,
    /// The event message that records it.
    event: Message,
}

/// The journal this process appends to for one chat directory: its generation, how
/// many adds it holds, and the stamp `chat.json` had when it was made to name it (a
/// `chat.json` changed since, by another process, means the journal is no longer its).
#[derive(Debug, Clone)]
struct Open {
    generation: String,
    records: usize,
    chat_stamp: Option<Stamp>,
}

fn open_journals() -> &'static Mutex<HashMap<PathBuf, Open>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, Open>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

fn valid_gen(generation: &str) -> bool {
    !generation.is_empty()
        && generation.len() <= 32
        && generation.bytes().all(|b| b.is_ascii_hexdigit())
}

impl ChatStore {
    /// Records the add of `entry` with its `event` to `chat` (the chat as it is before
    /// the add, in memory and on disk) by appending one line to its journal; the
    /// caller then pushes both into its copy. Starts a journal (a full save of `chat`
    /// naming it) when none is open or the open one is due to be folded. Errors
    /// (`io`): the journal or `chat.json` cannot be written; nothing was recorded.
    pub fn journal_add(&self, chat: &Chat, entry: &ContextFile, event: &Message) -> Result<()> {
        let dir = self.chat_dir(&chat.id)?;
        let chat_json = self.chat_path(&chat.id, "chat.json")?;
        let current = {
            let open = open_journals().lock().unwrap_or_else(|p| p.into_inner());
            open.get(&dir).cloned()
        };
        let due = |o: &Open| {
            o.records >= FOLD_MIN.max(chat.context_files.len())
                || o.chat_stamp != file_stamp(&chat_json)
        };
        let generation = match current {
            Some(o) if !due(&o) => o.generation,
            _ => self.start_journal(chat, &dir, &chat_json)?,
        };
        let mut line = serde_json::to_vec(&Record {
            entry: entry.clone(),
            event: event.clone(),
        })
        .map_err(|e| Error::new(ErrorCode::Io, format!("Cannot encode a context add: {e}")))?;
        line.push(b'\n');
        let path = self.chat_path(&chat.id, &format!("{PREFIX}{generation}{SUFFIX}"))?;
        // After the snapshot it names (Rank::Referent) in the flush order (Durability 8).
        flush_queue::append(&path, &line, Rank::Chat, self.base(), Some(&dir))?;
        let mut open = open_journals().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = open.get_mut(&dir)
            && o.generation == generation
        {
            o.records += 1;
        }
        Ok(())
    }

    /// Saves `chat` whole, naming a new, empty journal, and removes every other
    /// journal of the chat. Returns the new generation.
    fn start_journal(&self, chat: &Chat, dir: &Path, chat_json: &Path) -> Result<String> {
        let mut buf = [0u8; 8];
        if getrandom::fill(&mut buf).is_err() {
            // No OS randomness: the time differs from every earlier generation.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            buf = nanos.to_le_bytes();
        }
        let generation = hex::encode(buf);
        let mut bytes = self.encode(chat)?;
        // `chat.json` is one JSON object followed by a newline: the journal's name is
        // its last member.
        let end = bytes.iter().rposition(|&b| b == b'}').unwrap_or(0);
        let member = format!(",\"context_journal\":\"{generation}\"");
        bytes.splice(end..end, member.bytes());
        flush_queue::write(chat_json, &bytes, Rank::Chat, self.base(), Some(dir))?;
        remove_journals(dir, Some(&generation));
        open_journals()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                dir.to_path_buf(),
                Open {
                    generation: generation.clone(),
                    records: 0,
                    chat_stamp: file_stamp(chat_json),
                },
            );
        Ok(generation)
    }

    /// After a full save of chat `id` (which names no journal): its journals are
    /// folded in and go.
    pub(super) fn journal_folded(&self, id: &str) {
        if let Ok(dir) = self.chat_dir(id) {
            let had = open_journals()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&dir)
                .is_some();
            if had {
                remove_journals(&dir, None);
            }
        }
    }

    /// Whether chat `id` has adds in a journal that `chat.json` does not hold yet.
    pub fn has_journal(&self, id: &str) -> bool {
        self.journal_adds(id) > 0
    }

    /// How many adds of chat `id` are in its journal and not yet in `chat.json`.
    pub fn journal_adds(&self, id: &str) -> usize {
        self.chat_dir(id).map_or(0, |dir| {
            open_journals()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&dir)
                .map_or(0, |o| o.records)
        })
    }

    /// Applies the journal `chat.json` names to `chat` just read from it. A missing
    /// journal adds nothing (a power loss before its first line); a line that does not
    /// parse, a line over [`LINE_CAP`] or the journal's size cap ([`CHAT_CAP`]) ends
    /// the replay (told to the user as the skips are: `journal_skips`), the adds read
    /// before it are kept, and
    /// the next add starts a new journal. A journal whose name fails the format check
    /// or that is no regular file (a FIFO, a device, a directory, a symlink) is skipped
    /// with a warning in the log and a notice on the chat's next send
    /// (`journal_skips`): it is opened without blocking and never read, and the
    /// chat opens with what `chat.json` holds (docs/ARCHITECTURE.md, "State files").
    pub(super) fn replay(&self, chat: &mut Chat, chat_json: &Path) -> Result<()> {
        let Some(generation) = chat.journal.clone() else {
            return Ok(());
        };
        let dir = self.chat_dir(&chat.id)?;
        let skip = |why: &str| {
            tracing::warn!(chat = %chat.id, "context journal skipped: {why}; the chat opens without it");
            super::journal_skips::skipped(&dir, why);
            open_journals()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&dir);
        };
        if !valid_gen(&generation) {
            skip(&format!("chat.json names the journal {generation:?}"));
            chat.journal = None;
            return Ok(());
        }
        let name = format!("{PREFIX}{generation}{SUFFIX}");
        // A symlink planted as the journal is refused here (it leaves the state
        // directory) before anything opens it.
        let path = match self.chat_path(&chat.id, &name) {
            Ok(p) => p,
            Err(e) => {
                skip(&e.message);
                chat.journal = None;
                return Ok(());
            }
        };
        let file = match fsutil::open_state(&path) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                skip(&format!("{}: {e}", path.display()));
                chat.journal = None;
                return Ok(());
            }
        };
        let (records, stop) = match file {
            Some(f) => replay_lines(chat, f, &path),
            None => (0, None),
        };
        let whole = stop.is_none();
        if let Some((line, why)) = stop {
            super::journal_skips::stopped(&dir, &path, line, &why, records);
        }
        let mut open = open_journals().lock().unwrap_or_else(|p| p.into_inner());
        if whole {
            open.insert(
                dir,
                Open {
                    generation,
                    records,
                    chat_stamp: file_stamp(chat_json),
                },
            );
        } else {
            open.remove(&dir);
        }
        Ok(())
    }
}

/// Applies the lines of the journal `file` (at `path`, named in warnings) to `chat`, read
/// in pieces: at most [`CHAT_CAP`] bytes and [`LINE_CAP`] per line, so a planted
/// journal of any size costs bounded memory. A line that does not parse, a line over
/// its cap and the cap itself end the replay; the adds read before it are kept.
/// Returns the adds applied and, when the replay stopped early, the 1-based line it
/// stopped at and why (for the user: `journal_skips::stopped`).
fn replay_lines(
    chat: &mut Chat,
    file: std::fs::File,
    path: &Path,
) -> (usize, Option<(usize, String)>) {
    use std::io::{BufRead, Read};
    let len = file.metadata().map_or(0, |m| m.len());
    let mut reader = std::io::BufReader::new(file.take(CHAT_CAP));
    let mut line = Vec::new();
    let mut records = 0;
    let mut number = 0;
    loop {
        line.clear();
        number += 1;
        let read = (&mut reader)
            .take(LINE_CAP + 1)
            .read_until(b'\n', &mut line);
        match read {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(journal = %path.display(), "journal replay ended: {e}");
                return (records, Some((number, format!("cannot be read: {e}"))));
            }
        }
        if line.len() as u64 > LINE_CAP {
            tracing::warn!(
                journal = %path.display(),
                "journal replay ended at a line over {LINE_CAP} bytes; {records} adds kept"
            );
            let why = format!("a line over {LINE_CAP} bytes");
            return (records, Some((number, why)));
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Record>(text) {
            // A planted or repeated add is dropped, the replay goes on.
            Ok(r) if !plausible(&r.entry, &chat.context_files) => {}
            Ok(r) => {
                chat.context_files.push(r.entry);
                chat.messages.push(r.event);
                records += 1;
            }
            // The tail of an append a power loss cut, or a planted line.
            Err(e) => {
                tracing::warn!(journal = %path.display(), "journal replay ended at line {number}: {e}");
                let why = format!("not a journal record: {e}");
                return (records, Some((number, why)));
            }
        }
    }
    if len > CHAT_CAP {
        tracing::warn!(
            journal = %path.display(),
            "journal is {len} bytes, over its cap of {CHAT_CAP}: replay stopped there; {records} adds kept"
        );
        let why = format!("the journal is {len} bytes, over its cap of {CHAT_CAP}");
        return (records, Some((number, why)));
    }
    (records, None)
}

/// Whether a journal's file `entry` may join `known`: not a second entry for the same
/// file or section, and a project path that stays inside the project (relative, no
/// `..` component) or an external one that is absolute (docs/ARCHITECTURE.md, "State
/// files": the journal is untrusted input like every state file).
fn plausible(entry: &ContextFile, known: &[ContextFile]) -> bool {
    // Attachments are named texts, not paths.
    if entry.kind.is_some() {
        return true;
    }
    let p = Path::new(&entry.path);
    let shape_ok = if entry.external {
        p.is_absolute()
    } else {
        !entry.path.is_empty()
            && p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    let duplicate = known.iter().any(|k| {
        k.path == entry.path
            && k.start_line == entry.start_line
            && k.end_line == entry.end_line
            && k.kind.is_none()
    });
    shape_ok && !duplicate
}

/// Removes the journals in the chat directory `dir` other than `keep`.
fn remove_journals(dir: &Path, keep: Option<&str>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(generation) = name
            .strip_prefix(PREFIX)
            .and_then(|n| n.strip_suffix(SUFFIX))
        else {
            continue;
        };
        if Some(generation) != keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
