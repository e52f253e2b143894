//! Facts about file contents — sha256, token count, line count, and the hash used to
//! tell whether a file on disk still matches its snapshot — cached so that nothing is
//! recomputed for a file version that did not change.
//!
//! Two maps, persisted per state directory in `cache/files.json` (so a new process is
//! warm too):
//! - `content`, keyed by the sha256 of the text (the content-addressed file id): the
//!   facts themselves;
//! - `stat`, keyed by absolute path: the size, mtime and inode the file had when it was
//!   last hashed, and its sha256. A file whose metadata still matches is not read.
//!
//! The cache is only an accelerator: a missing or corrupt file is ignored and rebuilt,
//! never an error, and it is written by rename (a crash leaves the old or the new one).
//! Token counts are filled in by a background thread after a snapshot is written, so
//! the request that wrote it does not wait for the tokenizer.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::text::to_lf;

/// Where the cache lives inside a state directory.
const CACHE_FILE: &str = "cache/files.json";
/// Format version; a file with another one is ignored.
const FORMAT: u32 = 1;
/// Entries kept per map before old ones are dropped at the next save.
const MAX_ENTRIES: usize = 50_000;

/// What is known about one text.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Facts {
    /// Hex sha256 of the text.
    pub sha256: String,
    /// Hex sha256 of the text with LF line endings and without one final newline: two
    /// files with equal `sync_hash` differ at most in those.
    pub sync_hash: String,
    /// Hex sha256 of the text with LF line endings, when that differs from the text
    /// (it has CRLF endings); see [`Facts::lf_sha256`].
    /// Entries cached before the field existed lack it; they are of LF texts (the
    /// snapshots and outputs it is compared for were stored with LF then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lf_sha256: Option<String>,
    /// Lines in the text (a final line without a newline counts).
    pub lines: usize,
    /// Length in bytes.
    pub bytes: u64,
    /// `cl100k_base` tokens, once counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<usize>,
}

impl Facts {
    /// Computes every fact of `text` except the token count.
    pub fn of(text: &str) -> Facts {
        let lf = to_lf(text);
        let body = lf.strip_suffix('\n').unwrap_or(&lf);
        let mut h = Sha256::new();
        h.update(body.as_bytes());
        let sync_hash = hex::encode(h.clone().finalize());
        if body.len() < lf.len() {
            h.update(b"\n");
        }
        let lf_hash = hex::encode(h.finalize());
        let (sha256, lf_sha256) = if lf.len() == text.len() {
            (lf_hash, None)
        } else {
            (hex::encode(Sha256::digest(text.as_bytes())), Some(lf_hash))
        };
        let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count()
            + usize::from(!text.is_empty() && !text.ends_with('\n'));
        Facts {
            sha256,
            sync_hash,
            lines,
            lf_sha256,
            bytes: text.len() as u64,
            tokens: None,
        }
    }

    /// Hex sha256 of the text with LF line endings: what the model and the review
    /// see of a snapshot, which is stored with the endings it was added with.
    pub fn lf_sha256(&self) -> &str {
        self.lf_sha256.as_deref().unwrap_or(&self.sha256)
    }
}

/// The metadata that identifies one version of a file on disk.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
struct Stamp {
    size: u64,
    mtime_ns: i64,
    ino: u64,
}

/// How close to "now" a modification time must be for a file to count as racy.
const RACY_NS: i64 = 50_000_000;
/// The same for timestamps with whole seconds only (coarse file systems).
const RACY_COARSE_NS: i64 = 2_000_000_000;

