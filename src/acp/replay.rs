//! `session/load`'s replay of a chat and `session/list`.
//!
//! The replay sends the chat's messages as `user_message_chunk`,
//! `agent_thought_chunk` and `agent_message_chunk` updates, its retrieval steps as
//! completed tool calls, and every file an answer wrote as an `edit` tool call with
//! its final status: `completed` once applied, `failed` once rejected or when the
//! edits could not be applied, `pending` while the change waits in bb7.

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ListSessionsRequest, ListSessionsResponse, SessionInfo,
    SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolKind,
};

use super::state::{Cx, Sess, Shared, invalid, notify, rpc};
use crate::chat::model::{Message, Part};
use crate::error::ErrorCode;
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::{ChatListing, ChatView, Opened};

/// The `messageId` of the chat's message `i` in a replay.
fn msg_id(sess: &Sess, i: usize) -> String {
    format!("{}-m{i}", sess.id)
}

fn chunk(s: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(s.to_owned())))
}

/// The final status of the write of `path` by message `at`: what later messages
/// record about it.
fn write_status(messages: &[Message], at: usize, path: &str) -> ToolCallStatus {
    let mut status = ToolCallStatus::Pending;
    for m in &messages[at + 1..] {
        for p in &m.parts {
            if p.kind != "context_event" || p.path.as_deref() != Some(path) {
                continue;
            }
            match p.action.as_deref() {
                Some("UserApplyFile" | "UserAcceptHunk" | "UserSaveAs") => {
                    status = ToolCallStatus::Completed
                }
                Some("UserRejectOutput" | "UserRejectHunk") => status = ToolCallStatus::Failed,
                // The model wrote the file again: that later write is its own call.
                Some("AssistantWriteFile") => return status,
                _ => {}
            }
        }
    }
    status
}

/// Sends chat `sess`'s history as session updates.
pub(super) async fn replay(sess: &Sess, cx: &Cx) -> Result<(), RpcError> {
    let chat: ChatView = sess
        .conn
        .lock()
        .await
        .call(Action::ChatGet(params::NoParams {}))
        .await
        .map_err(rpc)?;
    let messages: &[Message] = &chat.messages;
    // A client joins consecutive chunks of one kind into one message: a user message
    // that follows another with nothing between (an answer that failed or was
    // cancelled before any text) starts with a blank line, so the two stay apart.
    let mut after_user = false;
    for (i, m) in messages.iter().enumerate() {
        match m.role.as_str() {
            "user" => {
                let text: Vec<&str> = m
                    .parts
                    .iter()
                    .filter(|p| p.kind == "text")
                    .filter_map(|p| p.content.as_deref())
                    .collect();
                if !text.is_empty() {
                    let mut t = text.join("\n\n");
                    if after_user {
                        t.insert_str(0, "\n\n");
                    }
                    notify(
                        cx,
                        sess,
                        SessionUpdate::UserMessageChunk(
                            chunk(&t).message_id(msg_id(sess, i).as_str()),
                        ),
                    );
                    after_user = true;
                }
            }
            "assistant" if assistant(sess, cx, messages, i, &m.parts) => after_user = false,
            _ => {}
        }
        if let Some(d) = &m.diff_error {
            notify(
                cx,
                sess,
                SessionUpdate::ToolCall(
                    ToolCall::new(format!("h{i}-diff-error"), "The model's edits")
                        .kind(ToolKind::Edit)
                        .status(ToolCallStatus::Failed)
                        .content(vec![ToolCallContent::from(ContentBlock::Text(
                            TextContent::new(d.errors.join("\n")),
                        ))]),
                ),
            );
            after_user = false;
        }
    }
    Ok(())
}

