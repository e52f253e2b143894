//! `session/prompt`: the prompt's `resource` and `resource_link` blocks become context
//! snapshots (`context_add`, or `context_add_section` for a line range), a `resource`
//! whose MIME type names an attachment kind an attachment (`context_attach`), its text
//! blocks the message (`send`); the turn streams as `session/update` notifications in
//! the order bb7 sends them; `session/cancel` becomes `cancel`, and the prompt answers
//! `cancelled` with the partial answer kept as the stdio protocol keeps it.

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, ContentChunk, Cost, PermissionOption, PermissionOptionKind,
    PromptRequest, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest,
    SessionUpdate, StopReason, TextContent, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use tokio::sync::mpsc;

use super::changes;
use super::commands::command;
use super::context::{add_context, attach};
use super::gather::gather;
use super::images::{self, ImageGuard};
use super::state::{Cx, Sess, Shared, notify, retitle, rpc};
use crate::error::ErrorCode;
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::events::TurnMessage;
use crate::protocol::params::{self, NonEmpty, RequestId};
use crate::protocol::replies::{ChatView, TokenEstimate};

/// A text chunk as a content block.
fn text_chunk(s: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(s.into())))
}

/// The `session/cancel`s the session of `req` has had (0 for an unknown session),
/// read as the prompt arrives.
pub(super) async fn cancels(st: &Shared, req: &PromptRequest) -> u64 {
    st.session(&req.session_id.0)
        .await
        .map_or(0, |s| s.cancels.load(std::sync::atomic::Ordering::SeqCst))
}

/// `session/prompt`; `cancels`: the session's cancels when it arrived ([`cancels`]).
pub(super) async fn prompt(
    st: &Shared,
    req: PromptRequest,
    cancels: u64,
    cx: &Cx,
) -> Result<PromptResponse, RpcError> {
    let sess = st.session(&req.session_id.0).await?;
    let caps = st.caps();
    // A prompt sent while another runs waits for it (queued, in the order sent); a
    // `session/cancel` sent after it cancels it too.
    let mut c = sess.conn.lock().await;
    if sess.cancels.load(std::sync::atomic::Ordering::SeqCst) != cancels {
        return Ok(PromptResponse::new(StopReason::Cancelled));
    }
    let mut cancel = sess.start_prompt();
    let r = run(&sess, &caps, &mut c, req.prompt, &mut cancel, cx).await;
    sess.end_prompt();
    title_update(&sess, &mut c, cx).await;
    r
}

/// A `session_info_update` when the chat's name changed since the client heard it (a
/// title the server made while no title event reached the session).
async fn title_update(sess: &Sess, c: &mut Client, cx: &Cx) {
    if let Ok(chat) = c
        .call::<ChatView>(Action::ChatGet(params::NoParams {}))
        .await
    {
        retitle(cx, sess, &chat.name);
    }
}

async fn run(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    blocks: Vec<ContentBlock>,
    cancel: &mut mpsc::UnboundedReceiver<()>,
    cx: &Cx,
) -> Result<PromptResponse, RpcError> {
    // A cancel ends the prompt even while the client has not answered a read.
    let g = tokio::select! {
        g = gather(sess, caps, c, blocks, cx) => g?,
        Some(()) = cancel.recv() => return Ok(PromptResponse::new(StopReason::Cancelled)),
    };
    let hidden = super::invisible::warnings(&g.items, &g.attachments);
    let mut labels = Vec::new();
    for item in g.items {
        labels.extend(add_context(c, item).await?);
    }
    // The pasted images are read: their scratch files go.
    drop(g.scratch);
    for (kind, name, content) in g.attachments {
        labels.push(format!("{name} ({})", kind.replace('_', " ")));
        attach(c, kind, name, content).await?;
    }
    let mut message = g.message;
    let mut typed = g.typed;
    // `/mcp:SERVER:PROMPT …` typed by the user: the server's rendered prompt stands in
    // for it in the message, and it is no command of bb7's.
    if let Some(t) = typed.as_deref()
        && let Some(text) = super::mcp::render(c, t.trim()).await?
    {
        if let Some(at) = message.rfind(t) {
            message.replace_range(at..at + t.len(), &text);
        } else {
            message = text;
        }
        typed = None;
    }
    if !labels.is_empty() {
        // The answer's first update: what the model will see besides the message.
        notify(
            cx,
            sess,
            SessionUpdate::AgentMessageChunk(text_chunk(format!(
                "Context: {}\n\n",
                labels.join(", ")
            ))),
        );
    }
    // A slash command only from what the user typed, never from a resource or link.
    if let Some(typed) = &typed
        && let Some(cmd) = typed.trim().strip_prefix('/')
        && let Some(reply) = command(sess, caps, c, cmd, cx).await?
    {
        notify(
            cx,
            sess,
            SessionUpdate::AgentMessageChunk(text_chunk(reply)),
        );
        // `/add`, `/drop`, `/undo` change what the next request holds: the gauge follows.
        usage_update(sess, c, cx, &crate::llm::Usage::default()).await;
        return Ok(PromptResponse::new(StopReason::EndTurn));
    }
    if message.trim().is_empty() {
        // Context only: nothing to ask the model; the gauge shows what it added.
        // No send, so no `invisible` notice: what the context hides is said here.
        if !hidden.is_empty() {
            let text = super::invisible::message(&hidden);
            notify(cx, sess, SessionUpdate::AgentMessageChunk(text_chunk(text)));
        }
        usage_update(sess, c, cx, &crate::llm::Usage::default()).await;
        return Ok(PromptResponse::new(StopReason::EndTurn));
    }
    turn(sess, caps, c, message, cancel, cx).await
}

