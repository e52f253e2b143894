//! The files a turn wrote, as ACP proposals: one `tool_call` per file (kind `edit`,
//! status `pending`, a `diff` from the version the model saw to its output), then
//! `session/request_permission`. Allowed: merged three-way like `apply_file` onto the
//! editor's text (`fs/read_text_file`, then `fs/write_text_file`) when the client
//! offers both, else onto the file on disk (a new file: `fs/write_text_file` when
//! offered); a checkpoint either way. Rejected:
//! `output_delete`, which the model sees in the next request as a review decision.

use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, Diff, PermissionOption, PermissionOptionKind,
    ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest, SessionNotification,
    SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, WriteTextFileRequest,
};
use agent_client_protocol::{Error as RpcError, UntypedMessage};
use tokio::sync::mpsc;

use super::state::{Cx, Sess, notify, rpc};
use crate::cli::{Client, Failure};
use crate::edit::{CallReport, CallStatus};
use crate::error::ErrorCode;
use crate::protocol::action::Action;
use crate::protocol::events::Change;
use crate::protocol::params::{self, NonEmpty};
use crate::protocol::replies::{Ack, Applied, FileContent};

/// The permission options of a proposed change.
const ALLOW: &str = "allow";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject";

/// A text block for a tool call's content.
fn text(s: impl Into<String>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(s.into())))
}

/// Ends tool call `id` with `status` and, when given, a text saying why.
fn finish(sess: &Sess, cx: &Cx, id: &str, status: ToolCallStatus, note: Option<String>) {
    let mut fields = ToolCallUpdateFields::new().status(status);
    if let Some(n) = note {
        fields = fields.content(vec![text(n)]);
    }
    notify(
        cx,
        sess,
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_owned(), fields)),
    );
}

/// Sends the `tool_call` of a proposal with its `status` and a new file's `oldText`
/// written out (`"pending"`, `null`): the schema's types leave a default out, and a
/// client that reads such a field as optional would see none.
fn announce(sess: &Sess, cx: &Cx, call: ToolCall) {
    let n = SessionNotification::new(sess.id.clone(), SessionUpdate::ToolCall(call));
    let Ok(mut v) = serde_json::to_value(&n) else {
        return;
    };
    v["update"]["status"] = serde_json::Value::from("pending");
    if let Some(items) = v["update"]["content"].as_array_mut() {
        for item in items {
            if item["type"] == "diff"
                && let Some(diff) = item.as_object_mut()
            {
                diff.entry("oldText").or_insert(serde_json::Value::Null);
            }
        }
    }
    if let Ok(m) = UntypedMessage::new("session/update", v) {
        let _ = cx.send_notification(m);
    }
}

/// The message of an apply that failed: for a conflict, the lines both sides changed.
fn apply_failure(path: &str, f: Failure, in_editor: bool) -> String {
    let ranges: Vec<String> = f
        .data
        .as_ref()
        .map(|d| {
            d.conflicts
                .iter()
                .map(|r| match r.end_line > r.start_line {
                    true => format!("lines {}-{}", r.start_line, r.end_line),
                    false => format!("line {}", r.start_line),
                })
                .collect()
        })
        .unwrap_or_default();
    if f.code != Some(ErrorCode::Conflict) || ranges.is_empty() {
        return f.message;
    }
    let whose = if in_editor {
        "your edits in the editor"
    } else {
        "your saved edits"
    };
    format!(
        "Not applied: {whose} overlap the model's change to {path} at {}. Nothing was \
         written; the change stays pending in bb7 (reject it, or ask the model again)",
        ranges.join(", ")
    )
}