impl Stamp {
    /// Whether a file with this stamp, seen now, could still change without its
    /// stamp changing: its mtime lies within the file system's timestamp granularity
    /// of now (git's "racily clean" problem). Such entries are not trusted later.
    fn is_racy(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let margin = if self.mtime_ns % 1_000_000_000 == 0 {
            RACY_COARSE_NS
        } else {
            RACY_NS
        };
        now - self.mtime_ns < margin
    }

    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            size: meta.len(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            ino: meta.ino(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct StatEntry {
    stamp: Stamp,
    sha256: String,
    /// Recorded while the file could still change within its timestamp granularity;
    /// the file is hashed again next time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    racy: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Data {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    content: HashMap<String, Facts>,
    #[serde(default)]
    stat: HashMap<String, StatEntry>,
}

#[derive(Debug, Default)]
struct Cache {
    data: Data,
    dirty: bool,
}

type Caches = HashMap<PathBuf, Cache>;

fn caches() -> &'static Mutex<Caches> {
    static CACHES: OnceLock<Mutex<Caches>> = OnceLock::new();
    CACHES.get_or_init(Default::default)
}

/// Runs `f` on the cache of state directory `base`, loading it on first use.
fn with_cache<R>(base: &Path, f: impl FnOnce(&mut Cache) -> R) -> R {
    let mut all = caches().lock().unwrap_or_else(|p| p.into_inner());
    let cache = all.entry(base.to_path_buf()).or_insert_with(|| Cache {
        data: load(base),
        dirty: false,
    });
    f(cache)
}

/// Reads a persisted cache; anything unreadable is an empty cache, and a damaged one
/// (a named pipe, a symlink, over its cap, not JSON) is set aside (invariant 13).
fn load(base: &Path) -> Data {
    use crate::project::state_file;
    state_file::own_path(base, CACHE_FILE)
        .ok()
        .and_then(|p| state_file::load_or_set_aside::<Data>(&p, state_file::CACHE_CAP))
        .filter(|d| d.version == FORMAT)
        .unwrap_or_default()
}

/// Writes every changed cache to disk. Failures are ignored: the cache is rebuilt
/// from the files it describes.
pub fn flush() {
    let pending: Vec<(PathBuf, Vec<u8>)> = {
        let mut all = caches().lock().unwrap_or_else(|p| p.into_inner());
        all.iter_mut()
            .filter(|(_, c)| c.dirty)
            .filter_map(|(base, c)| {
                c.dirty = false;
                trim(&mut c.data);
                c.data.version = FORMAT;
                serde_json::to_vec(&c.data).ok().map(|b| (base.clone(), b))
            })
            .collect()
    };
    for (base, bytes) in pending {
        let _ = save(&base, &bytes);
    }
}

/// Drops entries beyond [`MAX_ENTRIES`] (stat entries first, then facts no stat entry
/// refers to), so the file cannot grow without bound.
fn trim(data: &mut Data) {
    if data.stat.len() > MAX_ENTRIES {
        let extra = data.stat.len() - MAX_ENTRIES;
        let drop: Vec<String> = data.stat.keys().take(extra).cloned().collect();
        for k in drop {
            data.stat.remove(&k);
        }
    }
    if data.content.len() > MAX_ENTRIES {
        let used: std::collections::HashSet<&str> =
            data.stat.values().map(|s| s.sha256.as_str()).collect();
        let drop: Vec<String> = data
            .content
            .keys()
            .filter(|k| !used.contains(k.as_str()))
            .take(data.content.len() - MAX_ENTRIES)
            .cloned()
            .collect();
        for k in drop {
            data.content.remove(&k);
        }
    }
}

/// Writes the cache by rename. It is not fsynced: after a power loss an empty or
/// stale cache is only slower, never wrong, because every entry is checked against
/// the file's metadata and content hash.
fn save(base: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Never through a symlink planted on the way (invariant 13).
    let path = crate::project::state_file::own_path(base, CACHE_FILE)
        .map_err(|e| std::io::Error::other(e.message))?;
    let dir = path.parent().unwrap_or(base);
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".bb7-tmp-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(())
}

/// The facts of the file at `path`, reading it only when its size, mtime or inode
/// changed since it was last seen. `Ok(None)`: the file does not exist (or is not a
/// regular file). With `tokens`, the token count is filled in (counting once).
/// Errors: the file cannot be read, or is not UTF-8 text.
pub fn file_facts(base: &Path, path: &Path, tokens: bool) -> crate::error::Result<Option<Facts>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::error::Error::io("Cannot read file", e)),
    };
    let stamp = Stamp::of(&meta);
    let key = path.to_string_lossy().into_owned();
    let known = cached(base, &key, &stamp);
    if let Some(f) = known
        && (!tokens || f.tokens.is_some())
    {
        return Ok(Some(f));
    }
    let text = match crate::project::fsutil::read_text(path, &key) {
        Ok(t) => t,
        Err(e) if e.code == crate::error::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let racy = stamp.is_racy();
    Ok(Some(record_stamped(
        base,
        path,
        Some((stamp, racy)),
        &text,
        tokens,
    )))
}

