//! What the invisible-character check of a send found in each snapshot, kept per
//! content hash. Snapshots are immutable (docs/ARCHITECTURE.md "What is stored"), and
//! `filecache::file_facts` gives a snapshot's sha256 from its size, mtime and inode
//! without reading it, so a send of 200 files reads and scans only the snapshots no
//! earlier send of this process checked (`send_notices::carried_warnings`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::text::invisible::{self, Found, MAX_WARNINGS};

/// Entries kept before the map starts afresh: 16,384 contents, each a handful of
/// positions (at most [`MAX_WARNINGS`] + 1), so a few hundred KiB at worst.
const CAP: usize = 16_384;

/// Found characters by sha256 of the snapshot's exact bytes.
static FOUND: Mutex<Option<HashMap<String, Arc<Vec<Found>>>>> = Mutex::new(None);

/// Scans made so far ([`scans`]).
static SCANS: AtomicUsize = AtomicUsize::new(0);

/// The characters found in the snapshot whose exact bytes hash to `sha256` (`None`
/// when the hash is not known: the text is read and scanned, not kept). `read` gives
/// the text as the model is shown it (LF line ends), and is called only when this
/// content was not scanned before; `None` from it (the snapshot cannot be read) is
/// `None` here.
pub(super) fn found_in(
    sha256: Option<&str>,
    read: impl FnOnce() -> Option<String>,
) -> Option<Arc<Vec<Found>>> {
    let lock = || FOUND.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(sha) = sha256
        && let Some(f) = lock().as_ref().and_then(|m| m.get(sha))
    {
        return Some(f.clone());
    }
    let text = read()?;
    SCANS.fetch_add(1, Ordering::Relaxed);
    let found = Arc::new(invisible::find(&text, MAX_WARNINGS + 1));
    if let Some(sha) = sha256 {
        let mut map = lock();
        let map = map.get_or_insert_with(HashMap::new);
        if map.len() >= CAP {
            map.clear();
        }
        map.insert(sha.to_owned(), found.clone());
    }
    Some(found)
}

/// How many texts [`found_in`] scanned in this process: what shows a second send
/// re-reads nothing it checked before. For tests only.
#[cfg(test)]
pub(super) fn scans() -> usize {
    SCANS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_content_scanned_once_is_not_read_again() {
        let reads = std::cell::Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Some("a\u{202E}b\n".to_owned())
        };
        let sha = "found_in-test-sha-0001";
        let before = scans();
        let first = found_in(Some(sha), read).unwrap();
        let second = found_in(Some(sha), read).unwrap();
        assert_eq!(first, second);
        assert_eq!(first.len(), 1);
        assert_eq!(reads.get(), 1, "the second send read the snapshot again");
        assert!(scans() > before);
        // Without a known hash, nothing is kept: read each time.
        found_in(None, read).unwrap();
        found_in(None, read).unwrap();
        assert_eq!(reads.get(), 3);
        // An unreadable snapshot is not judged.
        assert!(found_in(Some("found_in-test-sha-0002"), || None).is_none());
    }
}
