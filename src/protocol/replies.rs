//! Replies to requests, typed: each serializes to the JSON object docs/PROTOCOL.md gives
//! for its action, tagged by `type`; the server adds the `request_id`. Several
//! replies share the type `ok` (the reference's success) and differ in their fields.
//! Fields borrow from the session's state, so building a reply copies nothing.

use serde::{Deserialize, Serialize};

/// A reply to one request.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply<'a> {
    /// Success without data.
    Ok,
    /// `version`: the crate version.
    Version {
        /// e.g. `0.1.0`.
        version: &'a str,
    },
    /// `init`: the session is open.
    #[serde(rename = "ok")]
    Opened {
        /// No project: only global chats.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        global_only: bool,
        /// The configured default model.
        #[serde(skip_serializing_if = "Option::is_none")]
        default_model: Option<&'a str>,
        /// Why the config file could not be read, if it could not.
        #[serde(skip_serializing_if = "Option::is_none")]
        config_error: Option<&'a str>,
    },
    /// `chat_new`, `chat_new_with_context`: the new chat.
    #[serde(rename = "ok")]
    Created {
        /// Its id.
        id: &'a str,
    },
    /// `chat_edit`: files changed since the edited message.
    #[serde(rename = "ok")]
    Edited {
        /// `{path, issue, original_version}` per file.
        context_warnings: &'a [crate::context::fork::ContextWarning],
    },
    /// `diff_local_done`: how much of the output the local file now holds.
    #[serde(rename = "ok")]
    MergedByHand {
        /// `none`, `full` or `partial`.
        outcome: &'a str,
    },
    /// `apply_file`, `apply_file_as`: what was written.
    #[serde(rename = "ok")]
    Applied {
        /// The file written.
        path: &'a str,
        /// Its content (LF line ends, the disk file's final newline).
        content: &'a str,
        /// The checkpoint of this apply (`null` when nothing changed on disk).
        checkpoint_id: Option<&'a str>,
    },
    /// `chat_get`: the active chat.
    Chat {
        /// Its id.
        id: &'a str,
        /// Its name.
        name: &'a str,
        /// RFC 3339 creation time.
        created: &'a str,
        /// The chat's model.
        model: &'a str,
        /// The chat's reasoning effort, if set.
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_effort: Option<&'a str>,
        /// The unsent input.
        draft: &'a str,
        /// A global chat.
        global: bool,
        /// Retrieval tools: `off`, `ask` or `auto`.
        tools: &'a str,
        /// The history.
        messages: &'a [crate::chat::model::Message],
        /// The context entries.
        context_files: &'a [crate::chat::model::ContextFile],
        /// Where the instruction files are and whether they are usable.
        instructions_info: InstructionsInfo,
    },
    /// `review_get`: files with pending output and their hunks.
    Review {
        /// One entry per file.
        files: &'a [ReviewFile],
    },
    /// `review_apply`: what happened to each hunk.
    ReviewApplied {
        /// The file.
        path: &'a str,
        /// Hunks written to the file.
        applied: &'a [String],
        /// Hunks dropped from the output.
        rejected: &'a [String],
        /// Hunks still pending.
        pending: &'a [String],
        /// Accepted hunks that overlap the user's edits and were not written.
        conflicts: &'a [String],
        /// The checkpoint, when the file changed.
        checkpoint_id: Option<&'a str>,
        /// The file's content now.
        content: &'a str,
    },
    /// `estimate_tokens`: the parts of the next request.
    TokenEstimate {
        /// The sum of the parts.
        total: usize,
        /// Context files.
        context_files: usize,
        /// Earlier messages.
        history: usize,
        /// Instruction files.
        instructions: usize,
        /// The system prompt.
        system_prompt: usize,
        /// The unsent draft.
        input_text: usize,
        /// Per context file.
        files: &'a [FileEstimate],
        /// Always 0: bb7 sends only the pending version of a changed file.
        potential_savings: usize,
    },
    /// `chat_list`.
    ChatList {
        /// One summary per chat.
        chats: &'a [crate::chat::model::ChatSummary],
    },
    /// `chat_active`: the active chat, if any.
    ChatActive {
        /// Its id.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        /// Whether it is a global chat.
        #[serde(skip_serializing_if = "Option::is_none")]
        global: Option<bool>,
    },
    /// `search_chats`.
    SearchResults {
        /// Title matches and content matches with an excerpt.
        results: &'a [crate::chat::store::SearchHit],
    },
    /// `fork_chat`.
    ForkResult {
        /// The new chat (now active).
        new_chat_id: &'a str,
        /// The text of the message forked at, for the input box.
        fork_message_content: &'a str,
        /// Files changed since that message.
        context_warnings: &'a [crate::context::fork::ContextWarning],
    },
    /// `context_list`.
    ContextList {
        /// The chat's context entries.
        files: &'a [crate::chat::model::ContextFile],
    },
    /// `get_context_file`, `get_output_file`.
    FileContent {
        /// The path asked for.
        path: &'a str,
        /// The snapshot or output text.
        content: &'a str,
    },
    /// `get_diff_paths`.
    DiffPaths {
        /// The path asked for.
        path: &'a str,
        /// The output copy, absolute.
        output_path: &'a std::path::Path,
        /// The user's file, absolute.
        local_path: &'a std::path::Path,
    },
    /// `prepare_instructions`.
    InstructionsPath {
        /// The instruction file, absolute (created if it was missing).
        path: &'a std::path::Path,
    },
    /// `get_models`.
    Models {
        /// OpenRouter's model objects, their fields as sent.
        models: &'a [crate::llm::models::ModelInfo],
        /// Served from an expired cache because the API could not be reached.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        stale: bool,
    },
    /// `get_balance`.
    Balance {
        /// Credits bought, USD.
        total_credits: f64,
        /// Credits used, USD.
        total_usage: f64,
    },
    /// `estimate_text_tokens`.
    TextTokenEstimate {
        /// One count per text.
        tokens: &'a [usize],
    },
    /// `checkpoint_list`.
    Checkpoints {
        /// Summaries (files without contents), oldest first.
        checkpoints: &'a [crate::apply::checkpoint::CheckpointSummary<'a>],
    },
    /// `checkpoint_get`: one checkpoint with its files' contents.
    Checkpoint {
        /// The checkpoint's fields, at the top level of the reply.
        #[serde(flatten)]
        checkpoint: &'a crate::apply::checkpoint::Checkpoint,
    },
    /// `checkpoint_diff3`: three versions of one file of a checkpoint.
    Diff3 {
        /// Project-relative path.
        path: &'a str,
        /// Before the checkpoint (`null`: the file did not exist).
        checkpoint_base: Option<&'a str>,
        /// On disk now (`null`: it does not exist).
        current: Option<&'a str>,
        /// What the model proposed (or, for older checkpoints, what was written).
        proposed: Option<&'a str>,
    },
    /// `checkpoint_rollback`.
    RollbackResult {
        /// The checkpoint the rollback itself made (`null` when nothing changed).
        checkpoint_id: Option<&'a str>,
        /// One row per file of the checkpoint.
        files: &'a [RollbackFile],
    },
    /// `get_file_statuses`: one row per context entry and per output file.
    FileStatuses {
        /// The rows (docs/PROTOCOL.md lists the fields).
        files: &'a [crate::output::FileStatus],
    },
}

