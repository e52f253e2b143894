//! Deferred flushing of bb7's own state files (docs/ARCHITECTURE.md, "Durability" 1
//! and 8).
//!
//! A flush to disk (`fsync`) costs 0.3 to 13 ms on an ordinary disk, and a request such
//! as `context_add` writes a snapshot and `chat.json`: flushing both and their
//! directories on the request path made it several times slower than the write itself.
//! So the request path here only writes a temporary file and renames it over the target
//! (atomic: a killed process leaves the old or the new file, never a torn one), and a
//! background thread flushes what was written once the writes pause ([`QUIET`], at
//! most [`MAX_DELAY`] after the first), in one burst: every file of a burst in
//! durability order (snapshots, then the `chat.json` that names them, then caches such
//! as the index), then their directories.
//!
//! What a power loss can leave before a burst is flushed is handled on open: each chat
//! written by a process gets an empty marker file `.unflushed-{pid}` before its first
//! deferred write and loses it once everything written is on disk. A chat opened with
//! another process's marker had its writer die mid-burst, so `recovery::open_chat`
//! checks every snapshot against the version `chat.json` records and drops those a
//! power loss left missing or torn. The user's own files are not written here: they are
//! flushed before the write returns (`fsutil::write_atomic`).
//!
//! A cache whose bytes cost more to make than to keep, such as a chat's prompt ledger,
//! is written by the thread itself ([`write_later`]): the request hands over a job that
//! serializes and writes it, and the burst flushes the result.
//!
//! [`flush_now`] writes everything out synchronously, queued jobs first; the server calls
//! it before it exits (shutdown, end of input, SIGTERM), so a clean exit leaves nothing
//! unflushed.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::error::Result;

/// Name prefix of the marker a writing process leaves in a chat's directory.
pub const MARKER_PREFIX: &str = ".unflushed-";

/// Where a deferred file stands in the durability order: a burst flushes lower ranks
/// first, so a referent is on disk no later than the file that refers to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    /// A file something else refers to (a context snapshot).
    Referent,
    /// A chat's `chat.json`, which names its snapshots.
    Chat,
    /// A cache over chats (`index.json`), rebuilt by scanning when lost.
    Cache,
}

/// One deferred write waiting for its flush.
#[derive(Debug)]
struct Pending {
    path: PathBuf,
    rank: Rank,
    /// The state directory: when the write created directories, their parents up to
    /// and including it are flushed too.
    root: PathBuf,
    /// Whether the write created the file's directory (and maybe its parents).
    new_dirs: bool,
    /// The chat directory whose marker covers this write, if any.
    chat: Option<PathBuf>,
}

/// Writes a file when the flush thread runs it ([`write_later`]); returns whether it
/// wrote.
pub type Job = Box<dyn FnOnce() -> bool + Send>;

/// A job waiting for the flush thread, and the file it writes.
struct Deferred {
    path: PathBuf,
    root: PathBuf,
    job: Job,
}

impl Deferred {
    /// Runs the job; the write to flush when it wrote.
    fn run(self) -> Option<Pending> {
        (self.job)().then_some(Pending {
            path: self.path,
            rank: Rank::Cache,
            root: self.root,
            new_dirs: false,
            chat: None,
        })
    }
}

#[derive(Default)]
struct State {
    pending: Vec<Pending>,
    /// Jobs to run before the next burst, at most one per path.
    jobs: Vec<Deferred>,
    /// A burst is being flushed (by the thread or by [`flush_now`]).
    busy: bool,
    /// Chat directories that hold this process's marker.
    marked: HashSet<PathBuf>,
    /// Whether the background thread runs; without one, writes flush inline.
    thread: Option<bool>,
    /// When the last deferred write was made.
    last_write: Option<Instant>,
    /// When the oldest write still pending was made.
    oldest: Option<Instant>,
    /// Every write is flushed before its rename (config `sync_writes`).
    synchronous: bool,
}

/// With `on`, every later [`write`] flushes its file before the rename and returns only
/// then, as the user's files are written: for file systems that may leave a file
/// renamed over an older one empty after a power loss (ext4 with `noauto_da_alloc`,
/// XFS), at the cost of an fsync per write. Writes already queued are flushed first.
pub fn set_synchronous(on: bool) {
    if on {
        flush_now();
    }
    lock_state().synchronous = on;
}