/// Makes the facts, token counts included, of every file in `paths` whose count is
/// not known yet, on one thread per core (at most 8), so an estimate that comes
/// before the background counter is done counts what is left in parallel. Files
/// already counted cost one `stat` each; errors are left for the caller's own read.
pub fn warm_tokens(base: &Path, paths: &[PathBuf]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(paths.len());
    if threads < 2 {
        return;
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(path) = paths.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let _ = file_facts(base, path, true);
                }
            });
        }
    });
}

/// The facts cached for `key` when its file still has `stamp` and the entry was not
/// taken in the same instant as a write (a racy entry is hashed again).
fn cached(base: &Path, key: &str, stamp: &Stamp) -> Option<Facts> {
    with_cache(base, |c| {
        let e = c
            .data
            .stat
            .get(key)
            .filter(|e| &e.stamp == stamp && !e.racy)?;
        c.data.content.get(&e.sha256).cloned()
    })
}

/// Like [`file_facts`] for lines `start..=end` of a file (the text a section covers),
/// cached under the file's metadata and the range. `Ok(None)`: the file is missing or
/// shorter than the range.
pub fn section_facts(
    base: &Path,
    path: &Path,
    start: u64,
    end: u64,
) -> crate::error::Result<Option<Facts>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m,
        _ => return Ok(None),
    };
    let stamp = Stamp::of(&meta);
    let key = format!("{}\0{start}-{end}", path.to_string_lossy());
    let known = cached(base, &key, &stamp);
    if known.is_some() {
        return Ok(known);
    }
    let Ok(text) = crate::project::fsutil::read_text(path, &key) else {
        return Ok(None);
    };
    let text = to_lf(&text);
    let Ok(section) = crate::text::section_text(&text, start, end) else {
        return Ok(None);
    };
    let facts = Facts::of(&section);
    with_cache(base, |c| {
        c.data.stat.insert(
            key,
            StatEntry {
                stamp,
                sha256: facts.sha256.clone(),
                racy: stamp.is_racy(),
            },
        );
        c.data
            .content
            .entry(facts.sha256.clone())
            .or_insert_with(|| facts.clone());
        c.dirty = true;
    });
    Ok(Some(facts))
}

/// Records `text` as the content of `path`, which bb7 itself just wrote inside its
/// state directory, and returns its facts. The token count, when not already known
/// for this content, is left to the background counter.
pub fn record(base: &Path, path: &Path, text: &str) -> Facts {
    // Only this process writes the file (the chat is locked), so the stamp taken
    // right after the write is trusted although it is recent.
    let stamp = std::fs::metadata(path).ok().map(|m| (Stamp::of(&m), false));
    record_stamped(base, path, stamp, text, false)
}

