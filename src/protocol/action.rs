//! [`Action`]: a request line as one typed value, the action with its parameters. The
//! server dispatches on it and the command line builds and sends it, so both speak the
//! same types; `tests/protocol_doc.rs` checks docs/PROTOCOL.md names the same actions.
//!
//! Reading goes through [`Action::from_request`], not serde's tagged-enum reader, so that
//! a bad field is answered in the reference's words (`Missing required field: path`);
//! writing is plain serde: `{"action":"context_add","path":…}`.

use serde::Serialize;

use super::Request;
use super::params::*;
use crate::error::{Error, Result};

/// The action table: one row per action with its variant, parameters type, wire name,
/// reply type and the handler method of `server::session::Session` that answers it
/// (`(call)` after the handler: it also gets the request's `Call`, for work that
/// answers later). `callback` is a macro invoked with the rows: [`Action`] is declared
/// from them here, and the server's dispatch in `server/session/table.rs`.
///
/// Adding an action: a row here, its params type (`params.rs`), its reply type if new
/// (`replies/`), the handler, and its row in docs/PROTOCOL.md.
macro_rules! action_table {
    ($callback:ident) => {
        $callback! {
        /// Answer `ok` (liveness).
        Ping(NoParams) = "ping" -> Ack => ping,
        /// The crate version.
        Version(NoParams) = "version" -> Version => version,
        /// Answer `ok`, then exit 0.
        Shutdown(NoParams) = "shutdown" -> Ack => shutdown,
        /// On a holder socket: be sent the served chat's turns and changes.
        Watch(NoParams) = "watch" -> Ack => watch,
        /// Create `.bb7/` in a project and open it.
        Bb7Init(Init) = "bb7_init" -> Ack => bb7_init,
        /// Open a project (or global-only mode) and restore its active chat.
        Init(Init) = "init" -> Opened => init,
        /// Where the instruction files are and whether they load.
        GetCustomizationInfo(NoParams) = "get_customization_info" -> CustomizationInfo => customization_info,
        /// Create an instruction file from its template.
        PrepareInstructions(PrepareInstructions) = "prepare_instructions" -> InstructionsPath => prepare_instructions,
        /// Start a chat; it becomes active.
        ChatNew(ChatNew) = "chat_new" -> Created => chat_new,
        /// The chats of a store.
        ChatList(ChatList) = "chat_list" -> ChatListing => chat_list,
        /// Make a chat active (takes its lock).
        ChatSelect(ChatSelect) = "chat_select" -> Selected => chat_select,
        /// The active chat with its messages.
        ChatGet(NoParams) = "chat_get" -> ChatView => chat_get,
        /// The active chat's id.
        ChatActive(NoParams) = "chat_active" -> ChatActive => chat_active,
        /// Rename a chat.
        ChatRename(ChatRename) = "chat_rename" -> Ack => chat_rename,
        /// Delete a chat.
        ChatDelete(ChatRef) = "chat_delete" -> Ack => chat_delete,
        /// Move a chat between the project and the global store.
        ChatMove(ChatMove) = "chat_move" -> Ack => chat_move,
        /// Take over a chat another process holds.
        ChatForceUnlock(ForceUnlock) = "chat_force_unlock" -> NowOrLater<Ack> => chat_force_unlock(call),
        /// Chats whose names or messages contain a text.
        SearchChats(SearchChats) = "search_chats" -> SearchResults => search_chats,
        /// Edit a user message: the chat goes back to before it.
        ChatEdit(ChatEdit) = "chat_edit" -> Edited => chat_edit,
        /// A new chat with the history before a user message.
        ForkChat(ForkChat) = "fork_chat" -> ForkResult => fork_chat,
        /// A new chat with another chat's context.
        ChatNewWithContext(ChatNewWithContext) = "chat_new_with_context" -> Created => chat_new_with_context,
        /// Pin or unpin a chat.
        ChatPin(ChatFlag) = "chat_pin" -> Ack => chat_pin,
        /// Archive or unarchive a chat.
        ChatArchive(ChatFlag) = "chat_archive" -> Archived => chat_archive,
        /// Keep the unsent input.
        SaveDraft(SaveDraft) = "save_draft" -> Ack => save_draft,
        /// Change the active chat's model, reasoning effort or tools mode.
        SaveChatSettings(SaveChatSettings) = "save_chat_settings" -> Ack => save_chat_settings,
        /// Add a system message to the history.
        AddSystemMessage(AddSystemMessage) = "add_system_message" -> Ack => add_system_message,
        /// Add a file snapshot to the context.
        ContextAdd(ContextAdd) = "context_add" -> Added => context_add,
        /// Add a read-only section snapshot.
        ContextAddSection(ContextAddSection) = "context_add_section" -> Added => context_add_section,
        /// Add a named, read-only text (diagnostics, a command's output, …).
        ContextAttach(ContextAttach) = "context_attach" -> Attached => context_attach,
        /// Replace a file's snapshot.
        ContextUpdate(ContextUpdate) = "context_update" -> Added => context_update,
        /// Re-snapshot a file from disk.
        SyncContext(PathOnly) = "sync_context" -> Ack => sync_context,
        /// Drop a file from the context.
        ContextRemove(PathOnly) = "context_remove" -> Ack => context_remove,
        /// Drop a section from the context.
        ContextRemoveSection(SectionRef) = "context_remove_section" -> Ack => context_remove_section,
        /// Make a context file read-only for the model, or writable.
        ContextSetReadonly(ContextSetReadonly) = "context_set_readonly" -> Ack => context_set_readonly,
        /// The context files and sections.
        ContextList(NoParams) = "context_list" -> ContextList => context_list,
        /// A snapshot's content.
        GetContextFile(GetContextFile) = "get_context_file" -> FileContent => get_context_file,
        /// The model's output of a file.
        GetOutputFile(PathOnly) = "get_output_file" -> FileContent => get_output_file,
        /// Discard the model's output of a file.
        OutputDelete(PathOnly) = "output_delete" -> Ack => output_delete,
        /// Files for an external diff of an output.
        GetDiffPaths(PathOnly) = "get_diff_paths" -> DiffPaths => get_diff_paths,
        /// An external diff ended; take over the merged file.
        DiffLocalDone(PathOnly) = "diff_local_done" -> MergedByHand => diff_local_done,
        /// Statuses of the context and output files.
        GetFileStatuses(FileStatuses) = "get_file_statuses" -> FileStatusList => get_file_statuses,
        /// Write the model's output into the file on disk.
        ApplyFile(ApplyFile) = "apply_file" -> Applied => apply_file,
        /// Write the model's output into another file.
        ApplyFileAs(ApplyFile) = "apply_file_as" -> Applied => apply_file_as,
        /// The pending hunks.
        ReviewGet(ReviewGet) = "review_get" -> Review => review_get,
        /// Accept and reject hunks of one file.
        ReviewApply(ReviewApply) = "review_apply" -> ReviewApplied => review_apply,
        /// The project's checkpoints.
        CheckpointList(CheckpointList) = "checkpoint_list" -> Checkpoints => checkpoint_list,
        /// One checkpoint with its files.
        CheckpointGet(CheckpointRef) = "checkpoint_get" -> CheckpointView => checkpoint_get,
        /// Base, ours and theirs of one file of a checkpoint.
        CheckpointDiff3(CheckpointDiff3) = "checkpoint_diff3" -> Diff3 => checkpoint_diff3,
        /// Undo a checkpoint.
        CheckpointRollback(CheckpointRollback) = "checkpoint_rollback" -> RollbackResult => checkpoint_rollback,
        /// A chat's event trace after a cursor; optionally follow it on the stream.
        EventsGet(EventsGet) = "events_get" -> EventsPage => events_get,
        /// Stop a running `send`.
        Cancel(Cancel) = "cancel" -> Ack => cancel,
        /// Answer a `tool_approval`.
        ToolApprove(ToolApprove) = "tool_approve" -> Ack => tool_approve,
        /// Answer a `clarification`.
        Clarify(Clarify) = "clarify" -> Ack => clarify,
        /// Ask the model; the answer streams.
        Send(Send) = "send" -> Deferred => send(call),
        /// Name a chat after a text, with the model.
        GenerateTitle(GenerateTitle) = "generate_title" -> Ack => generate_title(call),
        /// The model list.
        GetModels(GetModels) = "get_models" -> NowOrLater<Models> => get_models(call),
        /// The account's credit.
        GetBalance(NoParams) = "get_balance" -> Deferred => get_balance(call),
        /// Tokens of the next request, by part (`TokenEstimate`, sent when computed).
        EstimateTokens(EstimateTokens) = "estimate_tokens" -> Deferred => estimate_tokens(call),
        /// Tokens of each of some texts.
        EstimateTextTokens(EstimateTextTokens) = "estimate_text_tokens" -> TextTokenEstimate => estimate_text_tokens,
        /// Start the next request's context block anew from the current file versions.
        ChatCompact(NoParams) = "chat_compact" -> Ack => chat_compact,
        /// The configured MCP servers (resources and prompts only).
        McpServersList(NoParams) = "mcp_servers_list" -> McpServers => mcp_servers_list,
        /// Allow (or stop allowing) the project's own MCP servers to start.
        McpConsent(McpConsent) = "mcp_consent" -> Ack => mcp_consent,
        /// MCP servers the editor supplies for this session.
        McpServersAdd(McpServersAdd) = "mcp_servers_add" -> Ack => mcp_servers_add,
        /// A server's resources and resource templates (`McpResources`, sent when read).
        McpResourcesList(McpServerRef) = "mcp_resources_list" -> Deferred => mcp_resources_list(call),
        /// Read a resource and attach it (`McpAttached`, sent when read).
        McpResourceAttach(McpResourceAttach) = "mcp_resource_attach" -> Deferred => mcp_resource_attach(call),
        /// The servers' prompts (`McpPrompts`, sent when read).
        McpPromptsList(McpPromptsList) = "mcp_prompts_list" -> Deferred => mcp_prompts_list(call),
        /// Render a prompt; its embedded resources are attached (`McpPrompt`).
        McpPromptGet(McpPromptGet) = "mcp_prompt_get" -> Deferred => mcp_prompt_get(call),
        }
    };
}
pub(crate) use action_table;

