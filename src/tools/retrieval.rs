//! Approved retrieval tools (docs/PROTOCOL.md, "approved retrieval tools"):
//! read-only `list_files`, `search_project`, `read_file` and `clarify_user`, offered to
//! the model only when the chat's `tools` setting is `ask` or `auto`. They never write,
//! never leave the project, never read `.bb7/` or version-control state, honour
//! `.gitignore`, and withhold files that likely hold secrets (`tools::reads::is_secret`) in every
//! mode: the model is told such a file exists but is withheld. A file the user adds to
//! context explicitly is the user's choice and is not affected.
//!
//! This file is the tools' interface (definitions, arguments, approval payloads);
//! `tools/reads.rs` does the reading.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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

/// The retrieval limits (config keys of the same names; defaults as in the README's
/// configuration table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `max_tool_calls_per_job`: retrieval calls one turn may make (12).
    pub calls_per_turn: usize,
    /// `max_search_results_default`: search results without a `limit` (20).
    pub search_default: usize,
    /// `max_search_results_cap`: most search results whatever `limit` asks (50).
    pub search_cap: usize,
    /// `max_search_snippet_lines`: most lines of one search snippet (20).
    pub snippet_lines: usize,
    /// `max_read_bytes_default`: bytes a read returns without `max_bytes` (64 KiB).
    pub read_bytes: usize,
    /// `max_read_lines_default`: most lines one read returns (800).
    pub read_lines: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            calls_per_turn: 12,
            search_default: 20,
            search_cap: 50,
            snippet_lines: 20,
            read_bytes: 64 * 1024,
            read_lines: 800,
        }
    }
}

impl Limits {
    /// The limits `config` sets, each at least 1 (a 0 would make the tool useless),
    /// the defaults for the keys it leaves out.
    pub fn from_config(config: &crate::config::Config) -> Limits {
        let d = Limits::default();
        let pick = |v: Option<u64>, default: usize| v.map_or(default, |v| v.max(1) as usize);
        let search_cap = pick(config.max_search_results_cap.map(u64::from), d.search_cap);
        Limits {
            calls_per_turn: pick(
                config.max_tool_calls_per_job.map(u64::from),
                d.calls_per_turn,
            ),
            search_default: pick(
                config.max_search_results_default.map(u64::from),
                d.search_default,
            )
            .min(search_cap),
            search_cap,
            snippet_lines: pick(
                config.max_search_snippet_lines.map(u64::from),
                d.snippet_lines,
            ),
            read_bytes: pick(config.max_read_bytes_default, d.read_bytes),
            read_lines: pick(config.max_read_lines_default.map(u64::from), d.read_lines),
        }
    }
}

