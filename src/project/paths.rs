//! Path resolution. Every file bb7 touches goes through one of two functions here:
//! [`locate`] for paths a client or the model names (project files and external
//! files), and [`state_path`] for bb7's own state under `.bb7/` or `~/.bb7/`
//! (invariant 3 in docs/ARCHITECTURE.md).

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorCode};

/// Why a path was refused. Each maps to one [`ErrorCode`] (`invalid_request` or
/// `path_escape`); the message names the path as it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The empty string.
    #[error("Path must not be empty")]
    Empty,
    /// A NUL byte, which no file name can hold.
    #[error("Path must not contain NUL characters")]
    Nul,
    /// A component that is not UTF-8.
    #[error("Path is not valid UTF-8: {0}")]
    NotUtf8(String),
    /// The project root itself.
    #[error("Path names the project root, not a file: {0}")]
    Root(String),
    /// Out of the project by `..`, an absolute path or a symlink.
    #[error("Path is outside the project: {0}")]
    Escape(String),
    /// Into bb7's own state (`.bb7/`).
    #[error("Path is inside bb7's state directory: {0}")]
    StateDir(String),
    /// Out of bb7's state directory, or through a symlink planted in it.
    #[error("Refusing to follow a path that leaves bb7's state directory: {0}")]
    LeavesState(String),
}

impl PathError {
    /// The error code a client gets.
    pub fn code(&self) -> ErrorCode {
        match self {
            PathError::Empty | PathError::Nul | PathError::NotUtf8(_) | PathError::Root(_) => {
                ErrorCode::InvalidRequest
            }
            PathError::Escape(_) | PathError::StateDir(_) | PathError::LeavesState(_) => {
                ErrorCode::PathEscape
            }
        }
    }
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Error {
        Error::new(e.code(), e.to_string())
    }
}

/// A path's resolution, or why it was refused.
pub type Result<T, E = PathError> = std::result::Result<T, E>;

/// Where a user-supplied path points after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file inside the project.
    Project {
        /// Project-relative, `/`-separated, without `.` or `..`.
        rel: String,
        /// The project root joined with `rel`.
        abs: PathBuf,
    },
    /// A file outside the project, named by an absolute path: readable context only.
    External {
        /// The normalised absolute path.
        abs: PathBuf,
    },
}

impl Location {
    /// The path as stored in chat state: relative for project files, absolute for
    /// external ones.
    pub fn key(&self) -> String {
        match self {
            Location::Project { rel, .. } => rel.clone(),
            Location::External { abs } => abs.to_string_lossy().into_owned(),
        }
    }

    /// The absolute path on disk.
    pub fn abs(&self) -> &Path {
        match self {
            Location::Project { abs, .. } | Location::External { abs } => abs,
        }
    }

    /// Whether the file is outside the project.
    pub fn is_external(&self) -> bool {
        matches!(self, Location::External { .. })
    }
}

/// Resolves `path` against the project `root` (which must be canonical).
///
/// Relative paths are joined to the root; absolute paths inside the root become
/// relative. A relative path whose `..` climbs above the root, or a project path that
/// reaches outside through a symlink, is an error (`path_escape`). An absolute path
/// outside the root is [`Location::External`]. Paths naming bb7's state directory
/// (`.bb7/…`) are refused, so no client or model can reach chat state as a file.
pub fn locate(root: &Path, path: &str) -> Result<Location> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::Nul);
    }
    let given = Path::new(path);
    let rel_parts = if given.is_absolute() {
        let normal = normalize_absolute(given);
        match normal.strip_prefix(root) {
            Ok(inside) => components_of(inside, path)?,
            Err(_) => {
                // Stored by its text: a name that is not UTF-8 could not be read back.
                let key = normal
                    .to_str()
                    .ok_or_else(|| PathError::NotUtf8(path.to_owned()))?;
                check_stored(key, true)?;
                return Ok(Location::External { abs: normal });
            }
        }
    } else {
        components_of(given, path)?
    };
    if rel_parts.is_empty() {
        return Err(PathError::Root(path.to_owned()));
    }
    if rel_parts[0].eq_ignore_ascii_case(".bb7") {
        return Err(PathError::StateDir(path.to_owned()));
    }
    let rel = rel_parts.join("/");
    let abs = root.join(&rel);
    let real = resolve_inside(root, &abs, path)?;
    judge_resolved(&rel, &real, path)?;
    check_stored(&rel, false).map_err(|_| PathError::Escape(path.to_owned()))?;
    Ok(Location::Project { rel, abs })
}

