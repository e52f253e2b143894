//! The parameters of each request, one serde type per action (docs/PROTOCOL.md lists
//! them). Unknown fields are ignored; a missing or mistyped field becomes an
//! `invalid_request` error in the reference's words (`Missing required field: path`,
//! `Field 'path' must be a string`) through [`super::Request::params`].
//!
//! `Option` fields are optional; `null` counts as absent.

use serde::{Deserialize, Deserializer, Serialize};

pub use super::fields::{HunkSelection, LineNumber, NonEmpty, RequestId, Uint};

mod mcp;
pub use mcp::*;

/// The parameters of an action that takes none (`ping`, `chat_get`, …); extra fields
/// are ignored.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct NoParams {}

/// `bb7_init` and `init`: the project directory, absolute or relative to bb7's working
/// directory. `init` without it (or with `""`) starts global-only mode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Init {
    /// The project root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_root: Option<String>,
}

/// `prepare_instructions`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrepareInstructions {
    /// `project`, `global` or `system`.
    pub level: String,
}

/// Selects the chat store: `global: true` addresses `~/.bb7/chats/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Scope {
    /// Global chats instead of the project's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global: Option<bool>,
}

impl PathOnly {
    /// The parameters naming `path`.
    pub fn new(path: &str) -> PathOnly {
        PathOnly {
            path: NonEmpty(path.to_owned()),
        }
    }
}

impl Scope {
    /// Whether the request addresses global chats.
    pub fn is_global(&self) -> bool {
        self.global.unwrap_or(false)
    }
}

/// `chat_new`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatNew {
    /// The chat's name; absent gives a dated default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model; absent gives the last used one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
}

/// `chat_list`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChatList {
    /// List archived chats too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_archived: Option<bool>,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
}

/// `chat_select`, `chat_delete`: one chat by id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatRef {
    /// The chat id (10 hex characters).
    pub id: NonEmpty,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
}

/// `chat_force_unlock`: the chat, taken from whichever process holds it (as the
/// reference BB-7 does: the old holder refuses its next save, so nothing is lost), or
/// with `careful` only from a holder that does not answer on its holder socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForceUnlock {
    /// The chat id (10 hex characters).
    pub id: NonEmpty,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
    /// Accepted for older clients; the chat is taken with or without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Ask the holder first: refuse (`locked`, with `data.holder_pid`) when a live
    /// holder answers on its holder socket, whose requests then belong there. bb7's own
    /// front-ends send it before they ask the user whether to take the chat anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub careful: Option<bool>,
}

/// `chat_select`: one chat by id, and how to open it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatSelect {
    /// The chat id (10 hex characters).
    pub id: NonEmpty,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
    /// Open the chat without taking its lock, to read it while another process holds
    /// it: only actions that read are served until another chat is selected
    /// (docs/PROTOCOL.md, "One chat, many front-ends").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// `chat_rename`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatRename {
    /// The chat id.
    pub id: NonEmpty,
    /// The new name (trimmed).
    pub name: NonEmpty,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
}

/// `chat_move`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatMove {
    /// The chat id.
    pub id: NonEmpty,
    /// `global` or `project`.
    pub to: String,
}

/// `chat_pin` (`pinned`) and `chat_archive` (`archived`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatFlag {
    /// The chat id.
    pub id: NonEmpty,
    /// The value of `chat_pin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// The value of `chat_archive`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
}

/// `search_chats`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchChats {
    /// Text to find; empty lists every chat.
    pub query: String,
    /// Which store.
    #[serde(flatten)]
    pub scope: Scope,
}

/// `chat_edit`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatEdit {
    /// The chat.
    pub chat_id: NonEmpty,
    /// 0-based index of the user message to edit.
    pub message_index: Uint,
    /// The new draft.
    pub content: String,
}

/// `fork_chat`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForkChat {
    /// The chat to fork.
    pub chat_id: NonEmpty,
    /// 0-based index of the user message the fork starts before.
    pub fork_message_index: Uint,
}

/// `chat_new_with_context`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatNewWithContext {
    /// The chat whose context is copied.
    pub source_chat_id: NonEmpty,
}

/// `save_draft`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SaveDraft {
    /// The unsent input text.
    pub draft: String,
}

/// `add_system_message`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AddSystemMessage {
    /// The text, stored as a system message.
    pub message: String,
}

/// `save_chat_settings`. Each field is changed only when present.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SaveChatSettings {
    /// The model id; empty means no change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `Some(None)` (null, `""` or `none`) clears the effort.
    #[serde(default, deserialize_with = "present")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<Option<String>>,
    /// Retrieval tools: `off`, `ask` or `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// How the model sends edits in this chat (`tools`, `blocks`, `auto`); wins over
    /// the config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit_format: Option<crate::config::EditFormat>,
    /// `local`, `remote` or `hybrid_auto`; `""` or `default` follows the config again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_mode: Option<String>,
}