/// Records `text`, read from `path` with metadata `stamp` (and whether that stamp is
/// racy), and returns its facts, counting tokens now when `tokens`.
fn record_stamped(
    base: &Path,
    path: &Path,
    stamp: Option<(Stamp, bool)>,
    text: &str,
    tokens: bool,
) -> Facts {
    let mut facts = Facts::of(text);
    let known = with_cache(base, |c| {
        c.data.content.get(&facts.sha256).and_then(|f| f.tokens)
    });
    facts.tokens = known;
    if tokens && facts.tokens.is_none() {
        facts.tokens = Some(crate::tokens::count(text));
    }
    with_cache(base, |c| {
        if let Some((stamp, racy)) = stamp {
            c.data.stat.insert(
                path.to_string_lossy().into_owned(),
                StatEntry {
                    stamp,
                    sha256: facts.sha256.clone(),
                    racy,
                },
            );
        }
        let entry = c
            .data
            .content
            .entry(facts.sha256.clone())
            .or_insert_with(|| facts.clone());
        if entry.tokens.is_none() {
            entry.tokens = facts.tokens;
        }
        c.dirty = true;
    });
    if facts.tokens.is_none() {
        count_later(base, &facts.sha256, path);
    }
    facts
}

/// The token count of a text with sha256 `sha`, if known.
pub fn known_tokens(base: &Path, sha: &str) -> Option<usize> {
    with_cache(base, |c| c.data.content.get(sha).and_then(|f| f.tokens))
}

/// A text to count: the file is read again when its turn comes, so the queue holds
/// no file contents.
struct Job {
    base: PathBuf,
    sha256: String,
    path: PathBuf,
}

/// Queues the file at `path` (content sha256 `sha`) for counting on the background
/// thread, which saves the caches once its queue is empty.
fn count_later(base: &Path, sha: &str, path: &Path) {
    static QUEUE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("bb7-token-count".into())
            .spawn(move || counter(rx));
        if spawned.is_err() {
            // No thread: counts are made on demand instead.
        }
        Mutex::new(tx)
    });
    let job = Job {
        base: base.to_path_buf(),
        sha256: sha.to_owned(),
        path: path.to_path_buf(),
    };
    if let Ok(tx) = queue.lock() {
        let _ = tx.send(job);
    }
}

/// The counter saves the caches once no file was queued for this long, so a run of
/// adds does not rewrite `cache/files.json` (every entry) after each file it counts.
const LULL: std::time::Duration = std::time::Duration::from_millis(50);

/// Counts queued files as they come, at a lower CPU priority than the thread answering
/// requests: a file is counted while the adds go on, on the other core, so the first
/// estimate after a burst of adds finds nearly every count made (an estimate that
/// comes first counts what is left itself). The caches are saved after a lull.
fn counter(rx: mpsc::Receiver<Job>) {
    crate::project::flush_queue::lower_priority();
    let mut unsaved = false;
    loop {
        let job = if unsaved {
            match rx.recv_timeout(LULL) {
                Ok(job) => job,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    flush();
                    unsaved = false;
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    flush();
                    return;
                }
            }
        } else {
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        count_job(&job);
        unsaved = true;
    }
}

/// Counts the tokens of one queued file, unless known or changed since.
fn count_job(job: &Job) {
    if known_tokens(&job.base, &job.sha256).is_none()
        && let Ok(bytes) = crate::project::fsutil::read_regular(&job.path)
        && let Ok(text) = String::from_utf8(bytes)
        && hex::encode(Sha256::digest(text.as_bytes())) == job.sha256
    {
        let n = crate::tokens::count(&text);
        with_cache(&job.base, |c| {
            if let Some(f) = c.data.content.get_mut(&job.sha256) {
                f.tokens = Some(n);
                c.dirty = true;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Facts;

    #[test]
    fn sync_hash_ignores_final_newline_and_crlf() {
        let a = Facts::of("a\nb\n");
        let b = Facts::of("a\nb");
        let c = Facts::of("a\r\nb\r\n");
        assert_eq!(a.sync_hash, b.sync_hash);
        assert_eq!(a.sync_hash, c.sync_hash);
        assert_ne!(a.sha256, b.sha256);
        assert_ne!(Facts::of("a\nc\n").sync_hash, a.sync_hash);
        assert_eq!(
            a.sha256,
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"a\nb\n"))
        );
        assert_eq!((a.lines, b.lines, Facts::of("").lines), (2, 2, 0));
    }
}
