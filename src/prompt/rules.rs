//! Rules files: the conventions files projects carry for coding assistants
//! (`AGENTS.md`, `CLAUDE.md`, `.cursorrules`, …), included in the system message as
//! instructions, fenced like `.bb7/instructions` (`assemble::system_text`).
//!
//! Which names are looked for, in which order, is the config's `rules_files`
//! ([`DEFAULT_RULES_FILES`] when unset); `rules_mode` says whether the first one found
//! is used (`first`, the default) or every one (`all`). A rules file is read under the
//! same path rules as an `@include` of the instructions (docs/ARCHITECTURE.md,
//! invariants 3 and 13): a regular file inside the project, resolved through its
//! symlinks, never one that leads outside or into a protected directory.

use std::path::Path;

use crate::config::RulesMode;
use crate::project::fsutil::read_text;
use crate::project::paths::{Location, locate, protected_dir};

/// The names looked for when the config sets no `rules_files`, in this order: the
/// cross-tool `AGENTS.md` first, then the files of single tools (Claude Code, GitHub
/// Copilot, Cursor, Zed, Windsurf, Cline, Gemini CLI).
pub const DEFAULT_RULES_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    "CLAUDE.local.md",
    ".github/copilot-instructions.md",
    ".cursorrules",
    ".rules",
    ".windsurfrules",
    ".clinerules",
    "GEMINI.md",
];

/// A rules file larger than this (256 KiB) is not included: it would ride along with
/// every request of every chat.
pub const MAX_RULES_BYTES: usize = 256 * 1024;

/// One rules file found: its project-relative path as configured, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesFile {
    /// The name as configured (e.g. `AGENTS.md`); the source shown to the model.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// The rules files of the project at `root` (canonical): each of `names` in order
/// that is a readable, non-empty text file inside the project, at most
/// [`MAX_RULES_BYTES`]; with [`RulesMode::First`] only the first of them. A name that
/// resolves to a file already taken (a `CLAUDE.md` that is a symlink to `AGENTS.md`)
/// is skipped. Names that are absolute, climb out with `..`, lead outside through a
/// symlink or into `.git/`, `.bb7/` or another protected directory are skipped, as
/// are directories, pipes and binary files.
pub fn find(root: &Path, names: &[String], mode: RulesMode) -> Vec<RulesFile> {
    let mut found: Vec<RulesFile> = Vec::new();
    let mut taken: Vec<std::path::PathBuf> = Vec::new();
    for name in names {
        if name.is_empty() || Path::new(name).is_absolute() {
            continue;
        }
        let Ok(Location::Project { rel, abs }) = locate(root, name) else {
            continue;
        };
        // The file itself, through its links: one file under two names is used once.
        let real = std::fs::canonicalize(&abs).unwrap_or_else(|_| abs.clone());
        if protected_dir(&rel).is_some() || taken.contains(&real) {
            continue;
        }
        let Ok(text) = read_text(&abs, &rel) else {
            continue;
        };
        if text.trim().is_empty() || text.len() > MAX_RULES_BYTES {
            continue;
        }
        taken.push(real);
        found.push(RulesFile {
            path: name.clone(),
            text,
        });
        if mode == RulesMode::First {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn first_and_all_skip_missing_links_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(dir.path().join("secret.md"), "outside").unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("CLAUDE.md"), "claude").unwrap();
        std::fs::write(root.join("GEMINI.md"), "gemini").unwrap();
        std::fs::write(root.join(".git/config"), "url = token").unwrap();
        std::os::unix::fs::symlink("CLAUDE.md", root.join(".rules")).unwrap();
        std::os::unix::fs::symlink("../secret.md", root.join("AGENTS.md")).unwrap();
        std::fs::create_dir(root.join(".clinerules")).unwrap();
        std::os::unix::fs::symlink(".git/config", root.join(".cursorrules")).unwrap();
        let list = names(&[
            "AGENTS.md",
            "../secret.md",
            ".git/config",
            ".clinerules",
            ".cursorrules",
            "CLAUDE.md",
            ".rules",
            "GEMINI.md",
        ]);
        let first = find(&root, &list, RulesMode::First);
        assert_eq!(first.len(), 1);
        assert_eq!(
            (first[0].path.as_str(), first[0].text.as_str()),
            ("CLAUDE.md", "claude")
        );
        let all: Vec<_> = find(&root, &list, RulesMode::All)
            .into_iter()
            .map(|r| r.path)
            .collect();
        assert_eq!(all, ["CLAUDE.md", "GEMINI.md"]);
    }
}