/// The one rule for a path bb7 stores in a chat (a context entry's `path`): checked
/// where a path is added (`context::add_file`, `context::add_section`, and [`locate`]
/// for every project path it gives) and where a chat is read back
/// (`Chat::check_paths`), so bb7 never stores a path it would later refuse.
///
/// A project path (`external` false) is relative, `/`-separated, with no empty, `.`
/// or `..` component and no NUL, outside bb7's state directory (`.bb7`, any case, as a
/// case-insensitive file system would take it). A backslash is an ordinary character
/// of a Unix file name (`..\x` is one name inside the project), never a separator.
/// An external path is absolute and the same components follow its leading `/`.
/// Errors: the [`PathError`] a client would get for that path.
pub fn check_stored(key: &str, external: bool) -> Result<()> {
    if key.is_empty() {
        return Err(PathError::Empty);
    }
    if key.contains('\0') {
        return Err(PathError::Nul);
    }
    let parts = if external {
        key.strip_prefix('/')
            .ok_or_else(|| PathError::Escape(key.to_owned()))?
    } else {
        key
    };
    if parts
        .split('/')
        .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return Err(PathError::Escape(key.to_owned()));
    }
    if !external
        && parts
            .split('/')
            .next()
            .is_some_and(|f| f.eq_ignore_ascii_case(".bb7"))
    {
        return Err(PathError::StateDir(key.to_owned()));
    }
    Ok(())
}

/// Resolves `path` and requires it to be inside the project (for writes).
pub fn locate_in_project(root: &Path, path: &str) -> Result<(String, PathBuf)> {
    match locate(root, path)? {
        Location::Project { rel, abs } => Ok((rel, abs)),
        Location::External { .. } => Err(PathError::Escape(path.to_owned())),
    }
}

/// Lexically normalises an absolute path (`.` dropped, `..` pops; never above `/`).
fn normalize_absolute(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Splits a relative path into normal components, resolving `.` and `..` lexically;
/// a `..` that would leave the root is an escape.
fn components_of(rel: &Path, original: &str) -> Result<Vec<String>> {
    let mut parts: Vec<String> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(
                s.to_str()
                    .ok_or_else(|| PathError::NotUtf8(original.to_owned()))?
                    .to_owned(),
            ),
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(PathError::Escape(original.to_owned()));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Escape(original.to_owned()));
            }
        }
    }
    Ok(parts)
}

/// Judges a project path by where it resolves, not by its text: a symlink inside the
/// project is followed only when its target is inside the project and not protected.
/// `rel` is the path as named, `real` its project-relative resolution. A path that
/// resolves into bb7's state is [`PathError::StateDir`]; one that reaches a protected
/// directory (`.git/hooks` through `hk -> .git/hooks`) that its text does not name is
/// [`PathError::Escape`].
fn judge_resolved(rel: &str, real: &str, original: &str) -> Result<()> {
    if real == rel {
        return Ok(());
    }
    let first = real.split('/').next().unwrap_or("");
    if first.eq_ignore_ascii_case(".bb7") {
        return Err(PathError::StateDir(original.to_owned()));
    }
    match protected_dir(real) {
        Some(dir) if protected_dir(rel) != Some(dir) => Err(PathError::Escape(original.to_owned())),
        _ => Ok(()),
    }
}