/// The retrieval tools' definitions for the request's `tools` array; the defaults they
/// name are `limits`'.
pub fn definitions(limits: &Limits) -> Vec<Value> {
    let f = |name: &str, description: &str, properties: Value, required: Value| {
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    vec![
        f(
            "list_files",
            "List project files (respecting .gitignore). Use it to find files that are not in context. Returns JSON: {\"files\":[paths]}.",
            json!({"prefix": {"type": "string", "description": "Directory to list, e.g. src/ (default: the whole project)."},
                   "glob": {"type": "string", "description": "Only paths matching this glob, e.g. **/*.rs."}}),
            json!([]),
        ),
        f(
            "search_project",
            "Search the project's text files for a string (case-insensitive). Returns JSON: {\"results\":[{\"file_path\",\"start_line\",\"end_line\",\"snippet\"}],\"total_matches\"}, each snippet the matching lines with a little context.",
            json!({"query": {"type": "string"}, "glob": {"type": "string", "description": "Only files matching this glob."},
                   "limit": {"type": "integer", "description": format!("Most results to return (default {}, at most {}).", limits.search_default, limits.search_cap)}}),
            json!(["query"]),
        ),
        f(
            "read_file",
            "Read a project file, or a line range of it. Returns JSON: {\"file_path\",\"start_line\",\"end_line\",\"total_lines\",\"content\"}. The content is for this answer only; ask the user to add files you need to change.",
            json!({"file_path": {"type": "string", "description": "Project-relative path (`path` is accepted too)."},
                   "start_line": {"type": "integer"}, "end_line": {"type": "integer"},
                   "max_bytes": {"type": "integer", "description": format!("At most this many bytes (default {}).", limits.read_bytes)}}),
            json!(["file_path"]),
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

/// An optional argument that is ignored when the model sends it with the wrong type
/// (`"start_line": "ten"`), as if it were absent: a read with a default is more use to
/// the model than a refusal.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// Arguments of `list_files`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ListFilesArgs {
    /// Directory to list, project-relative (absent or empty: the whole project).
    #[serde(default, deserialize_with = "lenient")]
    pub prefix: Option<String>,
    /// Only paths matching this glob.
    #[serde(default, deserialize_with = "lenient")]
    pub glob: Option<String>,
}

/// Arguments of `search_project`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SearchArgs {
    /// The text to find, case-insensitive (refused when blank).
    #[serde(default, deserialize_with = "lenient")]
    pub query: Option<String>,
    /// Only files matching this glob.
    #[serde(default, deserialize_with = "lenient")]
    pub glob: Option<String>,
    /// Most results to return (default `max_search_results_default`, clamped to
    /// 1..=`max_search_results_cap`).
    #[serde(default, deserialize_with = "lenient")]
    pub limit: Option<u64>,
}

/// Arguments of `read_file`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ReadArgs {
    /// Project-relative path (bb7's earlier name; see [`ReadArgs::target`]).
    #[serde(default, deserialize_with = "lenient")]
    pub path: Option<String>,
    /// Project-relative path, the design's name for it.
    #[serde(default, deserialize_with = "lenient")]
    pub file_path: Option<String>,
    /// First line, 1-based (default 1).
    #[serde(default, deserialize_with = "lenient")]
    pub start_line: Option<u64>,
    /// Last line, inclusive (default: the last line of the file).
    #[serde(default, deserialize_with = "lenient")]
    pub end_line: Option<u64>,
    /// Most bytes to return (default `max_read_bytes_default`).
    #[serde(default, deserialize_with = "lenient")]
    pub max_bytes: Option<u64>,
}

impl ReadArgs {
    /// The path to read: `file_path`, else `path` (a blank one counts as absent), else
    /// `""`, which the resolver refuses.
    pub fn target(&self) -> &str {
        [&self.file_path, &self.path]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .find(|p| !p.trim().is_empty())
            .unwrap_or("")
    }
}

/// Arguments of `clarify_user`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ClarifyArgs {
    /// The question for the user.
    #[serde(default, deserialize_with = "lenient")]
    pub question: Option<String>,
}

/// A read of the project: what runs after approval in `ask` mode.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// `list_files`.
    List(ListFilesArgs),
    /// `search_project`.
    Search(SearchArgs),
    /// `read_file`.
    File(ReadArgs),
}

/// A retrieval tool call, read from its name and arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum RetrievalCall {
    /// A read of the project.
    Read(Read),
    /// `clarify_user`: a question for the user, answered with `clarify`.
    Clarify(ClarifyArgs),
}

impl RetrievalCall {
    /// Reads a call of tool `name`. `None` when `name` is not a retrieval tool or the
    /// arguments are not a JSON object; fields of the wrong type count as absent.
    pub fn parse(name: &str, args: &Value) -> Option<RetrievalCall> {
        if !args.is_object() {
            return None;
        }
        fn read<T: DeserializeOwned>(args: &Value) -> Option<T> {
            T::deserialize(args).ok()
        }
        Some(match name {
            "list_files" => RetrievalCall::Read(Read::List(read(args)?)),
            "search_project" => RetrievalCall::Read(Read::Search(read(args)?)),
            "read_file" => RetrievalCall::Read(Read::File(read(args)?)),
            "clarify_user" => RetrievalCall::Clarify(read(args)?),
            _ => return None,
        })
    }
}

