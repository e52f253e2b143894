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
        if let Some(why) = unportable(part) {
            return Err(PathError {
                code: super::error::CallCode::InvalidPath,
                message: format!("{} is not a portable file name ({why})", raw.escape_debug()),
            });
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

/// Why one component of a model path cannot name a file on every system bb7's users
/// share a project with, or would mislead a reader of a listing: a Windows device
/// name (`CON`, `nul.txt`, `COM1`), a trailing dot or space (Windows drops them, so
/// `.git.` is `.git`), a control character (a newline or ESC in a name corrupts every
/// listing and terminal that prints it), or a bidi or invisible character (`U+202E`
/// reverses what a reader sees, `.g\u{200c}it` looks like `.git`).
fn unportable(part: &str) -> Option<&'static str> {
    if part.chars().any(char::is_control) {
        return Some("a control character");
    }
    if part.chars().any(is_invisible_or_bidi) {
        return Some("an invisible or text-direction character");
    }
    if part.len() > 255 {
        return Some("longer than 255 bytes");
    }
    if part != "." && part.ends_with(['.', ' ']) {
        return Some("a trailing dot or space");
    }
    let stem = part.split('.').next().unwrap_or("").trim_end();
    let device = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
        .iter()
        .any(|d| d.eq_ignore_ascii_case(stem))
        || (stem.len() == 4
            && (stem[..3].eq_ignore_ascii_case("COM") || stem[..3].eq_ignore_ascii_case("LPT"))
            && stem.as_bytes()[3].is_ascii_digit()
            && stem.as_bytes()[3] != b'0');
    device.then_some("a Windows device name")
}

/// Characters that change how text is ordered or that draw nothing: bidi controls and
/// marks, zero-width characters, the word joiner, the BOM, the soft hyphen.
pub fn is_invisible_or_bidi(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{180E}'
        | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{E0000}'..='\u{E007F}')
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
        for p in [
            "CON",
            "src/nul.txt",
            "com1.c",
            "a\nb",
            "x\u{1b}[2J",
            "evil\u{202e}txt.exe",
            ".g\u{200c}it/config",
            "dir./a",
        ] {
            assert_eq!(
                resolve(&root, p).unwrap_err().code,
                super::super::error::CallCode::InvalidPath,
                "{p}"
            );
        }
        assert_eq!(resolve(&root, "console.rs").unwrap(), "console.rs");
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