/// One assistant message's parts, in order; whether any update was sent.
fn assistant(sess: &Sess, cx: &Cx, messages: &[Message], i: usize, parts: &[Part]) -> bool {
    let allow_images = super::images::allowed();
    let mut sent = false;
    for (j, p) in parts.iter().enumerate() {
        let before = sent;
        sent = true;
        match p.kind.as_str() {
            "thinking" => {
                if let Some(t) = &p.content {
                    notify(
                        cx,
                        sess,
                        SessionUpdate::AgentThoughtChunk(
                            chunk(t).message_id(msg_id(sess, i).as_str()),
                        ),
                    );
                }
            }
            "text" => {
                if let Some(t) = &p.content {
                    let t = match allow_images {
                        true => t.clone(),
                        false => super::images::rewrite(t, true).0,
                    };
                    notify(
                        cx,
                        sess,
                        SessionUpdate::AgentMessageChunk(
                            chunk(&t).message_id(msg_id(sess, i).as_str()),
                        ),
                    );
                }
            }
            "tool_call" => {
                let name = p
                    .extra
                    .get("name")
                    .and_then(|v| v.as_str())
                    .unwrap_or("tool");
                let title = p.content.clone().unwrap_or_else(|| name.to_owned());
                let status = match p.extra.get("status").and_then(|v| v.as_str()) {
                    Some("denied") => ToolCallStatus::Failed,
                    _ => ToolCallStatus::Completed,
                };
                let kind = if name == "search_project" {
                    ToolKind::Search
                } else {
                    ToolKind::Read
                };
                notify(
                    cx,
                    sess,
                    SessionUpdate::ToolCall(
                        ToolCall::new(format!("h{i}-{j}"), title)
                            .kind(kind)
                            .status(status),
                    ),
                );
            }
            "context_event" if p.action.as_deref() == Some("AssistantWriteFile") => {
                let Some(path) = &p.path else { continue };
                let verb = if p.added == Some(true) {
                    "Write"
                } else {
                    "Edit"
                };
                notify(
                    cx,
                    sess,
                    SessionUpdate::ToolCall(
                        ToolCall::new(format!("h{i}-{j}"), format!("{verb} {path}"))
                            .kind(ToolKind::Edit)
                            .status(write_status(messages, i, path))
                            .locations(vec![ToolCallLocation::new(sess.abs(path))]),
                    ),
                );
            }
            _ => sent = before,
        }
    }
    sent
}

/// How many of the newest chats `session/list` reads for their last activity and
/// whether they are empty.
const LOADED_IN_LIST: usize = 300;

/// `session/list`: the chats of the project of `cwd` (the agent's own directory when
/// absent) that hold a message, or are open in this process, most recently active
/// first (`updatedAt`: the last message's time, else the chat's creation); a directory
/// without `.bb7/` has none. A chat opened and left empty (an editor makes one for
/// every chat window it opens) is not listed.
pub(super) async fn list_sessions(
    st: &Shared,
    req: ListSessionsRequest,
) -> Result<ListSessionsResponse, RpcError> {
    let cwd = match req.cwd {
        Some(c) => c,
        None => std::env::current_dir().map_err(|e| RpcError::new(-32603, e.to_string()))?,
    };
    if !cwd.is_absolute() || !cwd.is_dir() {
        return Err(invalid(format!(
            "cwd must be an absolute directory: {}",
            cwd.display()
        )));
    }
    let root = crate::front::root::discover(&cwd);
    let root = root.canonicalize().unwrap_or(root);
    let mut c = Client::start();
    match c
        .call::<Opened>(Action::Init(params::Init {
            project_root: Some(root.to_string_lossy().into_owned()),
        }))
        .await
    {
        Ok(_) => {}
        Err(f) if f.is(ErrorCode::NotInitialized) => {
            return Ok(ListSessionsResponse::new(Vec::new()));
        }
        Err(f) => return Err(rpc(f)),
    }
    let list: ChatListing = c
        .call(Action::ChatList(params::ChatList::default()))
        .await
        .map_err(rpc)?;
    let open: Vec<String> = st.sessions.lock().await.keys().cloned().collect();
    let store = crate::chat::store::ChatStore::new(
        crate::project::Project { root: root.clone() }.state_dir(),
        false,
    );
    let mut rows: Vec<(String, SessionInfo)> = Vec::new();
    for (n, s) in list.chats.iter().enumerate() {
        // Past the newest few hundred, a chat is listed as `chat_list` gives it: one
        // load per chat would make a long list slow.
        let loaded = if n < LOADED_IN_LIST {
            store.load(&s.id)
        } else {
            Err(crate::error::Error::invalid("not loaded"))
        };
        let (empty, updated) = match loaded {
            Ok(chat) => {
                let last = chat.messages.iter().rev().find_map(|m| m.timestamp.clone());
                (
                    chat.messages.is_empty(),
                    last.unwrap_or_else(|| s.created.clone()),
                )
            }
            // Unreadable here: listed as the server lists it.
            Err(_) => (false, s.created.clone()),
        };
        if empty && !open.contains(&s.id) {
            continue;
        }
        let info = SessionInfo::new(s.id.clone(), root.clone())
            .title(s.name.clone())
            .updated_at(updated.clone());
        rows.push((updated, info));
    }
    // RFC 3339 UTC times sort as text.
    rows.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(ListSessionsResponse::new(
        rows.into_iter().map(|(_, i)| i).collect(),
    ))
}