/// What a read waits for approval on (`tool_approval.payload`, docs/PROTOCOL.md):
/// tagged by `type`, with a one-line `description` for the user.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ApprovalPayload {
    /// `read_file`.
    Read {
        /// `Read <path>`, with ` lines a-b` when both ends are given, and what the
        /// file is: `(120 lines, 3.2 KiB)` or `(no such file)`.
        description: String,
        /// The path as the model wrote it.
        path: String,
        /// Whether the path names a regular file in the project (so the user does
        /// not approve a read blind); absent when it was not looked at.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exists: Option<bool>,
        /// The file's size in bytes, when it exists.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
        /// Its lines, when it exists and is text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines: Option<u64>,
    },
    /// `search_project`.
    Search {
        /// `Search the project for "<query>"`.
        description: String,
        /// The query.
        query: String,
        /// The glob, `null` when none.
        glob: Option<String>,
    },
    /// `list_files`.
    List {
        /// `List files under <prefix>` (or `the project`).
        description: String,
        /// The prefix, `null` when none.
        prefix: Option<String>,
        /// The glob, `null` when none.
        glob: Option<String>,
    },
}

impl ApprovalPayload {
    /// The one line shown to the user.
    pub fn description(&self) -> &str {
        match self {
            ApprovalPayload::Read { description, .. }
            | ApprovalPayload::Search { description, .. }
            | ApprovalPayload::List { description, .. } => description,
        }
    }
}

