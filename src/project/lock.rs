//! Chat locks (docs/PROTOCOL.md "Facts about the reference implementation").
//!
//! A chat is driven by one process at a time. bb7 takes an OS advisory lock
//! (`flock`) on `chats/{id}/lock`, which the kernel releases when the holder dies,
//! and writes its PID into the same file as the reference BB-7 does, so the two
//! implementations respect each other's locks.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::paths::state_path;
use crate::project::process_alive;

/// A held chat lock. Dropping it removes the lock file and releases the lock.
#[derive(Debug)]
pub struct ChatLock {
    file: File,
    path: PathBuf,
    /// `{state}/locks/{id}`, present while the lock is held (see [`hinted`]).
    hint: Option<PathBuf>,
}

impl ChatLock {
    /// Takes the lock of the chat whose directory is `chat_dir`.
    ///
    /// Errors (code `locked`): `Chat is locked by another bb7 process (PID n)` when
    /// another process holds the advisory lock, or when the file names a live process
    /// other than this one (a reference BB-7 that takes no OS lock).
    pub fn acquire(chat_dir: &Path) -> Result<ChatLock> {
        // A symlink planted in place of the lock file (invariant 13) is moved aside:
        // the lock is bb7's own and starts anew.
        let planted = chat_dir.join("lock");
        if planted
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            super::state_file::set_aside(&planted, "a symbolic link");
        }
        let path = state_path(chat_dir, "lock")?;
        // A holder removes the file when it lets go; a file opened just before that
        // is locked but no longer the lock, so try again on the new one.
        for _ in 0..8 {
            if let Some(lock) = Self::try_acquire(&path)? {
                return Ok(lock);
            }
        }
        Err(Error::new(
            ErrorCode::Locked,
            "Chat lock keeps changing hands; try again",
        ))
    }

    fn try_acquire(path: &Path) -> Result<Option<ChatLock>> {
        let doing = || format!("Cannot open chat lock {}", path.display());
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| Error::io(doing(), e))?;
        // A planted named pipe or device in place of the lock file (invariant 13):
        // moved aside, and the next round creates a regular one.
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            super::state_file::set_aside(path, "not a regular file");
            return Ok(None);
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(locked_error(read_pid(&mut file))),
            Err(TryLockError::Error(e)) => return Err(Error::io(doing(), e)),
        }
        if !same_file(&file, path) {
            return Ok(None);
        }
        // A PID without an OS lock is either a reference BB-7 (which takes none) that
        // still runs, or a process that died: the latter is taken over silently.
        if let Some(pid) = read_pid(&mut file)
            && pid != std::process::id()
            && process_alive(pid)
        {
            let _ = file.unlock();
            return Err(locked_error(Some(pid)));
        }
        // Not flushed to disk: the PID matters only while this process runs, and after
        // a power loss no holder is alive, so a lost or stale PID is taken over.
        file.set_len(0).map_err(|e| Error::io(doing(), e))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(std::process::id().to_string().as_bytes()))
            .map_err(|e| Error::io(doing(), e))?;
        let hint = hint_path(path);
        if let Some(h) = &hint {
            // Best effort: without the hint only `chat_list`'s `locked` flag misses it.
            let _ = h
                .parent()
                .map(std::fs::create_dir_all)
                .map(|_| std::fs::write(h, b""));
        }
        Ok(Some(ChatLock {
            file,
            path: path.to_path_buf(),
            hint,
        }))
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks that this lock is still the chat's: another process that took the chat
    /// over (`chat_force_unlock`, `bb7 unlock --force`) removed the file and made its
    /// own, or wrote its PID into it. Errors (code `locked`): the chat was taken over,
    /// naming the new holder's PID when the lock file tells it.
    pub fn check_still_held(&self) -> Result<()> {
        let mut ours = &self.file;
        let pid = read_pid_from(&mut ours);
        if same_file(&self.file, &self.path) && pid == Some(std::process::id()) {
            return Ok(());
        }
        let now = File::open(&self.path)
            .ok()
            .and_then(|mut f| read_pid(&mut f))
            .filter(|p| *p != std::process::id());
        let who = now.map(|p| format!(" (PID {p})")).unwrap_or_default();
        Err(Error::new(
            ErrorCode::Locked,
            format!(
                "This chat was taken over by another process{who} since it was opened here; \
                 nothing was saved here, so that process's messages stay. Select the chat \
                 again to continue it (after it lets go)"
            ),
        )
        .with_data(crate::error::ErrorData {
            holder_pid: now,
            ..Default::default()
        }))
    }
}