/// An object's string values; other values (a `null` reason) are left out rather than
/// failing the request, as the reasons are only notes for the model.
fn text_values<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<std::collections::BTreeMap<String, String>>, D::Error> {
    let map = Option::<serde_json::Map<String, serde_json::Value>>::deserialize(d)?;
    Ok(map.map(|m| {
        m.into_iter()
            .filter_map(|(k, v)| match v {
                serde_json::Value::String(s) => Some((k, s)),
                _ => None,
            })
            .collect()
    }))
}

/// Tells an absent field (`None`, via `default`) from a `null` one (`Some(None)`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Actions that name one file: `context_remove`, `sync_context`, `get_output_file`,
/// `output_delete`, `get_diff_paths`, `diff_local_done`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathOnly {
    /// Project-relative (or, for external context files, absolute) path.
    pub path: NonEmpty,
}

/// `context_add`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextAdd {
    /// The file's path.
    pub path: NonEmpty,
    /// Its content as the editor has it.
    pub content: String,
    /// Keep the model from writing it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
}

/// `context_attach`: a named, read-only text the client supplies (docs/PROTOCOL.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextAttach {
    /// `diagnostics`, `quickfix`, `git_diff`, `command_output`, `terminal` or `text`.
    pub kind: NonEmpty,
    /// The attachment's name (e.g. the command line, or `src/main.rs`).
    pub name: NonEmpty,
    /// Its text.
    pub content: String,
    /// Details shown to the model as attributes (`command`, `exit_status`, …): an
    /// object of strings, numbers and booleans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `context_update`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextUpdate {
    /// The file's path.
    pub path: NonEmpty,
    /// The new content.
    pub content: String,
}

/// `context_add_section`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextAddSection {
    /// The file's path.
    pub path: NonEmpty,
    /// The lines of the section.
    pub content: String,
    /// First line, 1-based.
    pub start_line: LineNumber,
    /// Last line, inclusive.
    pub end_line: LineNumber,
}

/// `context_remove_section`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SectionRef {
    /// The file's path.
    pub path: NonEmpty,
    /// First line, 1-based.
    pub start_line: LineNumber,
    /// Last line, inclusive.
    pub end_line: LineNumber,
}

/// `context_set_readonly`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContextSetReadonly {
    /// The file's path.
    pub path: NonEmpty,
    /// The new flag.
    pub readonly: bool,
}

/// `get_context_file`: a whole file, or one section of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetContextFile {
    /// The file's path.
    pub path: NonEmpty,
    /// The section's first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<Uint>,
    /// The section's last line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<Uint>,
}

/// `get_file_statuses`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileStatuses {
    /// Send file texts (default `true`); `false` sends hashes only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contents: Option<bool>,
}

/// `apply_file` and `apply_file_as`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApplyFile {
    /// The output file to apply.
    pub path: NonEmpty,
    /// `apply_file_as`: where to write it instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<NonEmpty>,
    /// Write even over conflicting edits on disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// `apply_file` only: the editor's current text of the file (an unsaved buffer).
    /// The output is merged onto this text instead of the file on disk, the checkpoint
    /// records it as the content before, and nothing is written: the client writes
    /// the reply's `content` itself (docs/PROTOCOL.md, "bb7 acp").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editor_content: Option<String>,
}

/// `review_get`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReviewGet {
    /// One file; absent reviews every file with pending output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// `review_apply`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReviewApply {
    /// The file.
    pub path: NonEmpty,
    /// Hunks to write to the file.
    #[serde(default)]
    #[serde(skip_serializing_if = "HunkSelection::is_none")]
    pub accept: HunkSelection,
    /// Hunks to drop from the output.
    #[serde(default)]
    #[serde(skip_serializing_if = "HunkSelection::is_none")]
    pub reject: HunkSelection,
    /// The disk hash the review was computed against (`null`: the file did not exist).
    /// Required, even when `null`.
    #[serde(deserialize_with = "present")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_disk_hash: Option<Option<String>>,
    /// Why, per hunk id; kept with the decision for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default, deserialize_with = "text_values")]
    pub reasons: Option<std::collections::BTreeMap<String, String>>,
    /// Hunks to accept even where they overlap the user's edits: the model's version
    /// of those lines replaces the user's (the user confirmed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub take: Option<Vec<String>>,
}

/// `checkpoint_list`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointList {
    /// Only this chat's checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
}

/// `events_get`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventsGet {
    /// The chat whose trace to read (default: the active chat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The cursor: events with a `seq` above it (default 0, from the start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Uint>,
    /// `true` sends every later event of any chat on stdout as an `event` message
    /// (without `request_id`) until `false`; absent leaves it as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow: Option<bool>,
}

/// `checkpoint_get`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointRef {
    /// The checkpoint.
    pub checkpoint_id: NonEmpty,
}

/// `checkpoint_diff3`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointDiff3 {
    /// The checkpoint.
    pub checkpoint_id: NonEmpty,
    /// One of its files.
    pub path: NonEmpty,
}