/// Runs one turn and its review; the prompt's answer.
async fn turn(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    message: String,
    cancel: &mut mpsc::UnboundedReceiver<()>,
    cx: &Cx,
) -> Result<PromptResponse, RpcError> {
    let id = c
        .send(&Action::Send(params::Send {
            content: message,
            chat_id: None,
            model: None,
            reasoning_effort: None,
            queue: false,
        }))
        .await
        .map_err(rpc)?;
    let mut cancelled = false;
    // Remote images in the answer become links (images.rs).
    let mut images = ImageGuard::new(images::allowed());
    // The tool call of the read a permission was last asked for.
    let mut asked: Option<String> = None;
    loop {
        let msg = tokio::select! {
            m = c.next_stream(&id) => m.map_err(rpc)?,
            Some(()) = cancel.recv(), if !cancelled => {
                cancelled = true;
                c.send(&Action::Cancel(params::Cancel {
                    target_request_id: RequestId(id.clone()),
                }))
                .await
                .map_err(rpc)?;
                continue;
            }
        };
        if !matches!(msg, TurnMessage::Chunk { .. }) {
            let rest = images.finish();
            if !rest.is_empty() {
                notify(cx, sess, SessionUpdate::AgentMessageChunk(text_chunk(rest)));
            }
        }
        match msg {
            TurnMessage::Chunk { content, .. } => {
                let ready = images.push(&content);
                if !ready.is_empty() {
                    notify(
                        cx,
                        sess,
                        SessionUpdate::AgentMessageChunk(text_chunk(ready)),
                    );
                }
            }
            TurnMessage::Thinking { content, .. } => {
                notify(
                    cx,
                    sess,
                    SessionUpdate::AgentThoughtChunk(text_chunk(content)),
                );
            }
            TurnMessage::ToolCall {
                name,
                arguments,
                status,
                summary,
                ..
            } => {
                let status = match status.as_str() {
                    "completed" => ToolCallStatus::Completed,
                    "denied" => ToolCallStatus::Failed,
                    // `requested` is followed by its approval, `proposed` announces
                    // an edit that the review after the turn shows.
                    _ => continue,
                };
                let kind = match name.as_str() {
                    "search_project" => ToolKind::Search,
                    "read_file" | "list_files" => ToolKind::Read,
                    _ => ToolKind::Other,
                };
                let title = if summary.is_empty() { name } else { summary };
                // The step a permission was asked for ends that tool call.
                let update = match asked.take() {
                    Some(asked) => SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        asked,
                        ToolCallUpdateFields::new()
                            .status(status)
                            .title(title)
                            .raw_input(arguments),
                    )),
                    None => SessionUpdate::ToolCall(
                        ToolCall::new(sess.call_id("step"), title)
                            .kind(kind)
                            .status(status)
                            .raw_input(arguments),
                    ),
                };
                notify(cx, sess, update);
            }
            TurnMessage::ToolApproval {
                approval_id,
                payload,
                ..
            } => {
                let call_id = sess.call_id("read");
                let approved =
                    !cancelled && ask_read(sess, cx, &call_id, payload.description()).await;
                asked = Some(call_id);
                c.send(&Action::ToolApprove(params::ToolApprove {
                    approval_id: NonEmpty(approval_id),
                    approved,
                }))
                .await
                .map_err(rpc)?;
            }
            TurnMessage::Clarification {
                question_id,
                question,
                ..
            } => {
                // ACP v1 has no question to the user inside a turn: the question is
                // shown, and the model is told there is no answer.
                notify(
                    cx,
                    sess,
                    SessionUpdate::AgentMessageChunk(text_chunk(format!(
                        "\n\n(The model asks: {question})\n\n"
                    ))),
                );
                c.send(&Action::Clarify(params::Clarify {
                    question_id: NonEmpty(question_id),
                    answer: "no_user_answer".into(),
                }))
                .await
                .map_err(rpc)?;
            }
            // The wait for a first token is the client's spinner already.
            TurnMessage::Retry { .. }
            | TurnMessage::TitleUpdated { .. }
            | TurnMessage::Waiting { .. } => {}
            TurnMessage::Notice { message, .. } => {
                notify(
                    cx,
                    sess,
                    SessionUpdate::AgentMessageChunk(text_chunk(format!(
                        "\n\n(bb7: {message})\n\n"
                    ))),
                );
            }
            TurnMessage::Attempt {
                provider, reason, ..
            } => {
                notify(
                    cx,
                    sess,
                    SessionUpdate::AgentMessageChunk(text_chunk(format!(
                        "\n\n(bb7: that attempt is dropped ({reason}); answering again on {provider})\n\n"
                    ))),
                );
            }
            TurnMessage::Done {
                changes,
                usage,
                truncated,
                ..
            } => {
                usage_update(sess, c, cx, &usage).await;
                if cancelled {
                    return Ok(PromptResponse::new(StopReason::Cancelled));
                }
                let stopped = changes::review(sess, caps, c, &changes, cancel, cx).await?;
                let reason = if stopped {
                    StopReason::Cancelled
                } else if truncated {
                    // The server cut the answer at its token limit.
                    StopReason::MaxTokens
                } else {
                    StopReason::EndTurn
                };
                return Ok(PromptResponse::new(reason));
            }
            TurnMessage::DiffError {
                errors,
                tool_calls,
                usage,
                ..
            } => {
                usage_update(sess, c, cx, &usage).await;
                if cancelled {
                    return Ok(PromptResponse::new(StopReason::Cancelled));
                }
                changes::failed(sess, cx, &errors, &tool_calls);
                return Ok(PromptResponse::new(StopReason::EndTurn));
            }
            TurnMessage::Error { message, code, .. } => {
                if cancelled || code == ErrorCode::Cancelled {
                    return Ok(PromptResponse::new(StopReason::Cancelled));
                }
                let data = serde_json::to_value(code)
                    .ok()
                    .map(|c| serde_json::json!({ "code": c }));
                return Err(RpcError::new(-32603, message).data(data));
            }
        }
    }
}

