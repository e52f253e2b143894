//! The path a SEARCH/REPLACE block names ([`super::blocks`]): a path line as models
//! decorate it, a path as a fence's info string, or a path named in the prose line
//! before the fence. A line that names a file but does not read as one path is told
//! apart, so that its block is refused rather than given another block's path.

/// Longest line that may be held as a path.
pub(crate) const MAX_PATH_LINE: usize = 300;

/// A path given as a fence's info string: ```` ```src/a.py ````, ```` ```python:src/a.py ````.
pub(crate) fn path_in_fence_info(info: &str) -> Option<String> {
    let candidate = info.rsplit_once(':').map_or(info, |(_, p)| p);
    let p = path_of(candidate)?;
    (p.contains('/') || p.contains('.')).then_some(p)
}

/// File names without an extension that a path line may be.
const PLAIN_NAMES: [&str; 7] = [
    "Makefile",
    "Dockerfile",
    "Justfile",
    "Rakefile",
    "Gemfile",
    "LICENSE",
    "Procfile",
];

/// The path a line names, when it is a path line: the path alone, maybe in backticks or
/// bold, after `#` heading marks or a `File:` / `Path:` label, with a trailing colon.
pub(crate) fn path_of(line: &str) -> Option<String> {
    path_text(line, false)
}

/// As [`path_of`]; `spaced`: the text was quoted (backticks), so inner spaces belong
/// to the path.
fn path_text(line: &str, spaced: bool) -> Option<String> {
    let mut t = line.trim();
    if t.len() > MAX_PATH_LINE || t.is_empty() {
        return None;
    }
    t = t.trim_start_matches('#').trim();
    // The path as a comment on the fence's first line: `// src/a.rs`, `-- init.lua`.
    for comment in ["//", "--"] {
        if let Some(rest) = t.strip_prefix(comment) {
            t = rest.trim();
        }
    }
    // A list item: `- src/a.rs`, `1. src/a.rs`.
    if let Some(rest) = t.strip_prefix(['-', '+', '*']).or_else(|| {
        let digits = t.trim_start_matches(|c: char| c.is_ascii_digit());
        (digits.len() < t.len())
            .then(|| digits.strip_prefix(['.', ')']))
            .flatten()
    }) && rest.starts_with(' ')
    {
        t = rest.trim();
    }
    for label in ["filename:", "file:", "path:"] {
        // `get`: the label's length may fall inside a multi-byte character of `t`.
        if let Some(rest) = t
            .get(..label.len())
            .filter(|head| head.eq_ignore_ascii_case(label))
            .and_then(|_| t.get(label.len()..))
        {
            t = rest.trim();
        }
    }
    let u = t.trim_end_matches(':');
    // A path in backticks, bold or quotes may hold spaces when it ends in a file
    // extension: `docs/meeting notes.md`.
    let quoted = spaced
        || ["`", "**", "\"", "'"]
            .iter()
            .any(|q| u.len() > 2 * q.len() && u.starts_with(q) && u.ends_with(q));
    let t = u
        .trim_matches(['*', '`', '"', '\''])
        .trim_end_matches(':')
        .trim();
    let spaces_ok = quoted && has_extension(t) && !t.contains(['\t', '\n']);
    if t.is_empty()
        || (t.contains(char::is_whitespace) && !spaces_ok)
        || t.starts_with(['<', '=', '>', '~'])
    {
        return None;
    }
    let named = t.contains('.') || t.contains('/') || PLAIN_NAMES.contains(&t);
    // Symbols outside ASCII (an emoji ending a folder's name, `notes🚀/`) are part of
    // names people give; ASCII punctuation other than these is not part of a path line.
    let wordy = t.chars().all(|c| {
        c.is_alphanumeric()
            || "._-/\\+@".contains(c)
            || (spaces_ok && c == ' ')
            || (!c.is_ascii() && !c.is_whitespace() && !c.is_control())
    });
    (named && wordy && !t.ends_with('.') && t.chars().any(char::is_alphanumeric))
        .then(|| t.to_owned())
}

/// Whether `p` ends in a file extension (`.md`, `.tar.gz`): a dot, then one to ten
/// ASCII letters or digits.
fn has_extension(p: &str) -> bool {
    let name = p.rsplit('/').next().unwrap_or(p);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.trim().is_empty()
            && (1..=10).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// A path named in a line of prose: the last backticked path, else the last word that
/// looks like a file path (`src/a.rs`, `main.go`). A word right after a word that is a
/// directory path (`docs/meeting notes.md`) may be the end of a path with a space in
/// it: then the line names no path bb7 can be sure of.
pub(crate) fn path_in_prose(line: &str) -> Option<String> {
    let filelike = |p: &String| {
        p.contains('/')
            || p.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
            })
    };
    let ticked: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
    if let Some(p) = ticked
        .iter()
        .rev()
        .filter_map(|w| path_text(w, true))
        .find(filelike)
    {
        return Some(p);
    }
    let clean = |w: &str| w.trim_matches(|c: char| "*\"'(),;:".contains(c)).to_owned();
    let words: Vec<&str> = line.split_whitespace().collect();
    for i in (0..words.len()).rev() {
        let Some(p) = path_of(&clean(words[i])).filter(filelike) else {
            continue;
        };
        let joined = i > 0 && {
            let prev = words[i - 1];
            prev.contains('/') && prev.ends_with(|c: char| c.is_alphanumeric() || c == '_')
        };
        return (!joined).then_some(p);
    }
    None
}

/// Whether a line of prose looks like it names a file (a word with a `/` or a file
/// extension), for telling a path bb7 cannot read from a block with no path at all.
pub(crate) fn names_a_file(line: &str) -> bool {
    line.split_whitespace().any(|w| {
        let w = w.trim_matches(|c: char| "*`\"'(),;:".contains(c));
        w.contains('/') || has_extension(w)
    })
}