impl Read {
    /// The approval payload of this read.
    pub fn approval_payload(&self) -> ApprovalPayload {
        match self {
            Read::File(a) => {
                let path = a.target().to_owned();
                let range = match (a.start_line, a.end_line) {
                    (Some(s), Some(e)) => format!(" lines {s}-{e}"),
                    _ => String::new(),
                };
                ApprovalPayload::Read {
                    description: format!("Read {path}{range}"),
                    path,
                    exists: None,
                    bytes: None,
                    lines: None,
                }
            }
            Read::Search(a) => {
                let query = a.query.clone().unwrap_or_default();
                ApprovalPayload::Search {
                    description: format!("Search the project for \"{query}\""),
                    query,
                    glob: a.glob.clone(),
                }
            }
            Read::List(a) => {
                let under = match a.prefix.as_deref() {
                    None | Some("") => "the project",
                    Some(p) => p,
                };
                ApprovalPayload::List {
                    description: format!("List files under {under}"),
                    prefix: a.prefix.clone(),
                    glob: a.glob.clone(),
                }
            }
        }
    }
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutput {
    /// The result for the model.
    pub text: String,
    /// One line for the user (the `tool_call` step's `summary`).
    pub summary: String,
}

/// Why a read failed. The text goes to the model as the tool result (`Error: …`) and
/// to the user in the step's summary (`Failed: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// A `glob` that does not parse.
    #[error("Bad glob {glob}: {reason}")]
    BadGlob {
        /// The glob given.
        glob: String,
        /// The parser's reason.
        reason: String,
    },
    /// A path that does not resolve inside the project (the resolver's message).
    #[error("{0}")]
    Path(String),
    /// A blank `query`.
    #[error("query must not be empty")]
    EmptyQuery,
    /// A path inside version-control or bb7 state.
    #[error("{rel} is inside {dir}/, which the tools do not read")]
    Protected {
        /// The project-relative path.
        rel: String,
        /// The protected directory.
        dir: String,
    },
    /// A file that likely holds secrets (`tools::reads::is_secret`), project-relative.
    #[error(
        "{0} is withheld: it likely holds secrets. Ask the user to add it to context if it is really needed."
    )]
    Withheld(String),
    /// A file that cannot be read as text (missing, binary, …).
    #[error("{message}: {rel}")]
    Unreadable {
        /// The reader's message.
        message: String,
        /// The project-relative path.
        rel: String,
    },
    /// A line range past the end of the file.
    #[error("{rel} has {lines} lines; lines {start}-{end} do not exist")]
    NoSuchLines {
        /// The project-relative path.
        rel: String,
        /// Lines in the file.
        lines: usize,
        /// First line asked for.
        start: usize,
        /// Last line asked for (clamped to the file).
        end: usize,
    },
    /// The read stopped unexpectedly (its task panicked or was cancelled).
    #[error("the tool failed: {0}")]
    Crashed(String),
    /// The turn stopped waiting for the read (cancelled, or past its time limit), so
    /// the read stopped too.
    #[error("the read was stopped")]
    Stopped,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::reads::is_secret;
    use std::path::Path;
    use std::sync::atomic::AtomicBool;

    /// Runs a read as the model would call it.
    fn execute(name: &str, args: &Value, root: &Path) -> Result<(String, String), ReadError> {
        match RetrievalCall::parse(name, args) {
            Some(RetrievalCall::Read(read)) => read
                .run(root, &Limits::default(), &AtomicBool::new(false))
                .map(|o| (o.text, o.summary)),
            other => panic!("not a read: {other:?}"),
        }
    }

    /// Approval payloads as the client receives them, and wrongly typed fields read as
    /// absent.
    #[test]
    fn approval_payloads_keep_their_wire_shape() {
        let payload = |name: &str, args: Value| match RetrievalCall::parse(name, &args) {
            Some(RetrievalCall::Read(read)) => {
                serde_json::to_value(read.approval_payload()).unwrap()
            }
            other => panic!("not a read: {other:?}"),
        };
        assert_eq!(
            payload(
                "read_file",
                json!({"path": "a.rs", "start_line": 2, "end_line": 5})
            ),
            json!({"type": "read", "description": "Read a.rs lines 2-5", "path": "a.rs"})
        );
        assert_eq!(
            payload(
                "read_file",
                json!({"path": "a.rs", "start_line": "two", "end_line": 5})
            ),
            json!({"type": "read", "description": "Read a.rs", "path": "a.rs"})
        );
        assert_eq!(
            payload(
                "read_file",
                json!({"file_path": "a.rs", "start_line": 2, "end_line": 5})
            ),
            json!({"type": "read", "description": "Read a.rs lines 2-5", "path": "a.rs"})
        );
        assert_eq!(
            payload("search_project", json!({"query": "x"})),
            json!({"type": "search", "description": "Search the project for \"x\"", "query": "x", "glob": null})
        );
        assert_eq!(
            payload("list_files", json!({"glob": "*.rs"})),
            json!({"type": "list", "description": "List files under the project", "prefix": null, "glob": "*.rs"})
        );
        assert_eq!(
            payload("list_files", json!({"prefix": "src/"})),
            json!({"type": "list", "description": "List files under src/", "prefix": "src/", "glob": null})
        );
        assert_eq!(
            RetrievalCall::parse("clarify_user", &json!({"question": "Which?"})),
            Some(RetrievalCall::Clarify(ClarifyArgs {
                question: Some("Which?".into())
            }))
        );
        assert_eq!(RetrievalCall::parse("read_file", &json!("a.rs")), None);
        assert_eq!(RetrievalCall::parse("write_file", &json!({})), None);
    }

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
        let json = |text: String| serde_json::from_str::<Value>(&text).unwrap();
        let (list, _) = execute("list_files", &json!({}), &root).unwrap();
        assert_eq!(
            json(list),
            json!({"files": [".gitignore", "notes.md", "src/a.rs"]})
        );
        let (list, _) = execute("list_files", &json!({"glob": "**/*.rs"}), &root).unwrap();
        assert_eq!(json(list), json!({"files": ["src/a.rs"]}));
        let (hits, summary) = execute("search_project", &json!({"query": "ALPHA"}), &root).unwrap();
        assert_eq!(
            json(hits),
            json!({"results": [
                {"file_path": "notes.md", "start_line": 1, "end_line": 1, "match_lines": [1], "snippet": "Alpha notes"},
                {"file_path": "src/a.rs", "start_line": 1, "end_line": 2, "match_lines": [1], "snippet": "fn alpha() {}\nfn beta() {}"}
            ], "total_matches": 2})
        );
        assert_eq!(summary, "Found 2 matches for \"ALPHA\"");
        // `file_path`, the design's name, and `path` both name the file.
        for key in ["path", "file_path"] {
            let (read, _) = execute(
                "read_file",
                &json!({key: "src/a.rs", "start_line": 2}),
                &root,
            )
            .unwrap();
            assert_eq!(
                json(read),
                json!({"file_path": "src/a.rs", "start_line": 2, "end_line": 2, "total_lines": 2,
                       "content": "fn beta() {}\n"})
            );
        }
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
        let read = json(read);
        assert_eq!(read["truncated"], "at 5 bytes", "{read}");
        assert_eq!(read["next_start_line"], 1, "{read}");
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
        assert_eq!(
            e.to_string(),
            "keys/config is withheld: it likely holds secrets. Ask the user to add it to context if it is really needed."
        );
    }
}
