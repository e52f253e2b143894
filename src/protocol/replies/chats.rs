//! Replies about chats: made, listed, read, searched, forked.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::chat::model::{ChatSummary, ContextFile, Message};
use crate::chat::store::SearchHit;
use crate::context::fork::ContextWarning;

reply_types! {
    /// `chat_new`, `chat_new_with_context`: the new chat (now active).
    Created<'a> = "ok" {
        /// Its id.
        pub id: Cow<'a, str>,
    }

    /// `chat_archive`: done; when it archived this process's active chat, the chat
    /// now active in its place (docs/PROTOCOL.md, "Extension: pins and archive").
    #[derive(Default)]
    Archived<'a> = "ok" {
        /// The chat now active, when the archived one was active.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub active_id: Option<Cow<'a, str>>,
        /// The chat now active was made for this: no other chat could be opened.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub active_new: bool,
    }

    /// `chat_select`: done; `state_warnings` says what went wrong reading the chat's
    /// state that the user must hear of (its context journal skipped, or its replay
    /// stopped early: `chat::journal_skips`), each once (docs/PROTOCOL.md).
    #[derive(Default)]
    Selected = "ok" {
        /// The sentences for the user; absent when there is nothing to tell.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub state_warnings: Vec<String>,
    }

    /// `chat_edit`: files changed since the edited message.
    Edited<'a> = "ok" {
        /// `{path, issue, original_version}` per file.
        pub context_warnings: Cow<'a, [ContextWarning]>,
    }

    /// `chat_get`: the active chat.
    ChatView<'a> = "chat" {
        /// Its id.
        pub id: Cow<'a, str>,
        /// Its name.
        pub name: Cow<'a, str>,
        /// RFC 3339 creation time.
        pub created: Cow<'a, str>,
        /// The chat's model.
        pub model: Cow<'a, str>,
        /// The chat's reasoning effort, if set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reasoning_effort: Option<Cow<'a, str>>,
        /// The unsent input.
        pub draft: Cow<'a, str>,
        /// A global chat.
        pub global: bool,
        /// Retrieval tools: `off`, `ask` or `auto`.
        pub tools: Cow<'a, str>,
        /// How the model proposes edits in this chat (`tools`, `blocks`, `auto`), when the
        /// chat sets it; else the config decides.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub edit_format: Option<crate::config::EditFormat>,
        /// The chat's `agent_mode` (`local`, `remote`, `hybrid_auto`), else the config's.
        #[serde(default)]
        pub agent_mode: Cow<'a, str>,
        /// Whether `agent_mode` is the chat's own setting rather than the config's.
        #[serde(default)]
        pub agent_mode_set: bool,
        /// For a fork, the chat it was forked from and the user message it was forked at
        /// (`{"chat_id","message_index"}`); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub forked_from: Option<crate::chat::model::ForkedFrom>,
        /// The history.
        pub messages: Cow<'a, [Message]>,
        /// The context entries.
        pub context_files: Cow<'a, [ContextFile]>,
        /// Where the instruction files are and whether they are usable.
        pub instructions_info: InstructionsInfo,
    }
}

/// `chat_get.instructions_info`: where the instruction files are and whether they can
/// be used. `project_error` is left out when there is none (the reference plugin
/// shows any string, even an empty one, as an error).
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_error: Option<String>,
    /// The project's rules files included as instructions (`AGENTS.md`, …; empty for
    /// a global chat), in the order they are included.
    #[serde(default)]
    pub rules_files: Vec<String>,
    /// Lines of the instructions and rules files bb7 sends that hold invisible
    /// characters (docs/PROTOCOL.md "Extension: invisible characters").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invisible_warnings: Vec<crate::text::invisible::InvisibleWarning>,
}

reply_types! {
    /// `chat_list`.
    ChatListing<'a> = "chat_list" {
        /// One summary per chat.
        pub chats: Cow<'a, [ChatSummary]>,
    }

    /// `chat_active`: the active chat, if any.
    ChatActive<'a> = "chat_active" {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub id: Option<Cow<'a, str>>,
        /// Whether it is a global chat.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub global: Option<bool>,
        /// `true` when it is open read-only (`chat_select` with `read_only`: another
        /// process holds it); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub read_only: Option<bool>,
    }

    /// `search_chats`.
    SearchResults<'a> = "search_results" {
        /// Title matches and content matches with an excerpt.
        pub results: Cow<'a, [SearchHit]>,
    }

    /// `fork_chat`.
    ForkResult<'a> = "fork_result" {
        /// The new chat (now active).
        pub new_chat_id: Cow<'a, str>,
        /// The text of the message forked at, for the input box.
        pub fork_message_content: Cow<'a, str>,
        /// Files changed since that message.
        pub context_warnings: Cow<'a, [ContextWarning]>,
    }
}