/// One file of a `rollback_result` reply.
#[derive(Debug, Serialize)]
pub struct RollbackFile {
    /// Project-relative path.
    pub path: String,
    /// Written back to its state before the checkpoint.
    pub restored: bool,
    /// Left alone because it changed since (see `reason`).
    pub conflict: bool,
    /// Why a file was left alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One file of a `review` reply.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReviewFile {
    /// Project-relative path.
    pub path: String,
    /// The status as `get_file_statuses` gives it (`output::status_of`).
    pub status: crate::output::Status,
    /// `sha256:…` of the file on disk, `null` when it does not exist.
    pub disk_hash: Option<String>,
    /// The context version the model saw (`null` for a new file).
    pub base_version: Option<String>,
    /// The output's version.
    pub output_version: String,
    /// `pending`, or `partial` once some hunks are decided.
    pub review_state: ReviewState,
    /// Decided hunks first, then pending ones.
    pub hunks: Vec<crate::review::HunkView>,
}

/// Whether any hunk of a file under review is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    /// No hunk decided yet.
    Pending,
    /// Some hunks accepted or rejected, others pending.
    Partial,
}

/// One file of an `estimate_tokens` reply.
#[derive(Debug, Serialize)]
pub struct FileEstimate {
    /// The context entry's path.
    pub path: String,
    /// Tokens of what is sent for it.
    pub tokens: usize,
    /// Whether it has pending output.
    pub has_output: bool,
    /// Tokens of the snapshot, when output is pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_tokens: Option<usize>,
    /// Tokens of the output, when pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<usize>,
    /// A section's first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// A section's last line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
}

/// `chat_get.instructions_info`: where the instruction files are and whether they can
/// be used. `project_error` is left out when there is none (the reference plugin
/// shows any string, even an empty one, as an error).
#[derive(Debug, Serialize)]
pub struct InstructionsInfo {
    /// `~/.config/bb7/instructions.md`, absolute.
    pub global_path: String,
    /// Whether it exists.
    pub global_exists: bool,
    /// `.bb7/instructions`, absolute (empty for a global chat).
    pub project_path: String,
    /// Whether it exists.
    pub project_exists: bool,
    /// Why the project file cannot be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_error: Option<String>,
}

impl Reply<'_> {
    /// The reply, encoded. Errors: only if a field cannot be encoded, which the types
    /// above rule out; reported as an error reply rather than a panic.
    pub fn json(&self) -> crate::error::Result<super::Encoded> {
        super::Encoded::encode(self)
    }
}
