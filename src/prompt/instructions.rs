//! Instruction files: global instructions are included as
//! they are; project instructions (`.bb7/instructions`) understand two directives at
//! column 0 outside fenced code blocks: `@@` comments and `@include <path>` (also
//! `@include "quoted path"`), one level deep, project-relative, never escaping.

use std::path::Path;

use crate::project::fsutil::read_text;
use crate::project::paths::{Location, locate};

/// Expands project instructions. Returns the text to inject, or an error message
/// naming the line (`line 3: @include: …`) that blocks sends until fixed.
pub fn expand_project(root: &Path, text: &str) -> Result<String, InstructionError> {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        let marker = if bare.starts_with("```") {
            Some("```")
        } else if bare.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        if let Some(m) = marker {
            match fence {
                None => fence = Some(m),
                Some(open) if open == m => fence = None,
                Some(_) => {}
            }
            out.push_str(line);
            continue;
        }
        if fence.is_some() {
            out.push_str(line);
            continue;
        }
        if bare.starts_with("@@") {
            continue;
        }
        if let Some(rest) = bare.strip_prefix("@include") {
            if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
                out.push_str(line);
                continue;
            }
            let included = include(root, rest.trim()).map_err(|reason| InstructionError {
                line: n + 1,
                reason,
            })?;
            out.push_str(&included);
            if !included.ends_with('\n') {
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
    }
    Ok(out)
}

/// Why a project instruction file cannot be used: an `@include` on `line` (1-based)
/// that names no readable project file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: @include: {reason}")]
pub struct InstructionError {
    /// The line of the directive.
    pub line: usize,
    /// What is wrong with it.
    pub reason: IncludeError,
}

/// What is wrong with an `@include` directive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IncludeError {
    /// `@include "path` without the closing quote.
    #[error("unterminated quoted path")]
    Unterminated,
    /// `@include` with nothing after it.
    #[error("missing path")]
    MissingPath,
    /// An absolute path.
    #[error("absolute paths are not allowed: {0}")]
    Absolute(String),
    /// A path that leaves the project (`..`, a symlink out).
    #[error("path is outside the project: {0}")]
    Outside(String),
    /// The file cannot be read (missing, binary, not UTF-8).
    #[error("{reason}: {path}")]
    Unreadable {
        /// The path as written.
        path: String,
        /// Why it cannot be read.
        reason: String,
    },
}

fn include(root: &Path, arg: &str) -> Result<String, IncludeError> {
    let path = match arg.strip_prefix('"') {
        Some(inner) => inner.strip_suffix('"').ok_or(IncludeError::Unterminated)?,
        None => arg,
    };
    if path.is_empty() {
        return Err(IncludeError::MissingPath);
    }
    if Path::new(path).is_absolute() {
        return Err(IncludeError::Absolute(path.to_owned()));
    }
    match locate(root, path) {
        // An instruction file may come with a cloned repository: it never pulls
        // version-control state (remote URLs with tokens in `.git/config`) into the
        // prompt.
        Ok(Location::Project { rel, .. })
            if crate::project::paths::protected_dir(&rel).is_some() =>
        {
            Err(IncludeError::Outside(path.to_owned()))
        }
        Ok(Location::Project { abs, rel }) => {
            read_text(&abs, &rel).map_err(|e| IncludeError::Unreadable {
                path: path.to_owned(),
                reason: e.message,
            })
        }
        Ok(Location::External { .. }) | Err(_) => Err(IncludeError::Outside(path.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_comments_fences_and_includes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("style.md"), "Use tabs.").unwrap();
        std::fs::write(root.join("a b.md"), "Spaced.\n").unwrap();
        let text = "Intro\n@@ hidden\n @@ kept\n@include style.md\n@include \"a b.md\"\n```\n@include nope\n```\n";
        let out = expand_project(&root, text).unwrap();
        assert_eq!(
            out,
            "Intro\n @@ kept\nUse tabs.\nSpaced.\n```\n@include nope\n```\n"
        );
        let e = expand_project(&root, "@include /etc/passwd\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert_eq!(e.reason, IncludeError::Absolute("/etc/passwd".into()));
        let e = expand_project(&root, "x\n@include ../up\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: @include: path is outside the project: ../up"
        );
        let e = expand_project(&root, "@include .git/config\n").unwrap_err();
        assert_eq!(e.reason, IncludeError::Outside(".git/config".into()));
        let e = expand_project(&root, "@include missing.md\n").unwrap_err();
        assert!(matches!(e.reason, IncludeError::Unreadable { .. }), "{e}");
    }
}
