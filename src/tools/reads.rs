//! What the read tools do on disk: walking the project (honouring `.gitignore`, never
//! into version-control or bb7 state), listing, searching and reading, and the secrets
//! rule ([`is_secret`]) that withholds files in every mode.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::project::fsutil::read_text;
use crate::project::paths::locate_in_project;

use serde::Serialize;

use super::retrieval::{Limits, ListFilesArgs, Read, ReadArgs, ReadError, ReadOutput, SearchArgs};

const MAX_LIST: usize = 500;
/// Most bytes a `read_file` returns, whatever `max_bytes` asks (or the configured
/// default, if larger).
const MAX_READ_BYTES: usize = 256 * 1024;
const MAX_SEARCH_FILE_BYTES: u64 = 1024 * 1024;
/// Lines shown before and after a matching line in a search snippet.
const SNIPPET_CONTEXT: usize = 2;
/// Characters kept of one line in a snippet.
const SNIPPET_LINE_CHARS: usize = 200;

/// `list_files`'s result as the model receives it (JSON).
#[derive(Debug, Serialize)]
struct Listing {
    /// Project-relative paths, sorted.
    files: Vec<String>,
    /// Files listed beyond `files` (the listing shows at most 500).
    #[serde(skip_serializing_if = "is_zero")]
    more: usize,
    /// Files withheld because they likely hold secrets.
    #[serde(skip_serializing_if = "is_zero")]
    withheld_secrets: usize,
}

/// One `search_project` result: a snippet of consecutive lines around one or more
/// matching lines.
#[derive(Debug, Serialize)]
struct Snippet {
    /// Project-relative path.
    file_path: String,
    /// First line of the snippet (1-based).
    start_line: usize,
    /// Last line of the snippet (inclusive).
    end_line: usize,
    /// The lines that match, 1-based.
    match_lines: Vec<usize>,
    /// The lines `start_line..=end_line`, each cut at 200 characters.
    snippet: String,
}

/// `search_project`'s result as the model receives it (JSON).
#[derive(Debug, Serialize)]
struct SearchResults {
    /// The snippets, in path and line order, at most the search's limit.
    results: Vec<Snippet>,
    /// Matching lines in the whole project (those in `results` and the rest).
    total_matches: usize,
    /// Files withheld because they likely hold secrets.
    #[serde(skip_serializing_if = "is_zero")]
    withheld_secrets: usize,
}

/// `read_file`'s result as the model receives it (JSON).
#[derive(Debug, Serialize)]
struct FileRead<'a> {
    /// Project-relative path.
    file_path: &'a str,
    /// First line returned (1-based).
    start_line: usize,
    /// Last line returned (inclusive; `start_line - 1` when nothing fit).
    end_line: usize,
    /// Lines in the file.
    total_lines: usize,
    /// The text of those lines.
    content: &'a str,
    /// Set when the read stopped before the lines asked for: where to read on.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_start_line: Option<usize>,
    /// Why it stopped (`max_bytes` or the lines-per-read limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The JSON text of a result (its types always serialize).
fn json_text<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn glob_matcher(glob: Option<&str>) -> Result<Option<globset::GlobMatcher>, ReadError> {
    match glob.filter(|g| !g.is_empty()) {
        None => Ok(None),
        Some(g) => globset::Glob::new(g)
            .map(|g| Some(g.compile_matcher()))
            .map_err(|e| ReadError::BadGlob {
                glob: g.to_owned(),
                reason: e.to_string(),
            }),
    }
}

/// Directories whose whole content is withheld from the model as likely secrets.
const SECRET_DIRS: &[&str] = &[".aws", ".ssh", ".gnupg"];

/// Whether a project-relative path likely holds secrets: `.env`, `.env.*`, `*.pem`,
/// `*.key`, `id_rsa*`, `id_ed25519*`, `.npmrc`, `.pypirc`, `.netrc`, `*.kdbx`, or
/// anything under a `.aws/`, `.ssh/` or `.gnupg/` directory (at any depth).
pub fn is_secret(rel: &str) -> bool {
    let mut parts: Vec<&str> = rel.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    let Some(name) = parts.pop() else {
        return false;
    };
    if parts.iter().any(|d| SECRET_DIRS.contains(d)) || SECRET_DIRS.contains(&name) {
        return true;
    }
    let lower = name.to_ascii_lowercase();
    lower == ".env"
        || lower.starts_with(".env.")
        || lower.ends_with(".pem")
        || lower.ends_with(".key")
        || lower.ends_with(".kdbx")
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_ed25519")
        || matches!(lower.as_str(), ".npmrc" | ".pypirc" | ".netrc")
}