/// Proposes each change and applies or rejects it as the client decides. Returns
/// whether the client cancelled meanwhile (the prompt then answers `cancelled`; the
/// changes not decided stay pending in bb7).
pub(super) async fn review(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    changes: &[Change],
    cancel: &mut mpsc::UnboundedReceiver<()>,
    cx: &Cx,
) -> Result<bool, RpcError> {
    for change in changes {
        let (path, file_id, seen) = match change {
            Change::Edit { path, file_id, .. } => (path, file_id, true),
            Change::Write { path, file_id, .. } => (path, file_id, false),
        };
        let id = format!("edit-{file_id}");
        let abs = sess.abs(path);
        let old_text = if seen {
            c.call::<FileContent>(Action::GetContextFile(params::GetContextFile {
                path: NonEmpty(path.clone()),
                start_line: None,
                end_line: None,
            }))
            .await
            .ok()
            .map(|f| f.content.into_owned())
        } else {
            None
        };
        let new_text = c
            .call::<FileContent>(Action::GetOutputFile(params::PathOnly::new(path)))
            .await
            .map_err(rpc)?
            .content
            .into_owned();
        let call = ToolCall::new(id.clone(), change.description().to_owned())
            .kind(ToolKind::Edit)
            .status(ToolCallStatus::Pending)
            .content(vec![ToolCallContent::Diff(
                Diff::new(abs.clone(), new_text).old_text(old_text),
            )])
            .locations(vec![ToolCallLocation::new(abs.clone())])
            .raw_input(serde_json::json!({ "path": path }));
        announce(sess, cx, call);
        if cancel.try_recv().is_ok() {
            return Ok(true);
        }
        let decision = if sess.allow_always.load(std::sync::atomic::Ordering::Relaxed) {
            ALLOW.to_owned()
        } else {
            let options = vec![
                PermissionOption::new(ALLOW, "Apply", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    ALLOW_ALWAYS,
                    "Apply all changes in this session",
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ];
            let req = RequestPermissionRequest::new(
                sess.id.clone(),
                ToolCallUpdate::new(
                    id.clone(),
                    ToolCallUpdateFields::new()
                        .title(change.description().to_owned())
                        .kind(ToolKind::Edit)
                        .locations(vec![ToolCallLocation::new(abs.clone())]),
                ),
                options,
            );
            let answer = tokio::select! {
                a = cx.send_request(req).block_task() => Some(a),
                Some(()) = cancel.recv() => None,
            };
            match answer {
                Some(Ok(r)) => match r.outcome {
                    RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
                    _ => return Ok(true),
                },
                Some(Err(e)) => {
                    finish(
                        sess,
                        cx,
                        &id,
                        ToolCallStatus::Failed,
                        Some(format!(
                            "No decision ({}); the change stays pending in bb7",
                            e.message
                        )),
                    );
                    continue;
                }
                None => return Ok(true),
            }
        };
        match decision.as_str() {
            ALLOW | ALLOW_ALWAYS => {
                if decision == ALLOW_ALWAYS {
                    sess.allow_always
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
                match apply(sess, caps, c, path, cx).await {
                    Ok(()) => finish(sess, cx, &id, ToolCallStatus::Completed, None),
                    Err(message) => {
                        finish(sess, cx, &id, ToolCallStatus::Failed, Some(message));
                    }
                }
            }
            _ => {
                let note = match c
                    .call::<Ack>(Action::OutputDelete(params::PathOnly::new(path)))
                    .await
                {
                    Ok(_) => format!("Rejected: nothing was written to {path}"),
                    Err(f) => format!("Rejected; bb7 could not drop the change: {}", f.message),
                };
                finish(sess, cx, &id, ToolCallStatus::Failed, Some(note));
            }
        }
    }
    Ok(false)
}

/// Applies the output of `path`: onto the editor's text when the client reads and
/// writes files, else onto the file on disk; a new file through `fs/write_text_file`
/// when the client writes files, else on disk. The error is the message for the user
/// (a conflict names the lines; nothing is written then).
async fn apply(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    path: &str,
    cx: &Cx,
) -> Result<(), String> {
    let abs = sess.abs(path);
    let through_editor = caps.fs.read_text_file && caps.fs.write_text_file;
    let editor_text = if abs.exists() {
        match through_editor {
            true => cx
                .send_request(ReadTextFileRequest::new(sess.id.clone(), abs.clone()))
                .block_task()
                .await
                .ok()
                .map(|r| r.content),
            false => None,
        }
    } else if caps.fs.write_text_file {
        // A new file: nothing to read or merge; `apply_file` records the checkpoint
        // and the editor writes it.
        Some(String::new())
    } else {
        None
    };
    let in_editor = editor_text.is_some();
    let applied: Applied = c
        .call(Action::ApplyFile(params::ApplyFile {
            path: NonEmpty(path.to_owned()),
            destination: None,
            force: None,
            editor_content: editor_text,
        }))
        .await
        .map_err(|f: Failure| apply_failure(path, f, in_editor))?;
    if in_editor {
        cx.send_request(WriteTextFileRequest::new(
            sess.id.clone(),
            abs,
            applied.content.into_owned(),
        ))
        .block_task()
        .await
        .map_err(|e| {
            format!(
                "The editor refused to write {path} ({}); bb7 recorded the change as \
                 applied, but the file holds what it held",
                e.message
            )
        })?;
    }
    Ok(())
}

/// A `diff_error`: each failed file call as a failed tool call with its message.
pub(super) fn failed(sess: &Sess, cx: &Cx, request: &str, errors: &[String], calls: &[CallReport]) {
    let mut shown = 0;
    for (i, call) in calls.iter().enumerate() {
        if call.status != CallStatus::Failed {
            continue;
        }
        shown += 1;
        let path = call.path.clone().unwrap_or_default();
        let message = call
            .error
            .clone()
            .unwrap_or_else(|| "the edit failed".into());
        let mut tc = ToolCall::new(
            format!("{request}-call-{i}"),
            format!("{} {path}: not applied", call.tool),
        )
        .kind(ToolKind::Edit)
        .status(ToolCallStatus::Failed)
        .content(vec![text(message)]);
        if !path.is_empty() {
            tc = tc.locations(vec![ToolCallLocation::new(sess.abs(&path))]);
        }
        notify(cx, sess, SessionUpdate::ToolCall(tc));
    }
    if shown == 0 && !errors.is_empty() {
        notify(
            cx,
            sess,
            SessionUpdate::ToolCall(
                ToolCall::new(format!("{request}-diff-error"), "The model's edits")
                    .kind(ToolKind::Edit)
                    .status(ToolCallStatus::Failed)
                    .content(vec![text(errors.join("\n"))]),
            ),
        );
    }
}
