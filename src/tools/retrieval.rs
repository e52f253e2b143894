//! Approved retrieval tools (docs/PROTOCOL.md, "approved retrieval tools"):
//! read-only `list_files`, `search_project`, `read_file` and `clarify_user`, offered to
//! the model only when the chat's `tools` setting is `ask` or `auto`. They never write,
//! never leave the project, never read `.bb7/` or version-control state, honour
//! `.gitignore`, and withhold files that likely hold secrets ([`is_secret`]) in every
//! mode: the model is told such a file exists but is withheld. A file the user adds to
//! context explicitly is the user's choice and is not affected.

use std::path::Path;

use serde_json::{Value, json};

use crate::project::fsutil::read_text;
use crate::project::paths::locate_in_project;

/// Whether and how the model may use the retrieval tools (chat setting `tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsMode {
    /// No retrieval tools: the non-agentic BB-7 behaviour (default).
    Off,
    /// Each read waits for the user's approval (`tool_approval` / `tool_approve`).
    Ask,
    /// Reads run without asking.
    Auto,
}

/// A `tools` setting that is not `off`, `ask` or `auto`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown tools setting {0}: use off, ask or auto")]
pub struct UnknownToolsMode(pub String);

impl From<UnknownToolsMode> for crate::error::Error {
    fn from(e: UnknownToolsMode) -> Self {
        crate::error::Error::invalid(e.to_string())
    }
}

impl ToolsMode {
    /// Parses the setting; absent is `off`. Errors on other values.
    pub fn parse(v: Option<&str>) -> Result<ToolsMode, UnknownToolsMode> {
        match v.unwrap_or("off") {
            "off" | "" => Ok(ToolsMode::Off),
            "ask" => Ok(ToolsMode::Ask),
            "auto" => Ok(ToolsMode::Auto),
            other => Err(UnknownToolsMode(other.to_owned())),
        }
    }
}

/// Most retrieval tool calls in one turn (`max_tool_calls`).
pub const MAX_TOOL_CALLS: usize = 12;
const MAX_LIST: usize = 500;
const DEFAULT_SEARCH_LIMIT: usize = 20;
const MAX_SEARCH_LIMIT: usize = 100;
const DEFAULT_READ_BYTES: usize = 32 * 1024;
const MAX_READ_BYTES: usize = 256 * 1024;
const MAX_SEARCH_FILE_BYTES: u64 = 1024 * 1024;

