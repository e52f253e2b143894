//! A directory of chats: `chats/index.json`, `chats/{id}/chat.json`, and the pin and
//! archive lists beside `chats/` (docs/PROTOCOL.md,
//! "Facts about the reference implementation", for the index shape).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::chat::excerpt::{excerpt_around, searchable_text};
use crate::chat::ids;
use crate::chat::list_cache::{self, ListStamps};
use crate::chat::model::ChatSummary;
use crate::chat::model::{CHAT_VERSION, Chat};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::flush_queue::{self, Rank};
use crate::project::fsutil::{self, write_json_atomic};
use crate::project::fsutil::{Stamp, file_stamp};
use crate::project::lock;
use crate::project::paths::{state_path, valid_chat_id};
use crate::project::state_file::{self, CACHE_CAP, CHAT_CAP, SMALL_CAP};

/// How many of the newest chats `list` probes for a lock even without a holder's hint
/// (see [`ChatStore::list`]).
const PROBED_WITHOUT_HINT: usize = 64;

/// One store of chats: the project's `.bb7/` or the user's `~/.bb7/`.
#[derive(Debug, Clone)]
pub struct ChatStore {
    /// The state directory (`.bb7` or `~/.bb7`); `chats/` lives inside it.
    base: PathBuf,
    /// Whether this is the global store (`~/.bb7`).
    pub global: bool,
}

/// `chats/index.json`: `{"version":1,"active_chat_id","chats":[{"id","name","created"}]}`.
/// A cache: chats missing from it are still found by scanning `chats/`.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq, Eq)]
pub struct Index {
    /// Always 1.
    #[serde(default)]
    pub version: u32,
    /// The chat that was active when this store was last used, if any.
    #[serde(default)]
    pub active_chat_id: Option<String>,
    /// Known chats.
    #[serde(default)]
    pub chats: Vec<IndexEntry>,
    /// In a project's index: the global chat that was active last, when the last
    /// active chat was a global one (bb7's addition; the reference ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_global_chat_id: Option<String>,
}

/// One index entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct IndexEntry {
    /// Chat id.
    pub id: String,
    /// Chat name.
    #[serde(default)]
    pub name: String,
    /// RFC 3339 creation time.
    #[serde(default)]
    pub created: String,
}

/// Where a `search_chats` hit matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchType {
    /// The chat's name.
    Title,
    /// A message's text.
    Content,
}

/// One `search_chats` hit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchHit {
    /// Chat id.
    pub id: String,
    /// Chat name.
    pub name: String,
    /// RFC 3339 creation time.
    pub created: String,
    /// `title` or `content`.
    pub match_type: MatchType,
    /// Text around a content match, on one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
}

const PINS_FILE: &str = "pinned_chats.json";
const ARCHIVE_FILE: &str = "archived_chats.json";

impl ChatStore {
    /// A store rooted at `base` (`{project}/.bb7` or `~/.bb7`).
    pub fn new(base: PathBuf, global: bool) -> ChatStore {
        ChatStore { base, global }
    }

    /// `{base}/chats`, checked for planted symlinks.
    pub fn chats_dir(&self) -> Result<PathBuf> {
        state_path(&self.base, "chats")
    }

    /// The directory of chat `id`. Errors: `Chat not found` for an id that cannot
    /// name a chat; `path_escape` for a symlinked directory.
    pub fn chat_dir(&self, id: &str) -> Result<PathBuf> {
        if !valid_chat_id(id) {
            return Err(Error::chat_not_found());
        }
        state_path(&self.base, &format!("chats/{id}"))
    }

    /// A path inside chat `id`'s directory (`context/…`, `output/…`), refusing
    /// symlinks and escapes.
    pub fn chat_path(&self, id: &str, rel: &str) -> Result<PathBuf> {
        if !valid_chat_id(id) {
            return Err(Error::chat_not_found());
        }
        state_path(&self.base, &format!("chats/{id}/{rel}"))
    }

