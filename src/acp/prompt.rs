//! `session/prompt`: the prompt's `resource` and `resource_link` blocks become context
//! snapshots (`context_add`, or `context_add_section` for a line range), its text
//! blocks the message (`send`); the turn streams as `session/update` notifications in
//! the order bb7 sends them; `session/cancel` becomes `cancel`, and the prompt answers
//! `cancelled` with the partial answer kept as the stdio protocol keeps it.

use std::path::{Component, Path, PathBuf};

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, ContentChunk, Cost, EmbeddedResourceResource,
    PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionInfoUpdate, SessionUpdate,
    StopReason, TextContent, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, UsageUpdate,
};
use tokio::sync::mpsc;

use super::changes;
use super::state::{Cx, Sess, Shared, invalid, notify, rpc};
use crate::cli::Client;
use crate::error::ErrorCode;
use crate::protocol::action::Action;
use crate::protocol::events::TurnMessage;
use crate::protocol::params::{self, LineNumber, NonEmpty, RequestId};
use crate::protocol::replies::{Ack, ChatView, Checkpoints, RollbackResult, TokenEstimate};

/// One file the prompt brings into the context.
struct ContextItem {
    /// Project-relative path.
    rel: String,
    /// Its text.
    content: String,
    /// A line range (1-based, inclusive) for a section.
    range: Option<(u64, u64)>,
}

/// A text chunk as a content block.
fn text_chunk(s: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(s.into())))
}

/// `session/prompt`.
pub(super) async fn prompt(
    st: &Shared,
    req: PromptRequest,
    cx: &Cx,
) -> Result<PromptResponse, RpcError> {
    let sess = st.session(&req.session_id.0).await?;
    let caps = st.caps();
    let mut c = sess.conn.lock().await;
    let mut cancel = sess.start_prompt();
    let r = run(&sess, &caps, &mut c, req.prompt, &mut cancel, cx).await;
    sess.end_prompt();
    title_update(&sess, &mut c, cx).await;
    r
}