/// Declares [`Action`], its wire names and its reader from the action table.
macro_rules! declare_actions {
    ($( $(#[$doc:meta])* $variant:ident($params:ty) = $name:literal -> $reply:ty => $handler:ident $(($call:ident))?, )*) => {
        /// One request: the action and its typed parameters (docs/PROTOCOL.md lists them
        /// with their fields). Serializes to the request object, `action` included.
        #[derive(Debug, Clone, Serialize)]
        #[serde(tag = "action")]
        pub enum Action {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant($params),
            )*
        }

        /// Every action name bb7 serves, in the order of docs/PROTOCOL.md's list.
        pub const ACTION_NAMES: &[&str] = &[$($name),*];

        impl Action {
            /// Reads the parameters of `req`'s action. Errors (`invalid_request`):
            /// `Unknown action: x`, and the field errors of [`Request::params`].
            pub fn from_request(req: &Request) -> Result<Action> {
                Ok(match req.action.as_str() {
                    $( $name => Action::$variant(req.params::<$params>()?), )*
                    other => return Err(Error::invalid(format!("Unknown action: {other}"))),
                })
            }

            /// The wire name, e.g. `context_add`.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Action::$variant(_) => $name, )*
                }
            }
        }
    };
}

action_table!(declare_actions);

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Result<Action> {
        Action::from_request(&Request::parse(line.as_bytes()).map_err(|e| e.error)?)
    }

    #[test]
    fn a_written_action_reads_back_the_same() {
        let sent = Action::ContextAddSection(ContextAddSection {
            path: NonEmpty("src/a.rs".into()),
            content: "x\n".into(),
            start_line: LineNumber(3),
            end_line: LineNumber(4),
        });
        let line = serde_json::to_string(&sent).unwrap();
        assert!(line.starts_with(r#"{"action":"context_add_section","path":"src/a.rs""#));
        let Action::ContextAddSection(p) = read(&line).unwrap() else {
            panic!("wrong action: {line}");
        };
        assert_eq!((p.start_line.0, p.end_line.0), (3, 4));
        let line = serde_json::to_string(&Action::ChatGet(NoParams {})).unwrap();
        assert_eq!(line, r#"{"action":"chat_get"}"#);
        assert_eq!(read(&line).unwrap().name(), "chat_get");
    }

    #[test]
    fn absent_options_are_left_out_and_null_clears() {
        let settings = |effort| {
            serde_json::to_string(&Action::SaveChatSettings(SaveChatSettings {
                model: None,
                reasoning_effort: effort,
                tools: Some("auto".into()),
                edit_format: None,
                agent_mode: None,
            }))
            .unwrap()
        };
        assert_eq!(
            settings(None),
            r#"{"action":"save_chat_settings","tools":"auto"}"#
        );
        assert_eq!(
            settings(Some(None)),
            r#"{"action":"save_chat_settings","reasoning_effort":null,"tools":"auto"}"#
        );
        let apply = Action::ReviewApply(ReviewApply {
            path: NonEmpty("a".into()),
            accept: HunkSelection::All,
            reject: HunkSelection::None,
            expected_disk_hash: Some(None),
            reasons: None,
            take: None,
        });
        assert_eq!(
            serde_json::to_string(&apply).unwrap(),
            r#"{"action":"review_apply","path":"a","accept":"all","expected_disk_hash":null}"#
        );
    }

    #[test]
    fn unknown_actions_and_bad_fields_keep_the_reference_words() {
        let e = read(r#"{"action":"fly"}"#).unwrap_err();
        assert_eq!(e.message, "Unknown action: fly");
        let e = read(r#"{"action":"context_remove"}"#).unwrap_err();
        assert_eq!(e.message, "Missing required field: path");
        let mut names = ACTION_NAMES.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            ACTION_NAMES.len(),
            "an action name is listed twice"
        );
    }
}