/// A `usage_update` (ACP's session usage, schema `UsageUpdate`: "tokens currently in
/// context", "total context window size", "cumulative session cost"): `used` = the
/// tokens the next request will occupy, as bb7's context gauge counts them
/// (`estimate_tokens` after the turn: system text, context files, and the history with
/// this answer in it), never the turn's requests added up; `size` = the gauge's window,
/// else the models list's context length; `cost` = the chat's running total (every
/// answer's recorded cost, this one's included). When the estimate fails, the turn's
/// last figure stands in: its prompt and completion tokens.
async fn usage_update(sess: &Sess, c: &mut Client, cx: &Cx, usage: &crate::llm::Usage) {
    let total = match c
        .call::<ChatView>(Action::ChatGet(params::NoParams {}))
        .await
    {
        Ok(chat) => chat
            .messages
            .iter()
            .filter_map(|m| m.extra.get("usage")?.get("cost")?.as_f64())
            .sum::<f64>()
            .max(usage.cost),
        Err(_) => usage.cost,
    };
    let estimate = c
        .call::<TokenEstimate>(Action::EstimateTokens(params::EstimateTokens {
            input_text: None,
        }))
        .await
        .ok();
    let (used, window) = match &estimate {
        Some(e) => (e.total as u64, e.context_window.filter(|w| *w > 0)),
        None => (usage.total_tokens, None),
    };
    if used == 0 && total == 0.0 {
        return;
    }
    // An unknown window is never guessed: the gauge is then full at what is used.
    let size = window
        .or_else(|| sess.context_length())
        .unwrap_or(0)
        .max(used);
    notify(
        cx,
        sess,
        SessionUpdate::UsageUpdate(UsageUpdate::new(used, size).cost(Cost::new(total, "USD"))),
    );
}

/// Asks the client whether the model may read (tools `ask`).
/// The read is announced as a pending `tool_call` first, so the permission names a
/// tool call the client knows.
async fn ask_read(sess: &Sess, cx: &Cx, call_id: &str, description: &str) -> bool {
    notify(
        cx,
        sess,
        SessionUpdate::ToolCall(
            ToolCall::new(call_id.to_owned(), description.to_owned())
                .kind(ToolKind::Read)
                .status(ToolCallStatus::Pending),
        ),
    );
    let call = ToolCallUpdate::new(
        call_id.to_owned(),
        ToolCallUpdateFields::new()
            .title(description.to_owned())
            .kind(ToolKind::Read),
    );
    let options = vec![
        PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
    ];
    let answer = cx
        .send_request(RequestPermissionRequest::new(
            sess.id.clone(),
            call,
            options,
        ))
        .block_task()
        .await;
    matches!(answer, Ok(r) if matches!(&r.outcome,
        RequestPermissionOutcome::Selected(s) if s.option_id.0.as_ref() == "allow"))
}