    /// A cache file inside chat `id`'s directory (the prompt ledger): as
    /// [`ChatStore::chat_path`], with a symlink planted in place of the file itself set
    /// aside (`state_file::own_path`) instead of refused.
    pub fn cache_path(&self, id: &str, rel: &str) -> Result<PathBuf> {
        if !valid_chat_id(id) {
            return Err(Error::chat_not_found());
        }
        state_file::own_path(&self.base, &format!("chats/{id}/{rel}"))
    }

    /// Whether chat `id` exists (its `chat.json` does, even as something a load
    /// refuses as damaged: such a chat is told as damaged, not as missing).
    pub fn exists(&self, id: &str) -> bool {
        self.chat_path(id, "chat.json")
            .map(|p| p.symlink_metadata().is_ok())
            .unwrap_or(false)
    }

    /// Loads chat `id`, migrating older formats and re-saving them.
    /// Errors: `Chat not found`; a message naming the file when it does not parse.
    pub fn load(&self, id: &str) -> Result<Chat> {
        let path = self.chat_path(id, "chat.json")?;
        // Refused, never set aside: a chat holds the user's work (invariant 13).
        let bytes = match fsutil::read_state(&path, CHAT_CAP) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::chat_not_found());
            }
            Err(e) if fsutil::is_damage(&e) => {
                return Err(Error::new(
                    ErrorCode::Io,
                    format!("Chat {id} is damaged ({}): {e}", path.display()),
                ));
            }
            Err(e) => return Err(Error::io("Cannot read chat", e)),
        };
        let mut chat: Chat = serde_json::from_slice(&bytes).map_err(|e| {
            Error::new(
                ErrorCode::Io,
                format!("Chat {id} is damaged ({}): {e}", path.display()),
            )
        })?;
        // The folder names the chat, not the file: a copied folder (`cp -r chats/A
        // chats/B`) or a tampered `id` must never make this chat save into another
        // chat's folder, whose lock this process does not hold (invariant 7).
        if chat.id != id {
            if !chat.id.is_empty() {
                tracing::warn!(
                    folder = id,
                    "chat.json named another chat; the folder's id is used"
                );
            }
            chat.id = id.to_owned();
        }
        self.replay(&mut chat, &path)?;
        chat.check_paths().map_err(|why| {
            Error::new(
                ErrorCode::Io,
                format!("Chat {id} is damaged ({}): {why}", path.display()),
            )
        })?;
        if chat.migrate() {
            self.save(&chat)?;
        }
        Ok(chat)
    }

    /// Writes `chat.json` atomically, whole: a context journal it had is folded in
    /// and removed (`chat::journal`).
    pub fn save(&self, chat: &Chat) -> Result<()> {
        let path = self.chat_path(&chat.id, "chat.json")?;
        let bytes = self.encode(chat)?;
        // Flushed in the background after any snapshot it names (Durability 8).
        let dir = self.chat_dir(&chat.id)?;
        flush_queue::write(&path, &bytes, Rank::Chat, &self.base, Some(&dir))?;
        self.journal_folded(&chat.id);
        Ok(())
    }

    /// `chat` as `chat.json` holds it. Errors: it would be over the cap a read
    /// accepts (`state_file::CHAT_CAP`).
    pub(super) fn encode(&self, chat: &Chat) -> Result<Vec<u8>> {
        // Compact: the file is rewritten on every change of the chat, and indenting a
        // chat with thousands of context events costs more than the write itself.
        let mut bytes = serde_json::to_vec(chat).map_err(|e| {
            Error::new(
                ErrorCode::Io,
                format!("Cannot encode chat {}: {e}", chat.id),
            )
        })?;
        bytes.push(b'\n');
        // What cannot be read back is not written (invariant 13).
        if bytes.len() as u64 > CHAT_CAP {
            return Err(Error::invalid(format!(
                "Chat {} would exceed {} MiB; compact it (chat_compact) or start a new chat",
                chat.id,
                CHAT_CAP / (1024 * 1024)
            )));
        }
        Ok(bytes)
    }

    /// Creates a new chat with a fresh id and adds it to the index as the active chat.
    pub fn create(&self, name: Option<&str>, model: &str) -> Result<Chat> {
        self.create_locked(name, model).map(|(chat, _)| chat)
    }

    /// [`ChatStore::create`], holding the new chat's lock from before the index names
    /// it: another process that opens the project in between then finds the chat
    /// taken instead of taking it (invariant 7). Errors: as `create`, and `locked`.
    pub fn create_locked(&self, name: Option<&str>, model: &str) -> Result<(Chat, lock::ChatLock)> {
        let chats = self.chats_dir()?;
        std::fs::create_dir_all(&chats)
            .map_err(|e| Error::io("Cannot create chats directory", e))?;
        let mut id = ids::new_chat_id();
        while self.chat_dir(&id)?.exists() {
            id = ids::new_chat_id();
        }
        let chat = Chat {
            version: CHAT_VERSION,
            id: id.clone(),
            name: name
                .filter(|n| !n.trim().is_empty())
                .map(str::to_owned)
                .unwrap_or_else(ids::default_chat_name),
            created: ids::now_rfc3339(),
            model: model.to_owned(),
            ..Chat::default()
        };
        let dir = self.chat_dir(&id)?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("Cannot create chat", e))?;
        let held = lock::ChatLock::acquire(&dir)?;
        self.save(&chat)?;
        // Every caller activates the new chat next; recording that here lets the
        // activation find the index unchanged, so the index is written once.
        self.update_index(|idx| {
            index_chat(idx, &chat);
            idx.active_chat_id = Some(chat.id.clone());
        })?;
        Ok((chat, held))
    }

    /// Reads the index; a missing or damaged index is an empty one (it is a cache).
    pub fn read_index(&self) -> Index {
        self.shared_index().as_ref().clone()
    }

    /// The parsed index, shared with earlier reads while the file's size, mtime and
    /// inode are unchanged (every write replaces it by rename, so a change of content
    /// is a change of inode): with 20,000 chats, parsing it costs more than the rest of
    /// `chat_new`.
    fn shared_index(&self) -> Arc<Index> {
        let Ok(path) = state_file::own_path(&self.base, "chats/index.json") else {
            return Arc::default();
        };
        let Some(stamp) = file_stamp(&path) else {
            return Arc::default();
        };
        let mut cache = index_cache().lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, idx)) = cache.get(&path)
            && *s == stamp
        {
            return idx.clone();
        }
        // A cache: a damaged one is set aside and rebuilt (invariant 13).
        let index: Arc<Index> =
            Arc::new(state_file::load_or_set_aside(&path, CACHE_CAP).unwrap_or_default());
        cache.insert(path, (stamp, index.clone()));
        index
    }

    /// Changes the index and writes it atomically (not at all when nothing changed).
    pub fn update_index(&self, change: impl FnOnce(&mut Index)) -> Result<()> {
        let before = self.shared_index();
        let mut index = before.as_ref().clone();
        change(&mut index);
        index.version = 1;
        if index == *before {
            return Ok(());
        }
        let path = state_file::own_path(&self.base, "chats/index.json")?;
        let mut bytes = serde_json::to_vec(&index)
            .map_err(|e| Error::new(ErrorCode::Io, format!("Cannot encode the chat index: {e}")))?;
        bytes.push(b'\n');
        // A cache, flushed in the background after the chats it lists (Durability 8).
        flush_queue::write(&path, &bytes, Rank::Cache, &self.base, None)?;
        if let Some(stamp) = file_stamp(&path) {
            let mut cache = index_cache().lock().unwrap_or_else(|p| p.into_inner());
            cache.insert(path, (stamp, Arc::new(index)));
        }
        Ok(())
    }

    /// Records the active chat in the index (restored by `init` in a new process).
    pub fn set_active(&self, id: Option<&str>) -> Result<()> {
        self.update_index(|idx| idx.active_chat_id = id.map(str::to_owned))
    }

    /// Records (in a project's index) that the global chat `id` is the active one.
    pub fn set_active_global(&self, id: Option<&str>) -> Result<()> {
        self.update_index(|idx| idx.active_global_chat_id = id.map(str::to_owned))
    }

    /// Renames chat `id` in `chat.json` and the index.
    pub fn rename(&self, chat: &mut Chat, name: &str) -> Result<()> {
        chat.name = name.to_owned();
        self.save(chat)?;
        self.update_index(|idx| match idx.chats.iter_mut().find(|e| e.id == chat.id) {
            Some(e) => e.name = chat.name.clone(),
            None => idx.chats.push(IndexEntry {
                id: chat.id.clone(),
                name: chat.name.clone(),
                created: chat.created.clone(),
            }),
        })
    }

    /// Deletes chat `id`'s directory and its index, pin and archive entries.
    pub fn delete(&self, id: &str) -> Result<()> {
        let dir = self.chat_dir(id)?;
        if !dir.is_dir() {
            return Err(Error::chat_not_found());
        }
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io("Cannot delete chat", e))?;
        self.forget(id)
    }

    /// Drops `id` from the index, pins and archive (after a delete or a move).
    pub fn forget(&self, id: &str) -> Result<()> {
        self.update_index(|idx| {
            idx.chats.retain(|e| e.id != id);
            if idx.active_chat_id.as_deref() == Some(id) {
                idx.active_chat_id = None;
            }
        })?;
        self.set_flag(PINS_FILE, id, false)?;
        self.set_flag(ARCHIVE_FILE, id, false)
    }

    /// Adds a chat that arrived from elsewhere (`chat_move`) to the index.
    pub fn adopt(&self, chat: &Chat) -> Result<()> {
        self.update_index(|idx| index_chat(idx, chat))
    }

    /// Lists chats: pinned first, then newest first. Archived chats are left out
    /// unless `include_archived`. Chat directories missing from the index are found
    /// by scanning and still listed (the index is a cache).
    pub fn list(&self, include_archived: bool) -> Result<Vec<ChatSummary>> {
        let dir = self.chats_dir()?;
        let stamps = ListStamps {
            chats: file_stamp(&dir),
            index: state_path(&self.base, "chats/index.json")
                .ok()
                .and_then(|p| file_stamp(&p)),
            pins: state_path(&self.base, PINS_FILE)
                .ok()
                .and_then(|p| file_stamp(&p)),
            archive: state_path(&self.base, ARCHIVE_FILE)
                .ok()
                .and_then(|p| file_stamp(&p)),
        };
        let key = (dir.clone(), include_archived);
        let cached = list_cache::get(&key, &stamps);
        let mut rows = match cached {
            Some(rows) => rows,
            None => {
                let rows = self.scan(&dir, include_archived)?;
                list_cache::put(key, stamps, &rows);
                rows
            }
        };
        // Only chats with a holder's hint, and the newest ones, are probed: one open per
        // chat costs more than the rest of the listing at 20,000 chats. The newest are
        // probed without a hint because a reference BB-7 process leaves none, and the
        // chat it holds is almost always a recent one.
        let may_be_locked = lock::hinted(&self.base);
        let dir_handle = std::fs::File::open(&dir).ok();
        for (i, row) in rows.iter_mut().enumerate() {
            if i >= PROBED_WITHOUT_HINT && !may_be_locked.contains(&row.id) {
                continue;
            }
            row.locked = match &dir_handle {
                Some(d) => lock::holder_in(d, &row.id).is_some(),
                None => lock::holder(&dir.join(&row.id)).is_some(),
            };
        }
        Ok(rows)
    }

    /// The chats in `dir`, sorted as [`ChatStore::list`] gives them, none marked locked.
    fn scan(&self, dir: &Path, include_archived: bool) -> Result<Vec<ChatSummary>> {
        let index = self.shared_index();
        // Position in the index: `created` has whole seconds, and within one second the
        // index, which lists chats in the order they were made, tells which is newer.
        let known: HashMap<&str, (usize, &IndexEntry)> = index
            .chats
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.as_str(), (i, e)))
            .collect();
        let pins = self.flags(PINS_FILE);
        let archived = self.flags(ARCHIVE_FILE);
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("Cannot list chats", e)),
        };
        let mut rows: Vec<(Option<usize>, ChatSummary)> = Vec::with_capacity(index.chats.len());
        for entry in entries.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let Ok(id) = entry.file_name().into_string() else {
                continue;
            };
            if !valid_chat_id(&id) {
                continue;
            }
            let is_archived = archived.contains(&id);
            if is_archived && !include_archived {
                continue;
            }
            let (position, name, created) = match known.get(id.as_str()) {
                Some((i, e)) => (Some(*i), e.name.clone(), e.created.clone()),
                None => match self.load(&id) {
                    Ok(chat) => (None, chat.name, chat.created),
                    Err(_) => continue,
                },
            };
            rows.push((
                position,
                ChatSummary {
                    locked: false,
                    pinned: pins.contains(&id),
                    archived: is_archived,
                    id,
                    name,
                    created,
                },
            ));
        }
        rows.sort_unstable_by(|(pa, a), (pb, b)| {
            b.pinned
                .cmp(&a.pinned)
                .then_with(|| b.created.cmp(&a.created))
                .then_with(|| pb.cmp(pa))
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(rows.into_iter().map(|(_, c)| c).collect())
    }

    /// Searches chat names and messages, case-insensitively. A chat whose name
    /// matches is a `title` hit; otherwise its first matching message (its text, or
    /// the path of a context event) gives a `content` hit with an excerpt. Archived
    /// chats are searched too. An empty query lists every chat that `chat_list`
    /// shows as a `title` hit: the reference plugin's pickers open with it. Newest
    /// first.
    pub fn search(&self, query: &str) -> Result<Vec<SearchHit>> {
        let needle = query.trim().to_lowercase();
        if needle.is_empty() {
            let mut all = self.list(false)?;
            // Stable: chats of the same second keep the order `list` gave them.
            all.sort_by(|a, b| b.created.cmp(&a.created));
            return Ok(all
                .into_iter()
                .map(|c| SearchHit {
                    id: c.id,
                    name: c.name,
                    created: c.created,
                    match_type: MatchType::Title,
                    excerpt: None,
                })
                .collect());
        }
        // The raw file can be scanned before parsing when the query has no character
        // that JSON writers escape (the reference's also escapes <, > and &).
        let raw_prefilter = needle.is_ascii()
            && !needle
                .bytes()
                .any(|b| b < 0x20 || matches!(b, b'"' | b'\\' | b'<' | b'>' | b'&'));
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let mut hits = Vec::new();
        let mut chats = self.list(true)?;
        chats.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| a.id.cmp(&b.id)));
        for chat in chats {
            if chat.name.to_lowercase().contains(&needle) {
                hits.push(SearchHit {
                    id: chat.id,
                    name: chat.name,
                    created: chat.created,
                    match_type: MatchType::Title,
                    excerpt: None,
                });
                continue;
            }
            let Ok(path) = self.chat_path(&chat.id, "chat.json") else {
                continue;
            };
            let Ok(mut bytes) = fsutil::read_state(&path, CHAT_CAP) else {
                continue;
            };
            // Adds in a context journal are not in `chat.json`'s bytes.
            let journaled = memchr::memmem::find(&bytes, b"\"context_journal\"").is_some();
            if raw_prefilter && !journaled {
                bytes.make_ascii_lowercase();
                if finder.find(&bytes).is_none() {
                    continue;
                }
            }
            let Ok(full) = self.load(&chat.id) else {
                continue;
            };
            let excerpt = full
                .messages
                .iter()
                .find_map(|m| excerpt_around(&searchable_text(m), &needle));
            if let Some(excerpt) = excerpt {
                hits.push(SearchHit {
                    id: chat.id,
                    name: chat.name,
                    created: chat.created,
                    match_type: MatchType::Content,
                    excerpt: Some(excerpt),
                });
            }
        }
        Ok(hits)
    }

    /// Pins or unpins chat `id` (`pinned_chats.json`, a JSON array of ids).
    pub fn set_pinned(&self, id: &str, pinned: bool) -> Result<()> {
        self.require(id)?;
        self.set_flag(PINS_FILE, id, pinned)
    }

    /// Archives or restores chat `id` (`archived_chats.json`, a JSON array of ids).
    pub fn set_archived(&self, id: &str, archived: bool) -> Result<()> {
        self.require(id)?;
        self.set_flag(ARCHIVE_FILE, id, archived)
    }

    fn require(&self, id: &str) -> Result<()> {
        if self.exists(id) {
            Ok(())
        } else {
            Err(Error::chat_not_found())
        }
    }

    /// The ids in a flag file; anything unreadable counts as none (for listing).
    fn flags(&self, file: &str) -> HashSet<String> {
        self.read_flags(file).unwrap_or_default()
    }

    /// The ids in a flag file: none when it does not exist, or when it is damaged (not
    /// a regular file, over its cap, not a list of ids), which is then set aside
    /// (invariant 13). Errors: it exists but cannot be read now (a permission error),
    /// so a change must not replace it (Durability 9).
    fn read_flags(&self, file: &str) -> Result<HashSet<String>> {
        let path = self.flags_path(file)?;
        let bytes = match fsutil::read_state(&path, SMALL_CAP) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashSet::new()),
            Err(e) if fsutil::is_damage(&e) => {
                state_file::set_aside(&path, &e.to_string());
                return Ok(HashSet::new());
            }
            Err(e) => return Err(Error::io(format!("Cannot read {file}"), e)),
        };
        // bb7 writes a plain array; the reference plugin writes its own pins as
        // `{"chats":[…]}` into the same file.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Flags {
            List(Vec<String>),
            Object { pinned: Vec<String> },
            Reference { chats: Vec<String> },
        }
        match serde_json::from_slice::<Flags>(&bytes) {
            Ok(Flags::List(v) | Flags::Object { pinned: v } | Flags::Reference { chats: v }) => {
                Ok(v.into_iter().collect())
            }
            Err(e) => {
                state_file::set_aside(&path, &format!("not a list of chat ids: {e}"));
                Ok(HashSet::new())
            }
        }
    }

    /// The path of a flag file, a symlink planted there set aside.
    fn flags_path(&self, file: &str) -> Result<PathBuf> {
        state_file::own_path(&self.base, file)
    }

    fn set_flag(&self, file: &str, id: &str, on: bool) -> Result<()> {
        let mut set = self.read_flags(file)?;
        let changed = if on {
            set.insert(id.to_owned())
        } else {
            set.remove(id)
        };
        if !changed {
            return Ok(());
        }
        let mut list: Vec<String> = set.into_iter().collect();
        list.sort();
        let path = self.flags_path(file)?;
        if file == PINS_FILE {
            // The reference plugin reads and writes pins as `{"chats":[…]}`.
            write_json_atomic(&path, &serde_json::json!({ "chats": list }))
        } else {
            write_json_atomic(&path, &list)
        }
    }

    /// The state directory of this store.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Removes a file inside a chat directory (missing is fine).
    pub fn remove_chat_file(&self, id: &str, rel: &str) -> Result<()> {
        fsutil::remove_file_if_exists(&self.chat_path(id, rel)?)
    }
}

type IndexCache = HashMap<PathBuf, (Stamp, Arc<Index>)>;

fn index_cache() -> &'static Mutex<IndexCache> {
    static CACHE: OnceLock<Mutex<IndexCache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Puts `chat` into the index, replacing an older entry of the same id.
fn index_chat(idx: &mut Index, chat: &Chat) {
    idx.chats.retain(|e| e.id != chat.id);
    idx.chats.push(IndexEntry {
        id: chat.id.clone(),
        name: chat.name.clone(),
        created: chat.created.clone(),
    });
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