/// A burst is flushed once no write came for this long: a flush forces a journal commit
/// that stalls the renames of requests still arriving, so a run of requests (200
/// `context_add`s from a picker) is flushed once, after it.
const QUIET: Duration = Duration::from_millis(30);
/// ... but no write waits longer than this for its flush.
const MAX_DELAY: Duration = Duration::from_millis(500);

fn shared() -> &'static (Mutex<State>, Condvar) {
    static SHARED: OnceLock<(Mutex<State>, Condvar)> = OnceLock::new();
    SHARED.get_or_init(Default::default)
}

fn lock_state() -> MutexGuard<'static, State> {
    shared().0.lock().unwrap_or_else(|p| p.into_inner())
}

/// The marker file of this process in `chat_dir`.
fn own_marker(chat_dir: &Path) -> PathBuf {
    chat_dir.join(format!("{MARKER_PREFIX}{}", std::process::id()))
}

/// Replaces `path` with `bytes` atomically (temporary file in the same directory,
/// renamed over the target) and leaves the flush to the background thread. `root` is the
/// state directory (`.bb7` or `~/.bb7`) the file lives in; `chat` the chat directory it
/// belongs to, which gets this process's marker first. Parent directories are created;
/// an existing target's permissions are kept.
///
/// Falls back to a synchronous flush when the marker cannot be written or no thread can
/// be started, and writes like [`super::fsutil::write_atomic`] (flushed before the
/// rename) after [`set_synchronous`]. Errors: the file cannot be written.
pub fn write(
    path: &Path,
    bytes: &[u8],
    rank: Rank,
    root: &Path,
    chat: Option<&Path>,
) -> Result<()> {
    deferred(path, rank, root, chat, |sync| {
        if sync {
            super::fsutil::write_atomic(path, bytes).map(|_| false)
        } else {
            super::fsutil::replace_file(path, bytes, false)
        }
    })
}

/// Appends `bytes` to the file at `path` (created when missing), flushed like
/// [`write`]: in the next burst, in `rank`'s order, behind the chat's marker (an
/// append-only journal, `chat::journal`). Errors (`io`): the file cannot be opened or
/// written.
pub fn append(
    path: &Path,
    bytes: &[u8],
    rank: Rank,
    root: &Path,
    chat: Option<&Path>,
) -> Result<()> {
    deferred(path, rank, root, chat, |sync| {
        use std::io::Write;
        let doing = || format!("Cannot write file {}", path.display());
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| crate::error::Error::io(doing(), e))?;
        file.write_all(bytes)
            .map_err(|e| crate::error::Error::io(doing(), e))?;
        if sync {
            file.sync_all()
                .map_err(|e| crate::error::Error::io(doing(), e))?;
            if let Some(parent) = path.parent() {
                super::fsutil::sync_dir(parent);
            }
        }
        Ok(false)
    })
}

/// Runs `op` (a write of `path`; its argument says whether to flush it at once, and
/// it returns whether it created directories) and queues its flush.
fn deferred(
    path: &Path,
    rank: Rank,
    root: &Path,
    chat: Option<&Path>,
    op: impl FnOnce(bool) -> Result<bool>,
) -> Result<()> {
    let mut st = lock_state();
    if st.synchronous {
        drop(st);
        return op(true).map(|_| ());
    }
    if let Some(dir) = chat
        && !st.marked.contains(dir)
    {
        let made = std::fs::create_dir_all(dir).and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(own_marker(dir))
        });
        if made.is_err() {
            drop(st);
            return op(true).map(|_| ());
        }
        st.marked.insert(dir.to_path_buf());
    }
    // The lock is held across the rename so the thread cannot drop the marker between
    // the check above and the write it covers.
    let new_dirs = op(false)?;
    let idle = st.pending.is_empty() && st.jobs.is_empty();
    st.pending.push(Pending {
        path: path.to_path_buf(),
        rank,
        root: root.to_path_buf(),
        new_dirs,
        chat: chat.map(Path::to_path_buf),
    });
    let now = Instant::now();
    st.last_write = Some(now);
    st.oldest.get_or_insert(now);
    if *st.thread.get_or_insert_with(start_thread) {
        // A thread already waiting for a burst wakes when it is due and sees this write;
        // waking it for every write would cost the request a context switch.
        if idle {
            shared().1.notify_all();
        }
        Ok(())
    } else {
        drop(st);
        flush_now();
        Ok(())
    }
}

