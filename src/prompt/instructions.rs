//! Instruction files: global instructions are included as
//! they are; project instructions (`.bb7/instructions`) understand two directives at
//! column 0 outside fenced code blocks: `@@` comments and `@include <path>` (also
//! `@include "quoted path"`), one level deep, project-relative, never escaping.

use std::path::Path;

use crate::project::fsutil::read_text;
use crate::project::paths::{Location, locate};

/// Expands project instructions. Returns the text to inject, or an error message
/// naming the line (`line 3: @include: …`) that blocks sends until fixed.
pub fn expand_project(root: &Path, text: &str) -> Result<String, String> {
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
            let included =
                include(root, rest.trim()).map_err(|e| format!("line {}: @include: {e}", n + 1))?;
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

fn include(root: &Path, arg: &str) -> Result<String, String> {
    let path = if let Some(inner) = arg.strip_prefix('"') {
        inner
            .strip_suffix('"')
            .ok_or_else(|| "unterminated quoted path".to_owned())?
    } else {
        arg
    };
    if path.is_empty() {
        return Err("missing path".into());
    }
    if Path::new(path).is_absolute() {
        return Err(format!("absolute paths are not allowed: {path}"));
    }
    match locate(root, path) {
        Ok(Location::Project { abs, rel }) => {
            read_text(&abs, &rel).map_err(|e| format!("{}: {path}", e.message))
        }
        Ok(Location::External { .. }) | Err(_) => {
            Err(format!("path is outside the project: {path}"))
        }
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
        assert!(
            expand_project(&root, "@include /etc/passwd\n")
                .unwrap_err()
                .contains("line 1")
        );
        assert!(
            expand_project(&root, "x\n@include ../up\n")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(expand_project(&root, "@include missing.md\n").is_err());
    }
}
