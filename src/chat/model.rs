//! The chat format on disk: `chat.json` version 2, with lazy
//! migration of versions 0 and 1. Unknown fields are kept, so a chat written by a newer
//! bb7 or by the reference is never stripped of data it had.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Current `chat.json` format version.
pub const CHAT_VERSION: u32 = 2;

/// One chat: `{"version":2,"id","name","created","model","reasoning_effort"?,
/// "draft"?,"context_files","messages"}`.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Chat {
    /// Format version; 0 when absent (oldest chats).
    #[serde(default)]
    pub version: u32,
    /// 10 hex characters for chats bb7 creates.
    pub id: String,
    /// Display name; `Chat YYYY-MM-DD HH:MM` (UTC) until a title is generated.
    #[serde(default)]
    pub name: String,
    /// RFC 3339 UTC creation time.
    #[serde(default)]
    pub created: String,
    /// Model for the next turn.
    #[serde(default)]
    pub model: String,
    /// Reasoning effort for the next turn (`low`, `medium`, `high`), if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Unsent input text.
    #[serde(default)]
    pub draft: String,
    /// Retrieval tools: `off` (absent), `ask` or `auto` (docs/PROTOCOL.md extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// How the model sends edits in this chat, when set (`save_chat_settings`); wins
    /// over the config's `edit_format`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_format: Option<crate::config::EditFormat>,
    /// `local`, `remote` or `hybrid_auto`; absent follows the config's `agent_mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_mode: Option<String>,
    /// The chat this one was forked from (`fork_chat`): its id and the index of the
    /// user message the fork was made at. Absent for a chat that is not a fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// Files and sections in context, in the order they were added.
    #[serde(default)]
    pub context_files: Vec<ContextFile>,
    /// The conversation, context events included.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// The context journal `chat.json` names (`chat::journal`): read, never written by
    /// an ordinary save, which folds the journal in.
    #[serde(default, rename = "context_journal", skip_serializing)]
    pub journal: Option<String>,
    /// Fields this version does not know, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Where a forked chat came from (`chat.json` `forked_from`, `chat_get`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ForkedFrom {
    /// The parent chat's id. The parent may have been deleted since.
    pub chat_id: String,
    /// The 0-based index, in the parent's `messages`, of the user message the fork was
    /// made at (the fork holds the messages before it).
    pub message_index: u64,
}

/// One context entry: a full file (no line range) or a section.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ContextFile {
    /// Project-relative path, or absolute for external files.
    pub path: String,
    /// The model may not write it.
    #[serde(default)]
    pub readonly: bool,
    /// Outside the project (always read-only).
    #[serde(default)]
    pub external: bool,
    /// File id of the snapshot: 8 hex of sha256 (see `chat::ids`).
    #[serde(default)]
    pub version: String,
    /// First line of a section (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line of a section (1-based, inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// An attachment's kind (`context_attach`): the entry is client-supplied text, not
    /// a file, and its `path` is `{kind}:{name}`. Absent for files and sections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AttachKind>,
    /// An attachment's details as the client sent them (`command`, `exit_status`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ContextFile {
    /// Whether this entry is a section (a line range) rather than a whole file.
    pub fn is_section(&self) -> bool {
        self.start_line.is_some()
    }

    /// Whether this entry is an attachment (`context_attach`) rather than a file.
    pub fn is_attachment(&self) -> bool {
        self.kind.is_some()
    }

    /// A whole project or external file: neither a section nor an attachment.
    pub fn is_whole_file(&self) -> bool {
        !self.is_section() && !self.is_attachment()
    }
}

/// What an attachment holds (docs/PROTOCOL.md, `context_attach`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachKind {
    /// Diagnostics of an editor or a compiler: one line per diagnostic.
    Diagnostics,
    /// An editor's quickfix list.
    Quickfix,
    /// A `git diff`.
    GitDiff,
    /// What a command printed, with its command line and exit status in `meta`.
    CommandOutput,
    /// The text of a terminal.
    Terminal,
    /// Any other text.
    Text,
    /// An image file (`context_add` of a PNG, JPEG, GIF or WebP file), its bytes as
    /// base64 in the snapshot; not a kind `context_attach` takes.
    Image,
    /// A resource read from an MCP server (`mcp_resource_attach`), with `server`,
    /// `uri` and `mime` in `meta`; not a kind `context_attach` takes.
    McpResource,
}