impl Drop for ChatLock {
    /// Writes what the flush thread still has to write into the chat (its prompt
    /// ledger), removes the lock file, then releases the OS lock: a released chat
    /// leaves no lock behind (a process waiting on the old file notices it was
    /// removed), and the next holder finds everything this one wrote.
    fn drop(&mut self) {
        if let Some(dir) = self.path.parent() {
            super::flush_queue::run_jobs_in(dir);
        }
        // A lock taken over (its file replaced, or another PID written into it) is
        // the new holder's: it is left alone.
        let ours = read_pid_from(&mut &self.file) == Some(std::process::id());
        if ours && same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
            if let Some(h) = &self.hint {
                let _ = std::fs::remove_file(h);
            }
        }
        if ours {
            let _ = self.file.set_len(0);
        }
        let _ = self.file.unlock();
    }
}

/// Whether `path` still names the open `file` (same device and inode).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, _path: &Path) -> bool {
    true
}

/// The PID of a live process other than this one that holds `chat_dir`'s lock, as far
/// as the PID file tells (no lock is taken; used for `chat_list`'s `locked`).
pub fn holder(chat_dir: &Path) -> Option<u32> {
    let path = state_path(chat_dir, "lock").ok()?;
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let pid = read_pid(&mut file)?;
    (pid != std::process::id() && process_alive(pid)).then_some(pid)
}

/// Like [`holder`] for chat `id` inside the open chats directory `chats`, in one
/// `openat` that follows no symlink at the lock file (the caller has seen that `id` is
/// a directory, not a link). Listing thousands of chats then costs one system call
/// each instead of a walk of every path component.
#[cfg(unix)]
pub fn holder_in(chats: &File, id: &str) -> Option<u32> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let rel = std::ffi::CString::new(format!("{id}/lock")).ok()?;
    // SAFETY: `rel` is a valid C string and `chats` an open directory descriptor.
    let fd = unsafe {
        libc::openat(
            chats.as_raw_fd(),
            rel.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    let pid = read_pid(&mut file)?;
    (pid != std::process::id() && process_alive(pid)).then_some(pid)
}

/// Where a holder of the lock file `lock` (`{state}/chats/{id}/lock`) leaves its hint:
/// `{state}/locks/{id}`. `None` when the path has another shape or the directory is a
/// planted symlink.
fn hint_path(lock: &Path) -> Option<PathBuf> {
    let chat_dir = lock.parent()?;
    let id = chat_dir.file_name()?.to_str()?;
    let chats = chat_dir.parent()?;
    if chats.file_name()? != "chats" {
        return None;
    }
    state_path(chats.parent()?, &format!("locks/{id}")).ok()
}

/// Ids of the chats in state directory `state` that a bb7 process may hold: every
/// holder leaves an empty file `{state}/locks/{id}` while it holds the lock, so one
/// directory read tells which chats `chat_list` must probe with [`holder_in`] instead
/// of probing thousands. A hint outlives a killed holder and only costs a probe; a chat
/// held by a reference BB-7, which leaves no hint, is not reported.
pub fn hinted(state: &Path) -> std::collections::HashSet<String> {
    let Ok(dir) = state_path(state, "locks") else {
        return Default::default();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Default::default();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

fn locked_error(pid: Option<u32>) -> Error {
    let who = pid.map(|p| format!(" (PID {p})")).unwrap_or_default();
    Error::new(
        ErrorCode::Locked,
        format!(
            "Chat is locked by another bb7 process{who}; chat_force_unlock takes it over \
             (that process then refuses its next save and writes nothing more to it)"
        ),
    )
    .with_data(crate::error::ErrorData {
        holder_pid: pid,
        ..Default::default()
    })
}

fn read_pid(file: &mut File) -> Option<u32> {
    read_pid_from(file)
}

fn read_pid_from(mut file: impl Read + Seek) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}