/// Follows symlinks along `abs` as far as the path exists and requires the result to
/// stay under `root`. Returns the resolved path relative to `root` (`/`-separated; the
/// part that does not exist yet is appended as named).
fn resolve_inside(root: &Path, abs: &Path, original: &str) -> Result<String> {
    let mut existing = abs.to_path_buf();
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(&existing) {
            Ok(real) => {
                let mut full = real;
                for part in rest.iter().rev() {
                    full.push(part);
                }
                let inside = full
                    .strip_prefix(root)
                    .map_err(|_| PathError::Escape(original.to_owned()))?;
                let parts: Vec<&str> = inside
                    .components()
                    .map(|c| c.as_os_str().to_str().unwrap_or("\u{fffd}"))
                    .collect();
                return Ok(parts.join("/"));
            }
            Err(_) => {
                // A dangling symlink cannot be canonicalised: refuse it rather than guess.
                if existing.symlink_metadata().is_ok() {
                    return Err(PathError::Escape(original.to_owned()));
                }
                match (existing.file_name(), existing.parent()) {
                    (Some(name), Some(parent)) => {
                        rest.push(name.to_owned());
                        existing = parent.to_path_buf();
                    }
                    _ => return Err(PathError::Escape(original.to_owned())),
                }
            }
        }
    }
}

/// Joins `rel` under bb7's own state directory `base`, refusing anything that could
/// leave it: absolute or `..` components, and any symlink on the way (bb7 never
/// creates symlinks in its state, so one found there was planted, e.g. by a cloned
/// repository). `base` itself must not be a symlink either.
pub fn state_path(base: &Path, rel: &str) -> crate::error::Result<PathBuf> {
    let escape = || Error::from(PathError::LeavesState(rel.to_owned()));
    let mut out = base.to_path_buf();
    if is_symlink(&out) {
        return Err(escape());
    }
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(s) => {
                out.push(s);
                if is_symlink(&out) {
                    return Err(escape());
                }
            }
            Component::CurDir => {}
            _ => return Err(escape()),
        }
    }
    Ok(out)
}

fn is_symlink(p: &Path) -> bool {
    p.symlink_metadata()
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false)
}

/// Checks a chat id before it is used as a directory name: ASCII letters, digits,
/// `-` and `_`, at most 64 characters. Anything else cannot name a chat.
pub fn valid_chat_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Directories holding version-control or tool state. A file there can run code
/// (`.git/hooks/…`) or corrupt a repository, so the model never writes there and an
/// "apply all" never reaches there; only an explicit `apply_file` of that one path does.
pub const PROTECTED_DIRS: &[&str] = &[".git", ".bb7", ".hg", ".svn", ".jj"];

/// The protected directory a project-relative path lies in, if any (the first path
/// component is compared, so `src/.git/x` is an ordinary file; case is ignored, as a
/// case-insensitive file system would).
pub fn protected_dir(rel: &str) -> Option<&'static str> {
    let first = rel.split(['/', '\\']).next().unwrap_or("");
    PROTECTED_DIRS
        .iter()
        .copied()
        .find(|d| d.eq_ignore_ascii_case(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute_paths_resolve_into_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let loc = locate(&root, "src/./a/../main.rs").unwrap();
        assert_eq!(loc.key(), "src/main.rs");
        let abs = root.join("src/main.rs");
        assert_eq!(
            locate(&root, abs.to_str().unwrap()).unwrap().key(),
            "src/main.rs"
        );
        assert!(locate(&root, "/etc/passwd").unwrap().is_external());
        assert_eq!(
            locate(&root, "../x").unwrap_err().code(),
            crate::error::ErrorCode::PathEscape
        );
        assert_eq!(
            locate(&root, ".bb7/chats/index.json").unwrap_err().code(),
            crate::error::ErrorCode::PathEscape
        );
    }

    #[test]
    fn symlinks_out_of_the_project_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        assert_eq!(
            locate(&root, "out/new.txt").unwrap_err().code(),
            crate::error::ErrorCode::PathEscape
        );
        std::fs::create_dir(root.join(".bb7")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join(".bb7/x")).unwrap();
        assert!(state_path(&root.join(".bb7"), "x/y").is_err());
        assert!(state_path(&root.join(".bb7"), "../y").is_err());
        assert!(state_path(&root.join(".bb7"), "a/b").is_ok());
    }

    #[test]
    fn protected_dirs_are_first_components() {
        assert_eq!(protected_dir(".git/hooks/pre-commit"), Some(".git"));
        assert_eq!(protected_dir(".jj/repo"), Some(".jj"));
        assert_eq!(protected_dir(".GIT/hooks/pre-commit"), Some(".git"));
        assert_eq!(protected_dir("src/.git/x"), None);
        assert_eq!(protected_dir(".github/workflows/ci.yml"), None);
    }
}
