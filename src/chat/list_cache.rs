//! The last `chat_list` of each chats directory, kept while nothing it was built from
//! changed: at 20,000 chats, reading the directory, joining it with the index and
//! sorting costs more than the rest of the request.
//!
//! It is built from the chats directory (a chat made or deleted changes its mtime), the
//! index (replaced by rename, so a change is a new inode), and the pin and archive
//! files. A stamp whose mtime lies within the file system's timestamp granularity of
//! now could still change without its stamp changing, so such a listing is not kept.
//! Whether a chat is locked is not cached: the caller probes it on every call.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use crate::chat::model::ChatSummary;
use crate::project::fsutil::Stamp;

/// What a listing was built from; `None` for a file that did not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListStamps {
    /// The chats directory itself.
    pub chats: Option<Stamp>,
    /// `chats/index.json`.
    pub index: Option<Stamp>,
    /// The pin list.
    pub pins: Option<Stamp>,
    /// The archive list.
    pub archive: Option<Stamp>,
}

/// How close to now an mtime with sub-second digits must be to count as racy.
const RACY_NS: i128 = 50_000_000;
/// The same for whole-second timestamps (coarse file systems).
const RACY_COARSE_NS: i128 = 2_000_000_000;

impl ListStamps {
    fn racy(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        [self.chats, self.index, self.pins, self.archive]
            .into_iter()
            .flatten()
            .any(|(_, secs, nanos, _)| {
                let at = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
                let margin = if nanos == 0 { RACY_COARSE_NS } else { RACY_NS };
                now - at < margin
            })
    }
}

/// Key: the chats directory and whether archived chats are included.
type Key = (PathBuf, bool);
type Cache = HashMap<Key, (ListStamps, Vec<ChatSummary>)>;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A copy of the listing kept for `key`, if it was built from exactly `stamps`.
pub fn get(key: &Key, stamps: &ListStamps) -> Option<Vec<ChatSummary>> {
    let all = cache().lock().unwrap_or_else(|p| p.into_inner());
    let (built_from, rows) = all.get(key)?;
    (built_from == stamps).then(|| rows.clone())
}

/// Keeps `rows` as the listing for `key`, unless a stamp is too recent to trust.
pub fn put(key: Key, stamps: ListStamps, rows: &[ChatSummary]) {
    let mut all = cache().lock().unwrap_or_else(|p| p.into_inner());
    if stamps.racy() {
        all.remove(&key);
    } else {
        all.insert(key, (stamps, rows.to_vec()));
    }
}