/// Project files under `prefix`, relative and sorted, and how many were withheld as
/// secrets; version-control and bb7 state never. Errors: [`ReadError::Stopped`] once
/// `stop` is set.
fn walk(root: &Path, prefix: &str, stop: &AtomicBool) -> Result<(Vec<String>, usize), ReadError> {
    let start = if prefix.is_empty() || prefix == "." || prefix == "/" {
        root.to_path_buf()
    } else {
        locate_in_project(root, prefix.trim_end_matches('/'))
            .map_err(|e| ReadError::Path(e.to_string()))?
            .1
    };
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(&start)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| {
            let n = e.file_name().to_string_lossy();
            !(e.file_type().is_some_and(|t| t.is_dir())
                && crate::project::paths::PROTECTED_DIRS.contains(&n.as_ref()))
        })
        .build();
    let mut secret = 0;
    for entry in walker.flatten() {
        if stop.load(Ordering::Relaxed) {
            return Err(ReadError::Stopped);
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(rel) = entry.path().strip_prefix(root)
            && let Some(s) = rel.to_str()
        {
            if is_secret(s) {
                secret += 1;
            } else {
                out.push(s.to_owned());
            }
        }
    }
    out.sort();
    Ok((out, secret))
}

/// `list_files`: the JSON for the model and the summary for the user.
pub(super) fn list_files(
    root: &Path,
    args: &ListFilesArgs,
    stop: &AtomicBool,
) -> Result<ReadOutput, ReadError> {
    let prefix = args.prefix.as_deref().unwrap_or("");
    let glob = glob_matcher(args.glob.as_deref())?;
    let (files, secret) = walk(root, prefix, stop)?;
    let mut files: Vec<String> = files
        .into_iter()
        .filter(|f| glob.as_ref().is_none_or(|g| g.is_match(f)))
        .collect();
    let total = files.len();
    files.truncate(MAX_LIST);
    let under = if prefix.is_empty() {
        String::new()
    } else {
        format!(" under {prefix}")
    };
    let text = json_text(&Listing {
        more: total - files.len(),
        files,
        withheld_secrets: secret,
    });
    Ok(ReadOutput {
        text,
        summary: format!("Listed {total} files{under}"),
    })
}

/// `search_project`: the JSON for the model and the summary for the user. Matching
/// lines close together share one snippet of at most `limits.snippet_lines` lines.
pub(super) fn search_project(
    root: &Path,
    args: &SearchArgs,
    limits: &Limits,
    stop: &AtomicBool,
) -> Result<ReadOutput, ReadError> {
    let query = args.query.as_deref().unwrap_or("").trim().to_owned();
    if query.is_empty() {
        return Err(ReadError::EmptyQuery);
    }
    let needle = query.to_lowercase();
    let limit = args
        .limit
        .map(|l| (l as usize).clamp(1, limits.search_cap))
        .unwrap_or(limits.search_default);
    let glob = glob_matcher(args.glob.as_deref())?;
    let mut results = Vec::new();
    let mut total = 0;
    let (all, secret) = walk(root, "", stop)?;
    for rel in all {
        if stop.load(Ordering::Relaxed) {
            return Err(ReadError::Stopped);
        }
        if glob.as_ref().is_some_and(|g| !g.is_match(&rel)) {
            continue;
        }
        let abs = root.join(&rel);
        if std::fs::metadata(&abs)
            .map(|m| m.len() > MAX_SEARCH_FILE_BYTES)
            .unwrap_or(true)
        {
            continue;
        }
        let Ok(text) = read_text(&abs, &rel) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let hits: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].to_lowercase().contains(&needle))
            .collect();
        total += hits.len();
        for range in snippet_ranges(&hits, lines.len(), limits.snippet_lines) {
            if results.len() >= limit {
                break;
            }
            let (first, last) = range.lines;
            let snippet = lines[first..=last]
                .iter()
                .map(|l| l.chars().take(SNIPPET_LINE_CHARS).collect::<String>())
                .collect::<Vec<_>>()
                .join("\n");
            results.push(Snippet {
                file_path: rel.clone(),
                start_line: first + 1,
                end_line: last + 1,
                match_lines: range.hits.iter().map(|h| h + 1).collect(),
                snippet,
            });
        }
    }
    let text = json_text(&SearchResults {
        results,
        total_matches: total,
        withheld_secrets: secret,
    });
    Ok(ReadOutput {
        text,
        summary: format!("Found {total} matches for \"{query}\""),
    })
}

/// A snippet's lines (0-based, inclusive) and the matching lines it holds.
struct SnippetRange {
    lines: (usize, usize),
    hits: Vec<usize>,
}

/// Groups matching lines (0-based, ascending) of a file of `n` lines into snippets:
/// each hit with [`SNIPPET_CONTEXT`] lines around it, a hit joining the previous
/// snippet when their lines touch and the snippet stays within `max_lines`.
fn snippet_ranges(hits: &[usize], n: usize, max_lines: usize) -> Vec<SnippetRange> {
    let max_lines = max_lines.max(1);
    let context = SNIPPET_CONTEXT.min((max_lines - 1) / 2);
    let mut out: Vec<SnippetRange> = Vec::new();
    for &h in hits {
        let (first, last) = (
            h.saturating_sub(context),
            (h + context).min(n.saturating_sub(1)),
        );
        if let Some(prev) = out.last_mut()
            && first <= prev.lines.1 + 1
            && last + 1 - prev.lines.0 <= max_lines
        {
            prev.lines.1 = prev.lines.1.max(last);
            prev.hits.push(h);
            continue;
        }
        // A new snippet starts after the previous one, never repeating its lines.
        let first = out
            .last()
            .map_or(first, |p| first.max(p.lines.1 + 1))
            .min(h);
        out.push(SnippetRange {
            lines: (first, last),
            hits: vec![h],
        });
    }
    out
}