impl AttachKind {
    /// Every kind, in the order docs/PROTOCOL.md lists them.
    pub const ALL: [AttachKind; 6] = [
        AttachKind::Diagnostics,
        AttachKind::Quickfix,
        AttachKind::GitDiff,
        AttachKind::CommandOutput,
        AttachKind::Terminal,
        AttachKind::Text,
    ];

    /// Reads a kind's name. Errors: any other text, with the names accepted.
    pub fn parse(name: &str) -> Result<AttachKind, String> {
        AttachKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = AttachKind::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "Unknown attachment kind: {name} (expected {})",
                    names.join(", ")
                )
            })
    }

    /// The kind's name on the wire and in an attachment's path.
    pub fn as_str(self) -> &'static str {
        match self {
            AttachKind::Diagnostics => "diagnostics",
            AttachKind::Quickfix => "quickfix",
            AttachKind::GitDiff => "git_diff",
            AttachKind::CommandOutput => "command_output",
            AttachKind::Terminal => "terminal",
            AttachKind::Text => "text",
            AttachKind::Image => "image",
            AttachKind::McpResource => "mcp_resource",
        }
    }
}

/// One message: `user`, `assistant` or `system`.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Message {
    /// `user`, `assistant` or `system`.
    pub role: String,
    /// Model selected when the message was sent or produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The content, as typed parts.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// RFC 3339 UTC time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// On user messages: the context at send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_snapshot: Option<Vec<SnapshotRef>>,
    /// On assistant messages: files the response wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_files: Option<Vec<String>>,
    /// On an assistant message whose edits could not be applied: what failed (the
    /// `diff_error` its stream ended with). The next request's retry context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_error: Option<DiffFailure>,
    /// Fields this version does not know (`usage`, `reasoning_effort`, …), kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{"errors":["…"]}`: why a response's edits were not written, one line per failed
/// call.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct DiffFailure {
    /// One line per failed call, as the `diff_error` listed them.
    #[serde(default)]
    pub errors: Vec<String>,
}

/// A reference to one context entry at send time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SnapshotRef {
    /// Path as in `context_files`.
    pub path: String,
    /// The entry's `version` at send time.
    pub file_id: String,
    /// Section range, if a section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Section range, if a section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// The attachment's kind, if an attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AttachKind>,
}

/// One typed part of a message (the format lists `text`, `thinking`, `code`, `file`,
/// `context_event`, `raw`). Fields that do not apply to a type are absent.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Part {
    /// Part type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Text of `text`, `thinking`, `code`, `raw`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Language of a `code` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Context event action (`UserAddFile`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Path of a `file` or `context_event` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Context event: the file's read-only flag after the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
    /// Context event: the file is external.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<bool>,
    /// Context event: file id after the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Context event: file id before the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_version: Option<String>,
    /// Context event: the file was newly created by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<bool>,
    /// Context event `UserSaveAs`: the output path that was saved elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_path: Option<String>,
    /// Context event on a section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Context event on a section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Part {
    /// A `text` part.
    pub fn text(content: impl Into<String>) -> Part {
        Part {
            kind: "text".into(),
            content: Some(content.into()),
            ..Part::default()
        }
    }

    /// A `thinking` part.
    pub fn thinking(content: impl Into<String>) -> Part {
        Part {
            kind: "thinking".into(),
            content: Some(content.into()),
            ..Part::default()
        }
    }

    /// A `context_event` part for `action` on `path`.
    pub fn event(action: &str, path: &str) -> Part {
        Part {
            kind: "context_event".into(),
            action: Some(action.into()),
            path: Some(path.into()),
            ..Part::default()
        }
    }
}

