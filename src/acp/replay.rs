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
    for (i, m) in messages.iter().enumerate() {
        match m.role.as_str() {
            "user" => {
                for p in m.parts.iter().filter(|p| p.kind == "text") {
                    if let Some(t) = &p.content {
                        notify(cx, sess, SessionUpdate::UserMessageChunk(chunk(t)));
                    }
                }
            }
            "assistant" => assistant(sess, cx, messages, i, &m.parts),
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
        }
    }
    Ok(())
}

/// One assistant message's parts, in order.
fn assistant(sess: &Sess, cx: &Cx, messages: &[Message], i: usize, parts: &[Part]) {
    for (j, p) in parts.iter().enumerate() {
        match p.kind.as_str() {
            "thinking" => {
                if let Some(t) = &p.content {
                    notify(cx, sess, SessionUpdate::AgentThoughtChunk(chunk(t)));
                }
            }
            "text" => {
                if let Some(t) = &p.content {
                    notify(cx, sess, SessionUpdate::AgentMessageChunk(chunk(t)));
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
            _ => {}
        }
    }
}

/// `session/list`: the chats of the project of `cwd` (the agent's own directory when
/// absent), newest first; a directory without `.bb7/` has none.
pub(super) async fn list_sessions(
    _st: &Shared,
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
    let sessions = list
        .chats
        .iter()
        .map(|s| {
            SessionInfo::new(s.id.clone(), root.clone())
                .title(s.name.clone())
                .updated_at(s.created.clone())
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}