/// `read_file`: the JSON for the model and the summary for the user. At most
/// `max_bytes` (default `limits.read_bytes`) and `limits.read_lines` lines.
pub(super) fn read_file(
    root: &Path,
    args: &ReadArgs,
    limits: &Limits,
) -> Result<ReadOutput, ReadError> {
    let path = args.target();
    let (rel, abs) = locate_in_project(root, path).map_err(|e| ReadError::Path(e.to_string()))?;
    if let Some(dir) = crate::project::paths::protected_dir(&rel) {
        return Err(ReadError::Protected {
            rel,
            dir: dir.to_owned(),
        });
    }
    // Also by where a symlink inside the project really leads (`keys -> .ssh`).
    let real = std::fs::canonicalize(&abs).ok().and_then(|r| {
        r.strip_prefix(root)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    });
    if is_secret(&rel) || real.as_deref().is_some_and(is_secret) {
        return Err(ReadError::Withheld(rel));
    }
    let text = read_text(&abs, &rel).map_err(|e| ReadError::Unreadable {
        message: e.message,
        rel: rel.clone(),
    })?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let n = lines.len();
    let start = args.start_line.unwrap_or(1).max(1) as usize;
    let end = args.end_line.map(|e| e as usize).unwrap_or(n).min(n);
    if start > end.max(1) || start > n.max(1) {
        return Err(ReadError::NoSuchLines {
            rel,
            lines: n,
            start,
            end,
        });
    }
    let max = args
        .max_bytes
        .map(|m| (m as usize).clamp(1, MAX_READ_BYTES.max(limits.read_bytes)))
        .unwrap_or(limits.read_bytes);
    let line_cap = end.min(start - 1 + limits.read_lines);
    let mut body = String::new();
    let mut last = start.saturating_sub(1);
    for (i, l) in lines.iter().enumerate().take(line_cap).skip(start - 1) {
        if body.len() + l.len() > max {
            break;
        }
        body.push_str(l);
        last = i + 1;
    }
    let truncated = (last < end).then(|| {
        if last < line_cap {
            format!("at {max} bytes")
        } else {
            format!("at {} lines", limits.read_lines)
        }
    });
    let text = json_text(&FileRead {
        file_path: &rel,
        start_line: start,
        end_line: last,
        total_lines: n,
        content: &body,
        next_start_line: truncated.as_ref().map(|_| last + 1),
        truncated,
    });
    Ok(ReadOutput {
        text,
        summary: format!("Read {rel} lines {start}-{last}"),
    })
}

impl Read {
    /// Runs the read under `root` within `limits`: the JSON text for the model and a
    /// one-line summary for the user. A walk of the project checks `stop` before each
    /// file and ends with [`ReadError::Stopped`] once it is set, so a read nobody waits
    /// for any more does not go on. Errors: a [`ReadError`], whose text is sent to the
    /// model as the result.
    pub fn run(
        &self,
        root: &Path,
        limits: &Limits,
        stop: &AtomicBool,
    ) -> Result<ReadOutput, ReadError> {
        match self {
            Read::List(a) => list_files(root, a, stop),
            Read::Search(a) => search_project(root, a, limits, stop),
            Read::File(a) => read_file(root, a, limits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(hits: &[usize], n: usize, max: usize) -> Vec<((usize, usize), Vec<usize>)> {
        snippet_ranges(hits, n, max)
            .into_iter()
            .map(|r| (r.lines, r.hits))
            .collect()
    }

    /// Hits close together share a snippet up to its line limit; far ones get their
    /// own; snippets never overlap and stay inside the file.
    #[test]
    fn matching_lines_group_into_snippets() {
        assert_eq!(ranges(&[0], 1, 20), [((0, 0), vec![0])]);
        assert_eq!(ranges(&[5, 7], 100, 20), [((3, 9), vec![5, 7])]);
        assert_eq!(
            ranges(&[5, 50], 100, 20),
            [((3, 7), vec![5]), ((48, 52), vec![50])]
        );
        // A limit of 5 lines: the second hit starts a new snippet after the first.
        assert_eq!(
            ranges(&[5, 8], 100, 5),
            [((3, 7), vec![5]), ((8, 10), vec![8])]
        );
        // A one-line limit shows only the matching lines.
        assert_eq!(
            ranges(&[5, 6], 100, 1),
            [((5, 5), vec![5]), ((6, 6), vec![6])]
        );
    }
}