impl Message {
    /// The concatenated `text` parts: what the user typed or the model answered. A
    /// message without parts (a system note as older bb7 sent it) gives its
    /// top-level `content`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if p.kind == "text"
                && let Some(c) = &p.content
            {
                out.push_str(c);
            }
        }
        if self.parts.is_empty()
            && let Some(Value::String(c)) = self.extra.get("content")
        {
            out.push_str(c);
        }
        out
    }

    /// The message as `chat_get` sends it. A system note (a system message of `text`
    /// parts only) carries its text both as its parts (the reference's data) and as
    /// the top-level `content` (what the reference plugin draws); one stored without
    /// `content` gets it here. Every other message, fork warnings included, goes as
    /// stored.
    pub fn wire_form(&self) -> Cow<'_, Message> {
        if !self.is_system_note() || self.extra.contains_key("content") {
            return Cow::Borrowed(self);
        }
        let mut m = self.clone();
        let text = m.text();
        m.extra.insert("content".into(), Value::String(text));
        Cow::Owned(m)
    }

    /// Whether this is a system note: a system message of `text` parts only (a
    /// cancelled or failed turn, `add_system_message`), not a fork warning.
    pub fn is_system_note(&self) -> bool {
        self.role == "system"
            && !self.parts.is_empty()
            && self.parts.iter().all(|p| p.kind == "text")
    }

    /// Whether the message only carries context events (the reference's form: one
    /// assistant-role message per event).
    pub fn is_context_event(&self) -> bool {
        !self.parts.is_empty() && self.parts.iter().all(|p| p.kind == "context_event")
    }
}

impl Chat {
    /// Checks the paths a `chat.json` read from disk names: `.bb7/` may be planted, so
    /// each entry must pass `project::paths::check_stored`, the rule a context add is
    /// checked with (so bb7 never stores a path it refuses here). Returns the first
    /// path that does not.
    pub fn check_paths(&self) -> Result<(), String> {
        for cf in &self.context_files {
            if cf.is_attachment() {
                // An attachment's path is a label (`{kind}:{name}`), never opened as a
                // file: its snapshot lives under a hash of it.
                if cf.path.is_empty() || cf.path.chars().any(char::is_control) {
                    return Err(format!("its context names the attachment {:?}", cf.path));
                }
                continue;
            }
            if crate::project::paths::check_stored(&cf.path, cf.external).is_err() {
                return Err(format!("its context names the path {:?}", cf.path));
            }
        }
        Ok(())
    }

    /// Brings an older chat to version 2: a legacy top-level `content` on a message
    /// becomes a `text` part. A system message keeps its `content` too: the reference
    /// writes system messages that way (and `chat_get` sends a note so, see
    /// [`Message::wire_form`]). Returns
    /// whether anything changed, so the caller re-saves the chat.
    pub fn migrate(&mut self) -> bool {
        let mut changed = self.version < CHAT_VERSION;
        for m in &mut self.messages {
            if m.role == "system" {
                if m.parts.is_empty()
                    && let Some(Value::String(s)) = m.extra.get("content")
                    && !s.is_empty()
                {
                    m.parts.push(Part::text(s.clone()));
                }
                // The reference writes a note as parts only: it gets its `content`
                // too, kept with the chat's next save.
                if m.is_system_note() && !m.extra.contains_key("content") {
                    let text = m.text();
                    m.extra.insert("content".into(), Value::String(text));
                }
                continue;
            }
            if let Some(content) = m.extra.remove("content") {
                changed = true;
                if m.parts.is_empty() {
                    match content {
                        Value::String(s) if !s.is_empty() => m.parts.push(Part::text(s)),
                        Value::String(_) | Value::Null => {}
                        other => m.parts.push(Part {
                            kind: "raw".into(),
                            content: Some(other.to_string()),
                            ..Part::default()
                        }),
                    }
                }
            }
        }
        self.version = CHAT_VERSION;
        changed
    }

    /// The model recorded on the last user message, if any.
    pub fn last_user_model(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .filter(|m| m.role == "user")
            .find_map(|m| m.model.as_deref())
    }
}

/// A chat as `chat_list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatSummary {
    /// Chat id.
    pub id: String,
    /// Chat name.
    pub name: String,
    /// RFC 3339 creation time.
    pub created: String,
    /// Held by another live process.
    pub locked: bool,
    /// Pinned (listed first).
    pub pinned: bool,
    /// Archived (hidden from `chat_list` unless asked for).
    pub archived: bool,
}