/// The retrieval tools' definitions for the request's `tools` array.
pub fn definitions() -> Vec<Value> {
    let f = |name: &str, description: &str, properties: Value, required: Value| {
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    vec![
        f(
            "list_files",
            "List project files (respecting .gitignore). Use it to find files that are not in context.",
            json!({"prefix": {"type": "string", "description": "Directory to list, e.g. src/ (default: the whole project)."},
                   "glob": {"type": "string", "description": "Only paths matching this glob, e.g. **/*.rs."}}),
            json!([]),
        ),
        f(
            "search_project",
            "Search the project's text files for a string (case-insensitive). Returns path:line: text.",
            json!({"query": {"type": "string"}, "glob": {"type": "string", "description": "Only files matching this glob."},
                   "limit": {"type": "integer", "description": "Most matches to return (default 20, at most 100)."}}),
            json!(["query"]),
        ),
        f(
            "read_file",
            "Read a project file, or a line range of it. The content is for this answer only; ask the user to add files you need to change.",
            json!({"path": {"type": "string"}, "start_line": {"type": "integer"}, "end_line": {"type": "integer"},
                   "max_bytes": {"type": "integer", "description": "At most this many bytes (default 32768)."}}),
            json!(["path"]),
        ),
        f(
            "clarify_user",
            "Ask the user one question when the request is ambiguous. The answer may be no_user_answer.",
            json!({"question": {"type": "string"}}),
            json!(["question"]),
        ),
    ]
}

/// Whether `name` is a retrieval tool (as opposed to a file tool).
pub fn is_retrieval(name: &str) -> bool {
    matches!(
        name,
        "list_files" | "search_project" | "read_file" | "clarify_user"
    )
}

/// The approval payload of a read (`tool_approval.payload`): `type` `read`, `search`
/// or `list`, a one-line `description`, and `path` where there is one.
pub fn approval_payload(name: &str, args: &Value) -> Value {
    let s = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match name {
        "read_file" => {
            let range = match (args["start_line"].as_u64(), args["end_line"].as_u64()) {
                (Some(a), Some(b)) => format!(" lines {a}-{b}"),
                _ => String::new(),
            };
            json!({"type": "read", "description": format!("Read {}{range}", s("path")), "path": s("path")})
        }
        "search_project" => {
            json!({"type": "search", "description": format!("Search the project for \"{}\"", s("query")),
                                   "query": s("query"), "glob": args.get("glob")})
        }
        _ => {
            json!({"type": "list", "description": format!("List files under {}", if s("prefix").is_empty() { "the project".to_owned() } else { s("prefix") }),
                     "prefix": args.get("prefix"), "glob": args.get("glob")})
        }
    }
}

/// Runs a read tool. Returns the text for the model and a one-line summary for the
/// user, or an error message (sent to the model as the result).
pub fn execute(name: &str, args: &Value, root: &Path) -> Result<(String, String), String> {
    match name {
        "list_files" => list_files(root, args),
        "search_project" => search_project(root, args),
        "read_file" => read_file(root, args),
        other => Err(format!("Unknown tool {other}")),
    }
}

fn glob_matcher(args: &Value) -> Result<Option<globset::GlobMatcher>, String> {
    match args
        .get("glob")
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty())
    {
        None => Ok(None),
        Some(g) => globset::Glob::new(g)
            .map(|g| Some(g.compile_matcher()))
            .map_err(|e| format!("Bad glob {g}: {e}")),
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

fn withheld(rel: &str) -> String {
    format!(
        "{rel} is withheld: it likely holds secrets. Ask the user to add it to context if it is really needed."
    )
}

/// Project files under `prefix`, relative and sorted, and how many were withheld as
/// secrets; version-control and bb7 state never.
fn walk(root: &Path, prefix: &str) -> Result<(Vec<String>, usize), String> {
    let start = if prefix.is_empty() || prefix == "." || prefix == "/" {
        root.to_path_buf()
    } else {
        locate_in_project(root, prefix.trim_end_matches('/'))
            .map_err(|e| e.message)?
            .1
    };
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(&start)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| {
            let n = e.file_name().to_string_lossy();
            !(e.file_type().is_some_and(|t| t.is_dir())
                && crate::apply::PROTECTED_DIRS.contains(&n.as_ref()))
        })
        .build();
    let mut secret = 0;
    for entry in walker.flatten() {
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

fn list_files(root: &Path, args: &Value) -> Result<(String, String), String> {
    let prefix = args.get("prefix").and_then(Value::as_str).unwrap_or("");
    let glob = glob_matcher(args)?;
    let (files, secret) = walk(root, prefix)?;
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
    Ok((text, format!("Listed {} files{under}", files.len())))
}

fn search_project(root: &Path, args: &Value) -> Result<(String, String), String> {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned();
    if query.is_empty() {
        return Err("query must not be empty".into());
    }
    let needle = query.to_lowercase();
    let limit = args
        .get("limit")
        .and_then(Value::as_u64)
        .map(|l| (l as usize).clamp(1, MAX_SEARCH_LIMIT))
        .unwrap_or(DEFAULT_SEARCH_LIMIT);
    let glob = glob_matcher(args)?;
    let mut hits = Vec::new();
    let mut total = 0;
    let (all, secret) = walk(root, "")?;
    for rel in all {
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
    Ok((text, format!("Found {total} matches for \"{query}\"")))
}

fn read_file(root: &Path, args: &Value) -> Result<(String, String), String> {
    let path = args.get("path").and_then(Value::as_str).unwrap_or("");
    let (rel, abs) = locate_in_project(root, path).map_err(|e| e.message)?;
    if let Some(dir) = crate::apply::protected_dir(&rel) {
        return Err(format!(
            "{rel} is inside {dir}/, which the tools do not read"
        ));
    }
    // Also by where a symlink inside the project really leads (`keys -> .ssh`).
    let real = std::fs::canonicalize(&abs).ok().and_then(|r| {
        r.strip_prefix(root)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    });
    if is_secret(&rel) || real.as_deref().is_some_and(is_secret) {
        return Err(withheld(&rel));
    }
    let text = read_text(&abs, &rel).map_err(|e| format!("{}: {rel}", e.message))?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let n = lines.len();
    let start = args
        .get("start_line")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1) as usize;
    let end = args
        .get("end_line")
        .and_then(Value::as_u64)
        .map(|e| e as usize)
        .unwrap_or(n)
        .min(n);
    if start > end.max(1) || start > n.max(1) {
        return Err(format!(
            "{rel} has {n} lines; lines {start}-{end} do not exist"
        ));
    }
    let max = args
        .get("max_bytes")
        .and_then(Value::as_u64)
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
    Ok((out, format!("Read {rel} lines {start}-{last}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_stay_in_the_project_and_honour_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".bb7/chats")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn alpha() {}\nfn beta() {}\n").unwrap();
        std::fs::write(root.join("notes.md"), "Alpha notes\n").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out.rs"), "fn alpha() {}\n").unwrap();
        std::fs::write(root.join(".bb7/chats/index.json"), "alpha").unwrap();
        let (list, _) = execute("list_files", &json!({}), &root).unwrap();
        assert_eq!(list, ".gitignore\nnotes.md\nsrc/a.rs");
        let (list, _) = execute("list_files", &json!({"glob": "**/*.rs"}), &root).unwrap();
        assert_eq!(list, "src/a.rs");
        let (hits, summary) = execute("search_project", &json!({"query": "ALPHA"}), &root).unwrap();
        assert_eq!(hits, "notes.md:1: Alpha notes\nsrc/a.rs:1: fn alpha() {}");
        assert_eq!(summary, "Found 2 matches for \"ALPHA\"");
        let (read, _) = execute(
            "read_file",
            &json!({"path": "src/a.rs", "start_line": 2}),
            &root,
        )
        .unwrap();
        assert_eq!(read, "src/a.rs lines 2-2 of 2:\nfn beta() {}\n");
        assert!(execute("read_file", &json!({"path": "../etc/passwd"}), &root).is_err());
        assert!(
            execute(
                "read_file",
                &json!({"path": ".bb7/chats/index.json"}),
                &root
            )
            .is_err()
        );
        assert!(execute("read_file", &json!({"path": "/etc/passwd"}), &root).is_err());
        let (read, _) = execute(
            "read_file",
            &json!({"path": "src/a.rs", "max_bytes": 5}),
            &root,
        )
        .unwrap();
        assert!(read.contains("[truncated at 5 bytes"));
    }

    #[test]
    fn secrets_are_recognised() {
        for s in [
            ".env",
            "app/.env.local",
            "certs/server.pem",
            "tls.key",
            "id_rsa",
            "keys/id_ed25519.pub",
            ".npmrc",
            ".pypirc",
            ".netrc",
            ".aws/credentials",
            "home/.ssh/config",
            ".gnupg/pubring.kbx",
            "vault.kdbx",
        ] {
            assert!(is_secret(s), "{s}");
        }
        for s in [
            "environment.rs",
            "src/keys.rs",
            "docs/env.md",
            "keyboard.key.rs",
        ] {
            assert!(!is_secret(s), "{s}");
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".ssh")).unwrap();
        std::fs::write(root.join(".ssh/config"), "Host x\n").unwrap();
        std::os::unix::fs::symlink(root.join(".ssh"), root.join("keys")).unwrap();
        let e = execute("read_file", &json!({"path": "keys/config"}), &root).unwrap_err();
        assert!(e.contains("withheld"), "{e}");
    }
}
