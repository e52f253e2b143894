//! bb7's own state files read as untrusted input (invariant 13 in
//! docs/ARCHITECTURE.md): each kind has a size cap, every one is opened as a regular
//! file without following a symlink and without blocking on a named pipe
//! ([`fsutil::read_state`]), and one that is damaged is either set aside (a cache or a
//! list bb7 can do without) or refused (a file whose loss loses the user's work). The
//! table of which is which is in docs/ARCHITECTURE.md, "State files".

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;

use crate::project::fsutil;
use crate::project::paths::state_path;

const MIB: u64 = 1024 * 1024;

/// Cap of `chat.json`: a chat holds its messages and answers, never file contents, so
/// this is far beyond a real chat; a save that would exceed it is refused
/// (`ChatStore::save`), so bb7 never writes a chat it would refuse to read.
pub const CHAT_CAP: u64 = 128 * MIB;
/// Cap of the prompt ledger (`prompt.json`, every text a chat showed the model): as
/// large as a whole request line, far beyond what a model's context holds; a cache, so
/// a larger one is set aside and costs one uncached request.
pub const LEDGER_CAP: u64 = 64 * MIB;
/// Cap of a checkpoint (`checkpoints/*.json`, the user's files before an apply).
pub const CHECKPOINT_CAP: u64 = 512 * MIB;
/// Cap of the chat index and the file facts cache (`chats/index.json`,
/// `cache/files.json`): both are trimmed far below it.
pub const CACHE_CAP: u64 = 64 * MIB;
/// Cap of the small lists and settings: pins, archive, `state.json`, the model list
/// cache, a staged commit's journal, `config.json`.
pub const SMALL_CAP: u64 = 16 * MIB;

/// Warnings about files set aside since the last [`take_warnings`].
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Moves a damaged state file out of the way, to `{name}.damaged-{unix seconds}` in the
/// same directory (the rename moves a symlink or a named pipe itself, never what it
/// names), so bb7 starts that file anew and the old one is kept for a look by hand.
/// Records a warning naming both paths (for `init`'s `config_warnings` and the debug
/// log). Returns where it went, `None` when the rename failed (the file is then only
/// ignored).
pub fn set_aside(path: &Path, why: &str) -> Option<PathBuf> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let name = path.file_name()?.to_string_lossy().into_owned();
    let aside = path.with_file_name(format!("{name}.damaged-{secs}"));
    let moved = std::fs::rename(path, &aside).is_ok();
    let note = if moved {
        format!(
            "{} was damaged ({why}); it was moved to {} and bb7 starts it anew",
            path.display(),
            aside.display()
        )
    } else {
        format!("{} is damaged ({why}); bb7 ignores it", path.display())
    };
    tracing::warn!("{note}");
    let mut w = WARNINGS.lock().unwrap_or_else(|p| p.into_inner());
    if w.len() < 100 {
        w.push(note);
    }
    moved.then_some(aside)
}

/// The warnings recorded by [`set_aside`] since the last call, oldest first.
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The path of a state file bb7 can do without, `rel` under the state directory
/// `base`, through [`state_path`] (no symlink on the way): a symlink planted in place
/// of the file itself is set aside first, so bb7 starts the file anew instead of
/// refusing every later write. Errors: as [`state_path`].
pub fn own_path(base: &Path, rel: &str) -> crate::error::Result<PathBuf> {
    let planted = base.join(rel);
    if planted
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        set_aside(&planted, "a symbolic link");
    }
    state_path(base, rel)
}

/// Reads and parses a state file bb7 can do without (a cache, a list of flags,
/// settings). `None` when it is missing, or cannot be read right now (a permission
/// error, left untouched), or is damaged: not a regular file, a symlink, over `cap`
/// bytes, or not `T`'s JSON — then it is set aside ([`set_aside`]).
pub fn load_or_set_aside<T: DeserializeOwned>(path: &Path, cap: u64) -> Option<T> {
    let bytes = match fsutil::read_state(path, cap) {
        Ok(b) => b,
        Err(e) if fsutil::is_damage(&e) => {
            set_aside(path, &e.to_string());
            return None;
        }
        Err(_) => return None,
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            set_aside(path, &format!("not valid JSON: {e}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_symlink_and_junk_are_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("a.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(load_or_set_aside::<Vec<String>>(&fifo, SMALL_CAP).is_none());
        assert!(fifo.symlink_metadata().is_err());
        let link = dir.path().join("b.json");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(load_or_set_aside::<Vec<String>>(&link, SMALL_CAP).is_none());
        assert!(link.symlink_metadata().is_err());
        let junk = dir.path().join("c.json");
        std::fs::write(&junk, "{").unwrap();
        assert!(load_or_set_aside::<Vec<String>>(&junk, SMALL_CAP).is_none());
        let good = dir.path().join("d.json");
        std::fs::write(&good, "[\"x\"]").unwrap();
        assert_eq!(
            load_or_set_aside::<Vec<String>>(&good, SMALL_CAP),
            Some(vec!["x".to_owned()])
        );
        let names = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(names, 4, "three set aside, one kept");
        assert!(take_warnings().len() >= 3);
    }
}