/// `checkpoint_rollback`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointRollback {
    /// The checkpoint to undo.
    pub checkpoint_id: NonEmpty,
    /// `hard_all` or `scoped_selected`.
    pub mode: String,
    /// `hard_all`: restore over later edits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// `scoped_selected`: the hunks to undo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hunk_ids: Option<Vec<String>>,
}

/// `send`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Send {
    /// The user's message.
    pub content: String,
    /// The chat (default: the active chat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// The model for this turn (default: the chat's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The reasoning effort (`""`/`none` for none; default: the chat's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// While a turn of the same chat runs: queue the message (reply `queued`) and send
    /// it when that answer ends, instead of the `busy` error (docs/PROTOCOL.md,
    /// "Extension: queue while streaming").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub queue: bool,
}

/// `cancel`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cancel {
    /// The `request_id` of the `send` to stop.
    pub target_request_id: RequestId,
}

/// `tool_approve`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolApprove {
    /// From the `tool_approval` message.
    pub approval_id: NonEmpty,
    /// Whether the read may happen.
    pub approved: bool,
}

/// `clarify`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Clarify {
    /// From the `clarification` message.
    pub question_id: NonEmpty,
    /// The user's answer (`no_user_answer` skips).
    pub answer: String,
}

/// `generate_title`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GenerateTitle {
    /// The chat to name.
    pub chat_id: NonEmpty,
    /// The text to name it after.
    pub content: String,
}

/// `get_models`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetModels {
    /// Fetch the list again even when the cache is fresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh: Option<bool>,
    /// Forget every server's refusal of tool calls first (`models_without_tools` in
    /// `~/.bb7/state.json`), so each model's next turn tries tools again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_tools: Option<bool>,
}

/// `estimate_tokens`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EstimateTokens {
    /// The unsent draft.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_text: Option<String>,
}

/// `estimate_text_tokens`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EstimateTextTokens {
    /// The texts to count, one estimate each.
    pub texts: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Request;

    fn parse<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, String> {
        let line = line
            .replacen('{', r#"{"action":"t","#, 1)
            .replace(",}", "}");
        Request::parse(line.as_bytes())
            .map_err(|e| e.error.message)?
            .params::<T>()
            .map_err(|e| e.message)
    }

    #[test]
    fn errors_use_the_reference_words() {
        let e = parse::<ContextAdd>(r#"{"action":"context_add","content":"x"}"#).unwrap_err();
        assert_eq!(e, "Missing required field: path");
        let e = parse::<ContextAdd>(r#"{"action":"context_add","path":null,"content":"x"}"#)
            .unwrap_err();
        assert_eq!(e, "Missing required field: path");
        let e =
            parse::<ContextAdd>(r#"{"action":"context_add","path":3,"content":"x"}"#).unwrap_err();
        assert_eq!(e, "Field 'path' must be a string");
        let e =
            parse::<ContextAdd>(r#"{"action":"context_add","path":"","content":"x"}"#).unwrap_err();
        assert_eq!(e, "Field 'path' must not be empty");
        let e = parse::<SectionRef>(r#"{"path":"a","start_line":0,"end_line":2}"#).unwrap_err();
        assert_eq!(e, "Field 'start_line' must be a line number of at least 1");
        let e = parse::<ReviewApply>(r#"{"path":"a","accept":"all"}"#).unwrap_err();
        assert_eq!(e, "Missing required field: expected_disk_hash");
    }

    #[test]
    fn optional_fields_numbers_and_selections() {
        let p: SectionRef = parse(r#"{"path":"a","start_line":3.0,"end_line":4,"x":1}"#).unwrap();
        assert_eq!((p.start_line.0, p.end_line.0), (3, 4));
        let p: ReviewApply =
            parse(r#"{"path":"a","accept":"all","reject":["h1"],"expected_disk_hash":null}"#)
                .unwrap();
        assert_eq!(p.accept, HunkSelection::All);
        assert_eq!(p.reject, HunkSelection::Ids(vec!["h1".into()]));
        assert_eq!(p.expected_disk_hash, Some(None));
        let p: ReviewApply =
            parse(r#"{"path":"a","expected_disk_hash":"x","reasons":{"h1":"why","h2":null}}"#)
                .unwrap();
        assert_eq!(
            p.reasons.unwrap().into_iter().collect::<Vec<_>>(),
            [("h1".to_owned(), "why".to_owned())]
        );
        let p: Cancel = parse(r#"{"target_request_id":42}"#).unwrap();
        assert_eq!(p.target_request_id.0, "42");
        let p: SaveChatSettings = parse(r#"{"reasoning_effort":null}"#).unwrap();
        assert_eq!(p.reasoning_effort, Some(None));
        let p: SaveChatSettings = parse(r#"{}"#).unwrap();
        assert_eq!(p.reasoning_effort, None);
        let p: ChatList = parse(r#"{"global":true}"#).unwrap();
        assert!(p.scope.is_global());
    }
}
