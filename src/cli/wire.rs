//! The replies and stream messages as the command line reads them: views with only the
//! fields a command prints, all defaulted so a newer server's additions do no harm. The
//! requests it sends are the server's own [`crate::protocol::action::Action`].

use serde::Deserialize;
use serde_json::Value;

/// A reply whose fields the command does not need (`ok`).
#[derive(Debug, Deserialize)]
pub struct Ack {}

/// Reply to `init`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct InitReply {
    /// The project has no `.bb7/`.
    pub global_only: bool,
    /// Why `config.json` could not be read, when it could not.
    pub config_error: Option<String>,
}

/// Reply carrying a chat id (`chat_new`, `chat_active`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct IdReply {
    /// The chat id; absent from `chat_active` when no chat is active.
    pub id: Option<String>,
}

/// Reply to `chat_list`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChatList {
    /// Chats, newest first.
    pub chats: Vec<ChatEntry>,
}

/// One row of `chat_list`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChatEntry {
    /// Chat id.
    pub id: String,
    /// Chat name.
    pub name: String,
    /// Creation time (RFC 3339).
    pub created: String,
    /// Held by another process.
    pub locked: bool,
}

/// Reply to `context_list`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ContextList {
    /// Files and sections in context.
    pub files: Vec<ContextEntry>,
}

/// One context file or section.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ContextEntry {
    /// Path relative to the root (absolute when external).
    pub path: String,
    /// First line of a section.
    pub start_line: Option<u64>,
    /// Last line of a section.
    pub end_line: Option<u64>,
}

/// Reply to `get_file_statuses`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FileStatuses {
    /// One row per context or output file.
    pub files: Vec<crate::output::FileStatus>,
}

/// Reply to `review_get`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Review {
    /// Files with pending output.
    pub files: Vec<crate::protocol::replies::ReviewFile>,
}

/// Reply to `review_apply`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ReviewApplied {
    /// Hunks written.
    pub applied: Vec<String>,
    /// Hunks discarded.
    pub rejected: Vec<String>,
    /// Hunks that touch the user's edits and stay pending.
    pub conflicts: Vec<String>,
    /// The checkpoint of the write, `None` when nothing was written.
    pub checkpoint_id: Option<String>,
}

/// Reply to `apply_file`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Applied {
    /// The checkpoint of the write.
    pub checkpoint_id: Option<String>,
}

/// Reply to `checkpoint_list`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Checkpoints {
    /// Oldest first.
    pub checkpoints: Vec<Checkpoint>,
}

/// One checkpoint.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Checkpoint {
    /// `cp_<millis>_<hex>`.
    pub checkpoint_id: String,
    /// RFC 3339 time.
    pub created_at: String,
    /// What made it (`apply_file`, `review_apply`, `rollback`, …).
    pub action: String,
    /// The files it wrote.
    pub files: Vec<PathOnly>,
}

/// An object of which only `path` is used.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PathOnly {
    /// Path.
    pub path: String,
}

/// Reply to `checkpoint_rollback`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RollbackResult {
    /// The rollback's own checkpoint, `None` when nothing changed.
    pub checkpoint_id: Option<String>,
    /// One row per file of the checkpoint.
    pub files: Vec<RollbackFile>,
}

/// One file of a rollback.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct RollbackFile {
    /// Path.
    pub path: String,
    /// Written back.
    pub restored: bool,
    /// Left alone because it changed since.
    pub conflict: bool,
    /// Why, for a conflict.
    pub reason: Option<String>,
}

/// Reply to `get_models`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Models {
    /// The models.
    pub models: Vec<Model>,
    /// Served from an old cache because the API could not be reached.
    pub stale: bool,
}

/// One model.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Model {
    /// Model id (`vendor/name`).
    pub id: String,
    /// Context window in tokens.
    pub context_length: Option<u64>,
    /// USD per token.
    pub pricing: Pricing,
}

/// Prices in USD per token, as OpenRouter sends them: decimal strings (`"0.000003"`);
/// numbers are accepted too.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Pricing {
    /// Per prompt token.
    #[serde(deserialize_with = "price")]
    pub prompt: Option<f64>,
    /// Per completion token.
    #[serde(deserialize_with = "price")]
    pub completion: Option<f64>,
}

fn price<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_f64(),
        _ => None,
    })
}

/// Reply to `chat_get`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChatReply {
    /// Chat id.
    pub id: String,
    /// Chat name.
    pub name: String,
    /// Model id.
    pub model: String,
    /// The history.
    pub messages: Vec<crate::chat::model::Message>,
}
