//! File primitives: atomic replacement (docs/ARCHITECTURE.md, "Durability"), text reads that refuse
//! binary or non-UTF-8 files, and line-ending handling.

use std::io::Write;
use std::path::Path;

use crate::error::ErrorCode;
use crate::error::{Error, Result};

/// Replaces `path` with `bytes` so that a crash at any instant leaves either the old or
/// the new content: a temporary file in the same directory is written, flushed to
/// disk, renamed over the target, and the directory is flushed so the rename itself
/// survives a power loss (docs/ARCHITECTURE.md, "Durability"). Parent directories are
/// created. When the target exists its permissions are kept.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_file(path, bytes, true)?;
    if let Some(parent) = path.parent() {
        sync_dir(parent);
    }
    Ok(())
}

/// Replaces a user's project file with `bytes` as [`write_atomic`] does, with the modes
/// an editor would leave: an existing file keeps its mode (an executable script stays
/// executable), and a new file gets `0o666` less the process umask (0644 under the
/// usual umask 022), as `open(2)` with `O_CREAT` gives it, rather than the private
/// 0600 of a temporary file. bb7's own state files keep 0600 ([`write_atomic`]).
pub fn write_user_file(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, true, Some(0o666))?;
    if let Some(parent) = path.parent() {
        sync_dir(parent);
    }
    Ok(())
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`, keeping
/// an existing target's permissions; with `flush` the temporary file is fsynced before
/// the rename (the directory is not). Creates missing parent directories and returns
/// whether it had to. Errors (`io`): the file cannot be written or renamed.
pub(crate) fn replace_file(path: &Path, bytes: &[u8], flush: bool) -> Result<bool> {
    replace(path, bytes, flush, None)
}

/// [`replace_file`], a new target created with `new_mode` less the umask (`None`: the
/// temporary file's 0600).
fn replace(path: &Path, bytes: &[u8], flush: bool, new_mode: Option<u32>) -> Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    let doing = || format!("Cannot write file {}", path.display());
    let parent = path.parent().ok_or_else(|| Error::invalid(doing()))?;
    let new_dirs = !parent.is_dir();
    if new_dirs {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(doing(), e))?;
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(".bb7-tmp-");
    if let Some(mode) = new_mode {
        // Given to open(2), so the kernel applies the umask.
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    let mut tmp = builder
        .tempfile_in(parent)
        .map_err(|e| Error::io(doing(), e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(doing(), e))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = tmp.as_file().set_permissions(meta.permissions());
    }
    if flush {
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(doing(), e))?;
    }
    tmp.persist(path).map_err(|e| Error::io(doing(), e.error))?;
    Ok(new_dirs)
}

/// Flushes a directory's entries (a rename or a new file in it) to disk. Best effort:
/// some file systems refuse to sync directories, and the data itself is already safe.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Size, mtime (seconds and nanoseconds) and inode of a file: what tells a parse kept
/// in memory is still current, since every write of bb7's state replaces the file by
/// rename (a new inode).
pub type Stamp = (u64, i64, i64, u64);

/// The [`Stamp`] of the file at `path`, `None` when it cannot be read.
pub fn file_stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.mtime(), m.mtime_nsec(), m.ino()))
}

/// Serialises `value` as pretty JSON and writes it atomically.
pub fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| {
        Error::new(
            ErrorCode::Io,
            format!("Cannot encode {}: {e}", path.display()),
        )
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// Reads a text file. Errors: `File not found` (code `not_found`), or
/// `File is not UTF-8 text: <path>` for binary content (a NUL byte) or invalid UTF-8.
pub fn read_text(path: &Path, shown_as: &str) -> Result<String> {
    let bytes = match read_regular(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::not_found("File not found"));
        }
        Err(e) => return Err(Error::io(format!("Cannot read file {shown_as}"), e)),
    };
    text_from_bytes(bytes, shown_as)
}

/// The largest file bb7 reads from a project, 64 MiB: as large as a whole request line
/// (`protocol::MAX_LINE_BYTES`), far beyond what a model's context holds, and small
/// enough that a huge or sparse file cannot exhaust memory.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a whole file, refusing anything but a regular file before a byte is read.
///
/// The file is opened with `O_NONBLOCK`, so opening a named pipe with no writer, or a
/// device, returns at once instead of blocking the thread; its type is then checked on
/// the open handle (no window between the check and the read). Errors: the `open`
/// error (`NotFound` for a missing file, `PermissionDenied` for an unreadable one), or
/// `InvalidInput` naming the kind of file for a FIFO, socket, device or directory, or
/// `InvalidData` for a file over [`MAX_FILE_BYTES`] (checked on its size and again on
/// what is read, for a file that grows).
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    read_capped(path, MAX_FILE_BYTES, false)
}

/// [`read_regular`] with a cap of `cap` bytes instead of [`MAX_FILE_BYTES`] (a file
/// the user writes for bb7, such as `config.json`).
pub fn read_regular_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    read_capped(path, cap, false)
}

/// Reads one of bb7's own state files (invariant 13: `.bb7/` is untrusted input) the
/// way [`read_regular`] reads a project file, and also refuses a symlink in the last
/// component (`O_NOFOLLOW`; [`crate::project::paths::state_path`] refuses those on the
/// way) and anything over `cap` bytes, the cap of that kind of file
/// ([`crate::project::state_file`]). Errors: as [`read_regular`], a symlink being
/// `InvalidInput` too; [`is_damage`] tells those that mean the file itself is wrong.
pub fn read_state(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    read_capped(path, cap, true).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file (a symbolic link)",
            )
        } else {
            e
        }
    })
}

/// Whether an error of [`read_regular`] or [`read_state`] says the file itself is
/// wrong (not a regular file, a symlink, over its cap), as opposed to missing or
/// unreadable right now (a permission error), which may pass.
pub fn is_damage(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData
    )
}

/// Opens the state file `path` for reading in pieces: not through a symbolic link, and
/// only a regular file (a named pipe, socket, directory or device is refused with
/// `InvalidInput`, so a planted one never blocks or feeds an endless read).
pub fn open_state(path: &Path) -> std::io::Result<std::fs::File> {
    open_regular(path, true).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file (a symbolic link)",
            )
        } else {
            e
        }
    })
}

fn read_capped(path: &Path, cap: u64, nofollow: bool) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_regular(path, nofollow)?;
    let meta = file.metadata()?;
    if meta.len() > cap {
        return Err(too_large(meta.len(), cap));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64, cap));
    }
    Ok(bytes)
}

fn open_regular(path: &Path, nofollow: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let flags = libc::O_NONBLOCK | if nofollow { libc::O_NOFOLLOW } else { 0 };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a named pipe"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "a device"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not a regular file ({what})"),
        ));
    }
    Ok(file)
}

/// The error for a file of `len` bytes over `cap`, in MiB as users count them.
fn too_large(len: u64, cap: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "too large ({} MiB; bb7 reads files up to {} MiB)",
            len.div_ceil(1024 * 1024),
            cap / (1024 * 1024)
        ),
    )
}

/// The one rule for text bb7 stores and reads back (snapshots, outputs): UTF-8 (a
/// `&str` already is), no NUL byte, at most [`MAX_FILE_BYTES`]. A context add and a
/// model's write are checked with it before anything is stored, so nothing is stored
/// that [`read_text`] would refuse. Errors (`invalid_request`): the message names
/// `shown_as` and the reason.
pub fn check_storable(text: &str, shown_as: &str) -> Result<()> {
    if memchr::memchr(0, text.as_bytes()).is_some() {
        return Err(Error::invalid(format!(
            "{shown_as}: the content holds a NUL byte; bb7 keeps text files only"
        )));
    }
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::invalid(format!(
            "{shown_as}: {}",
            too_large(text.len() as u64, MAX_FILE_BYTES)
        )));
    }
    Ok(())
}

/// Reads a text file if it exists (`Ok(None)` when it does not).
pub fn read_text_opt(path: &Path, shown_as: &str) -> Result<Option<String>> {
    match read_text(path, shown_as) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.code == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Validates bytes as text: UTF-8 without NUL bytes.
pub fn text_from_bytes(bytes: Vec<u8>, shown_as: &str) -> Result<String> {
    if memchr::memchr(0, &bytes).is_some() {
        return Err(not_text(shown_as));
    }
    String::from_utf8(bytes).map_err(|_| not_text(shown_as))
}

fn not_text(shown_as: &str) -> Error {
    Error::invalid(format!("File is not UTF-8 text: {shown_as}"))
}

/// Removes a file; a file that is already gone is not an error.
pub fn remove_file_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("Cannot delete {}", path.display()), e)),
    }
}

/// The regular files below `root` as `/`-separated relative paths, sorted. Symlinks
/// are skipped (never followed), and so are bb7's own temporary files (`.bb7-tmp-*`)
/// and names that are not UTF-8. A missing `root` has no files.
pub fn relative_files(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_file())
        .filter(|entry| {
            !entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(".bb7-tmp-"))
        })
        .filter_map(|entry| {
            let rel = entry.path().strip_prefix(root).ok()?;
            let parts: Option<Vec<&str>> =
                rel.components().map(|c| c.as_os_str().to_str()).collect();
            Some(parts?.join("/"))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_is_not_text() {
        assert!(text_from_bytes(vec![0, 1, 2], "x").is_err());
        assert!(text_from_bytes(vec![0xff, 0xfe], "x").is_err());
        assert_eq!(text_from_bytes(b"ok".to_vec(), "x").unwrap(), "ok");
    }
}