/// Hands `job`, which writes `path` atomically (a cache of the state directory `root`,
/// such as a chat's prompt ledger), to the flush thread: it runs before the thread's next
/// burst, which then flushes `path` after the chats (rank [`Rank::Cache`]). A job queued
/// earlier for the same path and not yet run is dropped, since it would write an older
/// version. [`flush_now`] runs every queued job first, so none is left when a chat
/// directory is moved or deleted, or when the process exits. A job must not create
/// directories: the one it writes into may be gone by the time it runs.
///
/// With [`set_synchronous`], or when no thread can be started, the job runs now and
/// the file is flushed before this returns.
pub fn write_later(path: &Path, root: &Path, job: Job) {
    let mut st = lock_state();
    let idle = st.pending.is_empty() && st.jobs.is_empty();
    st.jobs.retain(|d| d.path != path);
    st.jobs.push(Deferred {
        path: path.to_path_buf(),
        root: root.to_path_buf(),
        job,
    });
    let now = Instant::now();
    st.last_write = Some(now);
    st.oldest.get_or_insert(now);
    if !st.synchronous && *st.thread.get_or_insert_with(start_thread) {
        if idle {
            shared().1.notify_all();
        }
    } else {
        drop(st);
        flush_now();
    }
}

/// Runs now, on the calling thread, the queued jobs that write below `dir` (a chat
/// directory whose lock is about to be let go), waiting for a burst under way: the
/// process that takes the chat over next finds what they write. Their files are
/// flushed with the next burst.
pub fn run_jobs_in(dir: &Path) {
    let (_, cv) = shared();
    let mut st = lock_state();
    while st.busy {
        st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
    }
    if !st.jobs.iter().any(|d| d.path.starts_with(dir)) {
        return;
    }
    let (mine, rest) = std::mem::take(&mut st.jobs)
        .into_iter()
        .partition::<Vec<_>, _>(|d| d.path.starts_with(dir));
    st.jobs = rest;
    // Marked busy like a burst, so flush_now waits for these writes too.
    st.busy = true;
    drop(st);
    let written: Vec<Pending> = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        mine.into_iter().filter_map(Deferred::run).collect()
    }))
    .unwrap_or_default();
    let mut st = lock_state();
    st.pending.extend(written);
    st.busy = false;
    cv.notify_all();
}

fn start_thread() -> bool {
    std::thread::Builder::new()
        .name("bb7-flush".into())
        .spawn(|| {
            lower_priority();
            let (_, cv) = shared();
            let mut st = lock_state();
            loop {
                while (st.pending.is_empty() && st.jobs.is_empty()) || st.busy {
                    st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                // Wait for the run of writes to pause (or for the oldest to be due).
                let due = match (st.last_write, st.oldest) {
                    (Some(last), Some(oldest)) => (last + QUIET).min(oldest + MAX_DELAY),
                    _ => Instant::now(),
                };
                let now = Instant::now();
                if now < due {
                    st = cv
                        .wait_timeout(st, due - now)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|p| p.into_inner().0);
                    continue;
                }
                st = run_burst(st);
            }
        })
        .is_ok()
}

/// Flushes every deferred write made so far, waiting for a burst already under way.
/// Called before the process exits and before anything must be durable now (a
/// recovery's repairs).
pub fn flush_now() {
    let (_, cv) = shared();
    let mut st = lock_state();
    loop {
        while st.busy {
            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.pending.is_empty() && st.jobs.is_empty() {
            return;
        }
        st = run_burst(st);
    }
}

/// Takes the pending writes and jobs, runs the jobs and flushes everything with the lock
/// released, then drops the markers of chats that have nothing left to flush. Returns
/// with the lock held.
fn run_burst(mut st: MutexGuard<'static, State>) -> MutexGuard<'static, State> {
    let (_, cv) = shared();
    let mut burst = std::mem::take(&mut st.pending);
    let jobs = std::mem::take(&mut st.jobs);
    st.oldest = None;
    st.busy = true;
    drop(st);

    // A panic while flushing must not leave `busy` set, which would hang every later
    // flush (and exit): the markers of an unfinished burst stay, so the next open
    // checks those chats.
    let chats = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        burst.extend(jobs.into_iter().filter_map(Deferred::run));
        flush_burst(burst)
    }))
    .unwrap_or_default();

    let mut st = lock_state();
    for dir in chats {
        if !st.pending.iter().any(|p| p.chat.as_ref() == Some(&dir)) {
            let _ = std::fs::remove_file(own_marker(&dir));
            st.marked.remove(&dir);
        }
    }
    st.busy = false;
    cv.notify_all();
    st
}

