//! What the read tools do on disk: walking the project (honouring `.gitignore`, never
//! into version-control or bb7 state), listing, searching and reading, and the secrets
//! rule ([`is_secret`]) that withholds files in every mode.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::project::fsutil::read_text;
use crate::project::paths::locate_in_project;

use super::retrieval::{ListFilesArgs, Read, ReadArgs, ReadError, ReadOutput, SearchArgs};

const MAX_LIST: usize = 500;
const DEFAULT_SEARCH_LIMIT: usize = 20;
const MAX_SEARCH_LIMIT: usize = 100;
const DEFAULT_READ_BYTES: usize = 32 * 1024;
const MAX_READ_BYTES: usize = 256 * 1024;
const MAX_SEARCH_FILE_BYTES: u64 = 1024 * 1024;

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

fn withheld_note(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("\n({n} file(s) withheld: they likely hold secrets)")
    }
}

/// `list_files`: the text for the model and the summary for the user.
pub(super) fn list_files(
    root: &Path,
    args: &ListFilesArgs,
    stop: &AtomicBool,
) -> Result<ReadOutput, ReadError> {
    let prefix = args.prefix.as_deref().unwrap_or("");
    let glob = glob_matcher(args.glob.as_deref())?;
    let (files, secret) = walk(root, prefix, stop)?;
    let files: Vec<String> = files
        .into_iter()
        .filter(|f| glob.as_ref().is_none_or(|g| g.is_match(f)))
        .collect();
    let shown = files.len().min(MAX_LIST);
    let mut text = files[..shown].join("\n");
    if files.len() > shown {
        text.push_str(&format!("\n… and {} more", files.len() - shown));
    }
    text.push_str(&withheld_note(secret));
    let under = if prefix.is_empty() {
        String::new()
    } else {
        format!(" under {prefix}")
    };
    Ok(ReadOutput {
        text,
        summary: format!("Listed {} files{under}", files.len()),
    })
}

/// `search_project`: the text for the model and the summary for the user.
pub(super) fn search_project(
    root: &Path,
    args: &SearchArgs,
    stop: &AtomicBool,
) -> Result<ReadOutput, ReadError> {
    let query = args.query.as_deref().unwrap_or("").trim().to_owned();
    if query.is_empty() {
        return Err(ReadError::EmptyQuery);
    }
    let needle = query.to_lowercase();
    let limit = args
        .limit
        .map(|l| (l as usize).clamp(1, MAX_SEARCH_LIMIT))
        .unwrap_or(DEFAULT_SEARCH_LIMIT);
    let glob = glob_matcher(args.glob.as_deref())?;
    let mut hits = Vec::new();
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
        for (i, line) in text.lines().enumerate() {
            if line.to_lowercase().contains(&needle) {
                total += 1;
                if hits.len() < limit {
                    let shown: String = line.trim().chars().take(200).collect();
                    hits.push(format!("{rel}:{}: {shown}", i + 1));
                }
            }
        }
    }
    let mut text = if hits.is_empty() {
        "No matches.".to_owned()
    } else {
        hits.join("\n")
    };
    if total > hits.len() {
        text.push_str(&format!("\n… {} more matches", total - hits.len()));
    }
    text.push_str(&withheld_note(secret));
    Ok(ReadOutput {
        text,
        summary: format!("Found {total} matches for \"{query}\""),
    })
}

/// `read_file`: the text for the model and the summary for the user.
pub(super) fn read_file(root: &Path, args: &ReadArgs) -> Result<ReadOutput, ReadError> {
    let path = args.path.as_deref().unwrap_or("");
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
        .map(|m| (m as usize).clamp(1, MAX_READ_BYTES))
        .unwrap_or(DEFAULT_READ_BYTES);
    let mut body = String::new();
    let mut last = start.saturating_sub(1);
    for (i, l) in lines.iter().enumerate().take(end).skip(start - 1) {
        if body.len() + l.len() > max {
            break;
        }
        body.push_str(l);
        last = i + 1;
    }
    let truncated = last < end;
    let mut out = format!("{rel} lines {start}-{last} of {n}:\n{body}");
    if truncated {
        out.push_str(&format!(
            "\n[truncated at {max} bytes; read from line {} for more]",
            last + 1
        ));
    }
    Ok(ReadOutput {
        text: out,
        summary: format!("Read {rel} lines {start}-{last}"),
    })
}

impl Read {
    /// Runs the read under `root`: the text for the model and a one-line summary for
    /// the user. A walk of the project checks `stop` before each file and ends with
    /// [`ReadError::Stopped`] once it is set, so a read nobody waits for any more does
    /// not go on. Errors: a [`ReadError`], whose text is sent to the model as the result.
    pub fn run(&self, root: &Path, stop: &AtomicBool) -> Result<ReadOutput, ReadError> {
        match self {
            Read::List(a) => list_files(root, a, stop),
            Read::Search(a) => search_project(root, a, stop),
            Read::File(a) => read_file(root, a),
        }
    }
}