/// A `session_info_update` when the chat's name changed since the client heard it (a
/// title made after an earlier answer, `title_model` in the config).
async fn title_update(sess: &Sess, c: &mut Client, cx: &Cx) {
    let Ok(chat) = c
        .call::<ChatView>(Action::ChatGet(params::NoParams {}))
        .await
    else {
        return;
    };
    let changed = match sess.title.lock() {
        Ok(mut t) if *t != chat.name => {
            *t = chat.name.to_string();
            true
        }
        _ => false,
    };
    if changed {
        notify(
            cx,
            sess,
            SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(chat.name.to_string())),
        );
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
    let mut message = String::new();
    let mut items = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => message.push_str(&t.text),
            ContentBlock::Resource(r) => match r.resource {
                // Text that is no file (an editor's rule, a fetched page, a symbol) is
                // part of the message; a file is context.
                EmbeddedResourceResource::TextResourceContents(t) if !is_file(&t.uri) => {
                    message.push_str(&format!("\n\n{}:\n{}\n", t.uri, t.text));
                }
                EmbeddedResourceResource::TextResourceContents(t) => {
                    let (rel, range) = locate_uri(&sess.root, &t.uri)?;
                    items.push(ContextItem {
                        rel,
                        content: t.text,
                        range,
                    });
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    return Err(invalid(format!(
                        "{}: bb7 takes text files only, not binary resources",
                        b.uri
                    )));
                }
                _ => return Err(invalid("unknown resource kind")),
            },
            ContentBlock::ResourceLink(l) if !is_file(&l.uri) => {
                message.push_str(&format!(" {} ({})", l.name, l.uri));
            }
            ContentBlock::ResourceLink(l) => {
                let (rel, range) = locate_uri(&sess.root, &l.uri)?;
                let content = read_text(sess, caps, &rel, cx).await?;
                items.push(ContextItem {
                    rel,
                    content,
                    range,
                });
            }
            ContentBlock::Image(_) | ContentBlock::Audio(_) => {
                return Err(invalid(
                    "bb7 takes text and files only (promptCapabilities has no image or audio)",
                ));
            }
            _ => return Err(invalid("unknown content block")),
        }
    }
    for item in items {
        add_context(c, item).await?;
    }
    let trimmed = message.trim();
    if let Some(cmd) = trimmed.strip_prefix('/')
        && let Some(reply) = command(sess, caps, c, cmd, cx).await?
    {
        notify(
            cx,
            sess,
            SessionUpdate::AgentMessageChunk(text_chunk(reply)),
        );
        return Ok(PromptResponse::new(StopReason::EndTurn));
    }
    if trimmed.is_empty() {
        // Context only: nothing to ask the model.
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
        }))
        .await
        .map_err(rpc)?;
    let mut cancelled = false;
    let mut steps = 0usize;
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
        match msg {
            TurnMessage::Chunk { content, .. } => {
                notify(
                    cx,
                    sess,
                    SessionUpdate::AgentMessageChunk(text_chunk(content)),
                );
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
                steps += 1;
                let kind = match name.as_str() {
                    "search_project" => ToolKind::Search,
                    "read_file" | "list_files" => ToolKind::Read,
                    _ => ToolKind::Other,
                };
                let title = if summary.is_empty() { name } else { summary };
                notify(
                    cx,
                    sess,
                    SessionUpdate::ToolCall(
                        ToolCall::new(format!("{id}-step-{steps}"), title)
                            .kind(kind)
                            .status(status)
                            .raw_input(arguments),
                    ),
                );
            }
            TurnMessage::ToolApproval {
                approval_id,
                payload,
                ..
            } => {
                let approved =
                    !cancelled && ask_read(sess, cx, &approval_id, payload.description()).await;
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
            TurnMessage::Retry { .. } | TurnMessage::TitleUpdated { .. } => {}
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
            TurnMessage::Done { changes, usage, .. } => {
                usage_update(sess, cx, &usage);
                if cancelled {
                    return Ok(PromptResponse::new(StopReason::Cancelled));
                }
                let stopped = changes::review(sess, caps, c, &changes, cancel, cx).await?;
                let reason = if stopped {
                    StopReason::Cancelled
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
                usage_update(sess, cx, &usage);
                if cancelled {
                    return Ok(PromptResponse::new(StopReason::Cancelled));
                }
                changes::failed(sess, cx, &id, &errors, &tool_calls);
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

/// A `usage_update` with the turn's tokens and cost.
fn usage_update(sess: &Sess, cx: &Cx, usage: &crate::llm::Usage) {
    if usage.total_tokens == 0 && usage.cost == 0.0 {
        return;
    }
    let size = sess.context_length().unwrap_or(0).max(usage.total_tokens);
    notify(
        cx,
        sess,
        SessionUpdate::UsageUpdate(
            UsageUpdate::new(usage.total_tokens, size).cost(Cost::new(usage.cost, "USD")),
        ),
    );
}

/// Asks the client whether the model may read (tools `ask`).
async fn ask_read(sess: &Sess, cx: &Cx, approval_id: &str, description: &str) -> bool {
    let call = ToolCallUpdate::new(
        format!("read-{approval_id}"),
        ToolCallUpdateFields::new()
            .title(description.to_owned())
            .kind(ToolKind::Read)
            .status(ToolCallStatus::Pending),
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

/// Adds `item` to the chat's context; a file already there is snapshotted again.
async fn add_context(c: &mut Client, item: ContextItem) -> Result<(), RpcError> {
    let r = match item.range {
        Some((start, end)) => {
            c.call::<Ack>(Action::ContextAddSection(params::ContextAddSection {
                path: NonEmpty(item.rel.clone()),
                content: item.content,
                start_line: LineNumber(start),
                end_line: LineNumber(end),
            }))
            .await
        }
        None => {
            let r = c
                .call::<Ack>(Action::ContextAdd(params::ContextAdd {
                    path: NonEmpty(item.rel.clone()),
                    content: item.content.clone(),
                    readonly: None,
                }))
                .await;
            match r {
                Err(f) if f.is(ErrorCode::Conflict) => {
                    c.call::<Ack>(Action::ContextUpdate(params::ContextUpdate {
                        path: NonEmpty(item.rel.clone()),
                        content: item.content,
                    }))
                    .await
                }
                r => r,
            }
        }
    };
    match r {
        Ok(_) => Ok(()),
        // The same section again: it is there already.
        Err(f) if f.is(ErrorCode::Conflict) && item.range.is_some() => Ok(()),
        Err(f) => Err(rpc(f)),
    }
}

/// Whether `uri` names a file: a `file:` URI or a plain path.
fn is_file(uri: &str) -> bool {
    uri.starts_with("file:") || !uri.contains("://")
}

/// The project path a resource URI names, with the line range its fragment gives
/// (`#L10:20`, `#L10-20`, `#L10-L20`, `#L10`). A path outside the project is refused.
pub(super) fn locate_uri(root: &Path, uri: &str) -> Result<(String, Option<(u64, u64)>), RpcError> {
    let (path, fragment) = match uri.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (uri, None),
    };
    let path = match path
        .strip_prefix("file://")
        .map(|rest| rest.strip_prefix("localhost").unwrap_or(rest))
        .or_else(|| path.strip_prefix("file:"))
    {
        // `file:///abs`, `file://localhost/abs` or `file:/abs`.
        Some(rest) => percent_decode(rest),
        None if path.contains("://") => {
            return Err(invalid(format!(
                "{uri}: bb7 takes file: URIs of project files only"
            )));
        }
        None => percent_decode(path),
    };
    let p = Path::new(&path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let rel = inside(root, &abs).ok_or_else(|| {
        invalid(format!(
            "{} is outside the project {}: bb7 takes context from the project only",
            abs.display(),
            root.display()
        ))
    })?;
    Ok((rel, fragment.and_then(line_range)))
}

/// `abs` relative to `root` when it lies inside it (resolving `.`, `..` and the
/// symlinks of the part that exists); `None` outside, or for the root itself.
fn inside(root: &Path, abs: &Path) -> Option<String> {
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    // Resolve the longest existing prefix, so a symlink out of the project is outside.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        rest.push(existing.file_name()?.to_owned());
        if !existing.pop() {
            return None;
        }
    }
    let mut resolved = existing.canonicalize().ok()?;
    for name in rest.iter().rev() {
        resolved.push(name);
    }
    let rel = resolved.strip_prefix(root).ok()?;
    let rel = rel.to_str()?;
    (!rel.is_empty()).then(|| rel.to_owned())
}

/// `L10:20`, `L10-20`, `L10-L20`, `L10` as a 1-based inclusive range.
fn line_range(fragment: &str) -> Option<(u64, u64)> {
    let f = fragment.strip_prefix('L')?;
    let (a, b) = match f.split_once([':', '-']) {
        Some((a, b)) => (a, b.trim_start_matches('L')),
        None => (f, f),
    };
    let (a, b) = (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?);
    (a >= 1 && b >= a).then_some((a, b))
}

/// `%XX` escapes decoded (a URI's path); invalid escapes stay as they are.
fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The text of project file `rel`: the editor's (`fs/read_text_file`) when the client
/// offers it, else the file on disk (regular UTF-8 files only).
pub(super) async fn read_text(
    sess: &Sess,
    caps: &ClientCapabilities,
    rel: &str,
    cx: &Cx,
) -> Result<String, RpcError> {
    let abs = sess.abs(rel);
    if caps.fs.read_text_file {
        let r = cx
            .send_request(ReadTextFileRequest::new(sess.id.clone(), abs.clone()))
            .block_task()
            .await;
        if let Ok(r) = r {
            return Ok(r.content);
        }
    }
    let bytes = crate::project::fsutil::read_regular(&abs)
        .map_err(|e| invalid(format!("cannot read {rel}: {e}")))?;
    crate::project::fsutil::text_from_bytes(bytes, rel)
        .map_err(|_| invalid(format!("{rel} is not UTF-8 text")))
}

/// A slash command's answer; `None` when `cmd` is not one (the text goes to the
/// model as it is).
async fn command(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    cmd: &str,
    cx: &Cx,
) -> Result<Option<String>, RpcError> {
    let (name, rest) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
    let args: Vec<&str> = rest.split_whitespace().collect();
    match name {
        "add" | "drop" if args.is_empty() => Ok(Some(format!("/{name} needs file paths"))),
        "add" => {
            let mut done = Vec::new();
            for a in args {
                let (rel, range) = locate_uri(&sess.root, a)?;
                let content = read_text(sess, caps, &rel, cx).await?;
                add_context(
                    c,
                    ContextItem {
                        rel: rel.clone(),
                        content,
                        range,
                    },
                )
                .await?;
                done.push(rel);
            }
            Ok(Some(format!("Added to the context: {}", done.join(", "))))
        }
        "drop" => {
            let mut done = Vec::new();
            for a in args {
                let (rel, _) = locate_uri(&sess.root, a)?;
                c.call::<Ack>(Action::ContextRemove(params::PathOnly::new(&rel)))
                    .await
                    .map_err(rpc)?;
                done.push(rel);
            }
            Ok(Some(format!(
                "Removed from the context: {}",
                done.join(", ")
            )))
        }
        "undo" => {
            let list: Checkpoints = c
                .call(Action::CheckpointList(params::CheckpointList {
                    chat_id: Some(sess.id.clone()),
                }))
                .await
                .map_err(rpc)?;
            let Some(last) = list.checkpoints.last() else {
                return Ok(Some(
                    "Nothing to undo: bb7 applied no change in this chat".into(),
                ));
            };
            let r: RollbackResult = c
                .call(Action::CheckpointRollback(params::CheckpointRollback {
                    checkpoint_id: NonEmpty(last.checkpoint_id.to_string()),
                    mode: "hard_all".into(),
                    force: None,
                    hunk_ids: None,
                }))
                .await
                .map_err(rpc)?;
            let lines: Vec<String> = r
                .files
                .iter()
                .map(|f| match (&f.restored, &f.reason) {
                    (true, _) => format!("restored {}", f.path),
                    (false, Some(why)) => format!("{}: {why}", f.path),
                    (false, None) => format!("{}: not restored", f.path),
                })
                .collect();
            Ok(Some(format!("Rolled back: {}", lines.join("; "))))
        }
        "tokens" => {
            let e: TokenEstimate = c
                .call(Action::EstimateTokens(params::EstimateTokens {
                    input_text: None,
                }))
                .await
                .map_err(rpc)?;
            Ok(Some(format!(
                "The next request sends about {} tokens ({} of context files, {} of history){}",
                e.total,
                e.context_files,
                e.history,
                e.expected_cost
                    .map(|c| format!("; expected cost ${c:.4}"))
                    .unwrap_or_default()
            )))
        }
        _ => Ok(None),
    }
}
