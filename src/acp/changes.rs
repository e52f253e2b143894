//! The files a turn wrote, as ACP proposals: one `tool_call` per file (kind `edit`,
//! status `pending`, a `diff` from the version the model saw to its output), then
//! `session/request_permission`. Allowed: merged three-way like `apply_file` onto the
//! editor's text (`fs/read_text_file`, then `fs/write_text_file`) when the client
//! offers both, else onto the file on disk (a new file: `fs/write_text_file` when
//! offered); a checkpoint either way. Rejected:
//! `output_delete`, which the model sees in the next request as a review decision.

use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, Diff, PermissionOption, PermissionOptionKind,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind, WriteTextFileRequest,
};
use agent_client_protocol::{Error as RpcError, UntypedMessage};
use tokio::sync::mpsc;

use super::context::keep_final_newline;
use super::state::{Cx, Sess, notify, rpc};
use crate::edit::{CallReport, CallStatus};
use crate::error::ErrorCode;
use crate::front::{Client, Failure};
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
         written and the change is dropped; ask the model again",
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
    for (i, change) in changes.iter().enumerate() {
        let (path, file_id, seen) = match change {
            Change::Edit { path, file_id, .. } => (path, file_id, true),
            Change::Write { path, file_id, .. } => (path, file_id, false),
        };
        let _ = file_id;
        let id = sess.call_id("edit");
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
            // A new file over one that exists: the proposal shows what it replaces.
            match current_text(sess, caps, &abs, path, cx).await {
                Ok(t) => t,
                Err(why) => {
                    refuse_proposal(sess, cx, &id, change, &abs, why);
                    continue;
                }
            }
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
                Diff::new(abs.clone(), new_text).old_text(old_text.clone()),
            )])
            .locations(vec![ToolCallLocation::new(abs.clone())])
            .raw_input(serde_json::json!({ "path": path }));
        announce(sess, cx, call);
        if cancel.try_recv().is_ok() {
            drop_undecided(c, &changes[i..]).await;
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
                    _ => {
                        drop_undecided(c, &changes[i..]).await;
                        return Ok(true);
                    }
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
                None => {
                    drop_undecided(c, &changes[i..]).await;
                    return Ok(true);
                }
            }
        };
        match decision.as_str() {
            ALLOW | ALLOW_ALWAYS => {
                if decision == ALLOW_ALWAYS {
                    sess.allow_always
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
                let shown = (!seen).then_some(old_text.as_deref()).flatten();
                match apply(sess, caps, c, path, shown, cx).await {
                    Ok(()) => finish(sess, cx, &id, ToolCallStatus::Completed, None),
                    Err(message) => {
                        // Not written: the change leaves bb7's review, so it does not
                        // ride into the next proposal for this file.
                        let _ = c
                            .call::<Ack>(Action::OutputDelete(params::PathOnly::new(path)))
                            .await;
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

/// The text of existing file `abs` as the user has it: the editor's (with the final
/// newline the disk has, see [`keep_final_newline`]) when it reads files, else the
/// disk's; `None` when there is no such file or it is not text.
/// Errors: the editor's text is over the line limit (the message names `path`).
async fn current_text(
    sess: &Sess,
    caps: &ClientCapabilities,
    abs: &std::path::Path,
    path: &str,
    cx: &Cx,
) -> Result<Option<String>, String> {
    if !abs.is_file() {
        return Ok(None);
    }
    let disk = disk_text(abs);
    if caps.fs.read_text_file
        && let Some(t) = super::fallback::proposal_text(sess, cx, abs, path).await?
    {
        return Ok(Some(keep_final_newline(t, disk.as_deref())));
    }
    Ok(disk)
}

/// The file on disk as UTF-8 text, if it is.
pub(super) fn disk_text(abs: &std::path::Path) -> Option<String> {
    std::fs::read(abs)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

/// `text` (LF, as `apply_file` answers) with the line endings of the file on disk: CRLF
/// when the disk file has CRLF line endings.
fn with_disk_endings(text: String, disk: Option<&str>) -> String {
    match disk {
        Some(d) if d.contains("\r\n") && !text.contains('\r') => text.replace('\n', "\r\n"),
        _ => text,
    }
}

/// Writes `text` to `abs` through the editor (`fs/write_text_file`) and reads it back
/// when the client reads files: a client whose write appends a line break
/// (codecompanion.nvim splits the text on `\n` and writes each piece as a line) gets
/// the text without its last one, so the file holds exactly `text` and the
/// checkpoint, made from `text`, matches what was written (the next `/undo` finds
/// the file as the apply left it).
pub(super) async fn write_through_editor(
    sess: &Sess,
    caps: &ClientCapabilities,
    abs: &std::path::Path,
    path: &str,
    text: &str,
    cx: &Cx,
) -> Result<(), String> {
    let write = async |t: &str| {
        let call = cx
            .send_request(WriteTextFileRequest::new(
                sess.id.clone(),
                abs.to_path_buf(),
                t.to_owned(),
            ))
            .block_task();
        // A client that never answers must not hold the session.
        let answer = tokio::time::timeout(super::context::EDITOR_READ_TIMEOUT, call)
            .await
            .map_err(|_| "no answer".to_owned())
            .and_then(|r| r.map_err(|e| e.message));
        answer.map(|_| ()).map_err(|why| {
            format!(
                "The editor did not write {path} ({why}); bb7 recorded the change as \
                 applied, but the file may hold what it held"
            )
        })
    };
    let before = disk_text(abs);
    write(text).await?;
    // A Neovim buffer in `fileformat=dos` (codecompanion.nvim writes into the open
    // buffer and saves it) takes CRLF text as lines ending in `\r` and saves each with
    // a CR of its own: give it LF text and let the buffer add the CRs.
    let lf;
    let text = if doubled_crs(text, before.as_deref(), disk_text(abs).as_deref()) {
        lf = text.replace("\r\n", "\n");
        write(&lf).await?;
        lf.as_str()
    } else {
        text
    };
    if !caps.fs.read_text_file {
        return Ok(());
    }
    let Some(back) = super::fallback::read_back(sess, cx, abs, path).await else {
        return Ok(());
    };
    // Compared without regard to line endings: a client may read CRLF as LF.
    let (back, want) = (back.replace("\r\n", "\n"), text.replace("\r\n", "\n"));
    if back != want
        && let Some(shorter) = text.strip_suffix('\n')
        && back.strip_suffix('\n') == Some(want.as_str())
    {
        write(shorter).await?;
    }
    Ok(())
}

/// Whether writing CRLF `text` left the file on disk with `\r\r\n` line ends it did
/// not have `before`: the editor kept the text's CRs in its lines and added its own.
fn doubled_crs(text: &str, before: Option<&str>, after: Option<&str>) -> bool {
    text.contains("\r\n")
        && !before.is_some_and(|b| b.contains("\r\r\n"))
        && after.is_some_and(|a| a.contains("\r\r\n"))
}

/// Applies the output of `path`: onto the editor's text when the client reads and
/// writes files, else onto the file on disk; a new file through `fs/write_text_file`
/// when the client writes files, else on disk. `shown` is, for a write over an
/// existing file the model did not see, the text the proposal showed it replacing:
/// the apply then writes the output over exactly that text, and refuses when the
/// file changed since. The error is the message for the user (a conflict names the
/// lines; nothing is written then).
async fn apply(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    path: &str,
    shown: Option<&str>,
    cx: &Cx,
) -> Result<(), String> {
    let abs = sess.abs(path);
    let through_editor = caps.fs.read_text_file && caps.fs.write_text_file;
    let disk = disk_text(&abs);
    let editor_text = if abs.exists() {
        match through_editor {
            // A buffer too large to come over the wire is refused by name: the
            // disk's text in its place would drop the user's unsaved edits.
            true => super::context::editor_text(sess, cx, &abs)
                .await
                .map_err(|why| {
                    format!(
                        "Not applied: the editor's text of {path} could not be read \
                         ({why}); nothing was written"
                    )
                })?
                .map(|t| keep_final_newline(t, disk.as_deref())),
            false => None,
        }
    } else if caps.fs.write_text_file {
        // A new file: nothing to read or merge; `apply_file` records the checkpoint
        // and the editor writes it.
        Some(String::new())
    } else {
        None
    };
    if let Some(shown) = shown {
        let now = editor_text.as_deref().or(disk.as_deref());
        if now != Some(shown) {
            return Err(format!(
                "Not applied: {path} changed since the proposal showed it. Nothing was \
                 written and the change is dropped; ask the model again"
            ));
        }
    }
    let in_editor = editor_text.is_some();
    let applied: Applied = c
        .call(Action::ApplyFile(params::ApplyFile {
            path: NonEmpty(path.to_owned()),
            destination: None,
            // The user allowed replacing exactly the text the proposal showed.
            force: shown.map(|_| true),
            editor_content: editor_text,
        }))
        .await
        .map_err(|f: Failure| apply_failure(path, f, in_editor))?;
    if in_editor {
        let text = with_disk_endings(applied.content.into_owned(), disk.as_deref());
        write_through_editor(sess, caps, &abs, path, &text, cx).await?;
    }
    Ok(())
}

/// Shows the proposal of `change` as failed with `why` (its old text could not be
/// had): nothing is asked, and the change stays pending in bb7.
fn refuse_proposal(
    sess: &Sess,
    cx: &Cx,
    id: &str,
    change: &Change,
    abs: &std::path::Path,
    why: String,
) {
    let call = ToolCall::new(id.to_owned(), change.description().to_owned())
        .kind(ToolKind::Edit)
        .locations(vec![ToolCallLocation::new(abs.to_path_buf())]);
    announce(sess, cx, call);
    finish(sess, cx, id, ToolCallStatus::Failed, Some(why));
}

/// Drops the changes a cancel left undecided from bb7's review, so none of them rides
/// into the next proposal of its file.
async fn drop_undecided(c: &mut Client, changes: &[Change]) {
    for change in changes {
        let path = match change {
            Change::Edit { path, .. } | Change::Write { path, .. } => path,
        };
        let _ = c
            .call::<Ack>(Action::OutputDelete(params::PathOnly::new(path)))
            .await;
    }
}

/// A `diff_error`: each failed file call as a failed tool call with its message.
pub(super) fn failed(sess: &Sess, cx: &Cx, errors: &[String], calls: &[CallReport]) {
    let mut shown = 0;
    for call in calls {
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
            sess.call_id("call"),
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
                ToolCall::new(sess.call_id("diff-error"), "The model's edits")
                    .kind(ToolKind::Edit)
                    .status(ToolCallStatus::Failed)
                    .content(vec![text(errors.join("\n"))]),
            ),
        );
    }
}