/// Flushes one burst in the durability order; returns the chat directories it covered.
fn flush_burst(mut burst: Vec<Pending>) -> HashSet<PathBuf> {
    burst.sort_by_key(|p| p.rank);
    let mut seen = HashSet::new();
    burst.retain(|p| seen.insert(p.path.clone()));
    for chunk in burst.chunks(256) {
        // A file removed or replaced since is flushed by its own later entry, or gone.
        let files: Vec<_> = chunk
            .iter()
            .filter_map(|p| std::fs::File::open(&p.path).ok())
            .collect();
        // Writeback of every file starts first, so the flushes below wait for disk
        // writes that run together instead of one after another.
        for f in &files {
            start_writeback(f);
        }
        for f in &files {
            let _ = f.sync_all();
        }
    }
    let mut dirs = BTreeSet::new();
    let mut chats = HashSet::new();
    for p in &burst {
        // The rename changed the file's directory; a created directory is an entry
        // in its parent, and so on up to the state directory.
        let mut dir = p.path.parent();
        while let Some(d) = dir {
            dirs.insert((std::cmp::Reverse(d.components().count()), d.to_path_buf()));
            // A chat's directory is made before its first save, not by it: its entry
            // in `chats/` is flushed with every `chat.json`.
            let chat_dir = p.rank == Rank::Chat && Some(d) == p.path.parent();
            if !(p.new_dirs || chat_dir) || d == p.root || !d.starts_with(&p.root) {
                break;
            }
            dir = d.parent();
        }
        if let Some(c) = &p.chat {
            chats.insert(c.clone());
        }
    }
    // Deepest first: a new directory's entry is flushed in its parent after it.
    for (_, d) in &dirs {
        super::fsutil::sync_dir(d);
    }
    chats
}

/// Lowers the calling thread's CPU priority (nice 10), so background work (flushing,
/// token counts) yields to the thread answering requests on a busy machine. Linux
/// keeps a nice value per thread; elsewhere this does nothing.
pub fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on the calling thread (who = 0) only changes its nice value.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

/// Asks the kernel to start writing `file`'s dirty pages without waiting for them.
fn start_writeback(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: sync_file_range only schedules writeback of an open descriptor's pages;
        // a failure leaves the fsync that follows to do all the work.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Markers in `chat_dir` left by processes other than this one: their writes may not
/// have reached the disk before they ended. Each with the PID it names. A marker with
/// this process's PID that this process did not make is foreign too (a PID reused
/// after a power loss).
pub fn foreign_markers(chat_dir: &Path) -> Vec<(PathBuf, u32)> {
    let ours = lock_state().marked.contains(chat_dir);
    let Ok(entries) = std::fs::read_dir(chat_dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid: u32 = name.to_str()?.strip_prefix(MARKER_PREFIX)?.parse().ok()?;
            (pid != std::process::id() || !ours).then(|| (e.path(), pid))
        })
        .collect()
}

/// Removes the markers of processes that no longer run, once what recovery changed is
/// on disk. A live writer's marker stays: that process removes it after its flush.
pub fn clear_dead_markers(markers: &[(PathBuf, u32)]) {
    flush_now();
    for (path, pid) in markers {
        // A foreign marker with our own PID was left by an earlier holder of that PID.
        if *pid == std::process::id() || !super::process_alive(*pid) {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flushed_write_leaves_no_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let chat = tmp.path().join("chats/abc");
        let file = chat.join("chat.json");
        write(&file, b"{}", Rank::Chat, tmp.path(), Some(&chat)).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"{}");
        flush_now();
        assert!(!own_marker(&chat).exists());
        assert!(foreign_markers(&chat).is_empty());
    }

    #[test]
    fn a_dead_writers_marker_is_found_and_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        // PIDs above the kernel's maximum (4,194,304) never run.
        let marker = tmp.path().join(format!("{MARKER_PREFIX}99999999"));
        std::fs::write(&marker, b"").unwrap();
        let found = foreign_markers(tmp.path());
        assert_eq!(found, vec![(marker.clone(), 99_999_999)]);
        clear_dead_markers(&found);
        assert!(!marker.exists());
    }
}
