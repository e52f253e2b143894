//! Validating a path the model names. A path that leaves the project, or names a
//! version-control or bb7 state directory, is refused here, before anything is
//! planned; the write itself keeps its own guard.

use std::path::Path;

use crate::project::paths::locate_in_project;

/// Directories the model may never write into, at any depth.
const PROTECTED: [&str; 5] = [".git", ".bb7", ".hg", ".svn", ".jj"];

/// Why a model path was refused.
#[derive(Debug, Clone, PartialEq)]
pub struct PathError {
    /// `PathEscape` (outside the project or into a protected directory) or
    /// `InvalidPath`.
    pub code: super::error::CallCode,
    /// What to tell the model.
    pub message: String,
}

fn escape(raw: &str, why: &str) -> PathError {
    PathError {
        code: super::error::CallCode::PathEscape,
        message: format!(
            "{raw} is outside the writable project ({why}); use a project-relative path"
        ),
    }
}

/// Resolves a model path to a project-relative one (`/`-separated).
/// Errors: absolute paths, `..`, `~`, a protected directory, a symlink that leads
/// outside the project (`path_escape`); empty or otherwise unusable paths.
pub fn resolve(root: &Path, raw: &str) -> Result<String, PathError> {
    // Backslashes are separators as a model writes them (a Windows habit).
    let normalized = raw.trim().replace('\\', "/");
    let trimmed = normalized.as_str();
    if trimmed.is_empty() || trimmed.contains('\0') || trimmed.ends_with('/') {
        return Err(PathError {
            code: super::error::CallCode::InvalidPath,
            message: "path must be a project-relative path of a file".into(),
        });
    }
    let bytes = trimmed.as_bytes();
    let drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
    if trimmed.starts_with(['/', '~']) || drive {
        return Err(escape(raw, "an absolute path"));
    }
    for part in trimmed.split('/') {
        if part == ".." {
            return Err(escape(raw, "it climbs with .."));
        }
        if PROTECTED.iter().any(|p| p.eq_ignore_ascii_case(part)) {
            return Err(escape(raw, &format!("{part} is not a project file")));
        }
    }
    match locate_in_project(root, trimmed) {
        Ok((rel, _)) => Ok(rel),
        Err(e) if e.code() == crate::error::ErrorCode::PathEscape => {
            Err(escape(raw, "it leads outside through a link"))
        }
        Err(e) => Err(PathError {
            code: super::error::CallCode::InvalidPath,
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for p in [
            "../x",
            "/etc/passwd",
            "a/../../x",
            ".git/config",
            "src/.bb7/x",
            "~/x",
            "C:\\x",
        ] {
            assert_eq!(
                resolve(&root, p).unwrap_err().code,
                super::super::error::CallCode::PathEscape,
                "{p}"
            );
        }
        assert_eq!(resolve(&root, "./src/a.rs").unwrap(), "src/a.rs");
        assert_eq!(resolve(&root, "src\\a.rs").unwrap(), "src/a.rs");
        assert_eq!(
            resolve(&root, "..\\x").unwrap_err().code,
            super::super::error::CallCode::PathEscape
        );
        assert_eq!(
            resolve(&root, "src/").unwrap_err().code,
            super::super::error::CallCode::InvalidPath
        );
        assert_eq!(
            resolve(&root, "").unwrap_err().code,
            super::super::error::CallCode::InvalidPath
        );
    }
}
