//! The slash commands a prompt may be (`/add`, `/drop`, `/undo`, `/tokens`, `/export`), announced
//! with `available_commands_update` and answered as an agent message.

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::ClientCapabilities;

use super::changes::{disk_text, write_through_editor};
use super::context::{ContextItem, add_context, keep_final_newline, locate_uri, read_text};
use super::rewrite::written_as;
use super::state::{Cx, Sess, invalid, rpc};
use crate::apply::checkpoint::Checkpoint;
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params::{self, NonEmpty};
use crate::protocol::replies::{Ack, CheckpointView, Checkpoints, RollbackResult, TokenEstimate};

/// A slash command's answer; `None` when `cmd` is not one (the text goes to the
/// model as it is).
pub(super) async fn command(
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
        "undo" => undo(sess, caps, c, cx).await.map(Some),
        "export" => super::export::export(sess, c, &args).await.map(Some),
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

/// `/undo`: rolls back the chat's newest apply that no rollback undid yet
/// (`checkpoint::last_undoable`), so a second `/undo` undoes the apply before it and
/// never re-applies the first. A file changed since the apply is left alone and named;
/// when no file could be restored the answer says nothing was rolled back.
async fn undo(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    cx: &Cx,
) -> Result<String, RpcError> {
    let list: Checkpoints = c
        .call(Action::CheckpointList(params::CheckpointList {
            chat_id: Some(sess.id.clone()),
        }))
        .await
        .map_err(rpc)?;
    let list: Vec<Checkpoint> = list
        .checkpoints
        .iter()
        .map(|s| Checkpoint {
            checkpoint_id: s.checkpoint_id.to_string(),
            chat_id: s.chat_id.to_string(),
            created_at: s.created_at.to_string(),
            action: s.action.to_string(),
            files: Vec::new(),
            turn_id: s.turn_id.as_deref().map(str::to_owned),
            rolls_back: s.rolls_back.as_deref().map(str::to_owned),
        })
        .collect();
    let Some(last) = crate::apply::checkpoint::last_undoable(&list) else {
        return Ok(
            "Nothing to undo: every change bb7 applied in this chat is rolled back (or none was)"
                .into(),
        );
    };
    if caps.fs.read_text_file
        && caps.fs.write_text_file
        && let Some(done) = undo_in_editor(sess, caps, c, &last.checkpoint_id, cx).await?
    {
        return Ok(done);
    }
    let r = c
        .call::<RollbackResult>(Action::CheckpointRollback(params::CheckpointRollback {
            checkpoint_id: NonEmpty(last.checkpoint_id.clone()),
            mode: "hard_all".into(),
            force: None,
            hunk_ids: None,
        }))
        .await;
    let r = match r {
        Ok(r) => r,
        Err(f) => return Ok(format!("Not rolled back: {}", f.message)),
    };
    let restored: Vec<&str> = r
        .files
        .iter()
        .filter(|f| f.restored)
        .map(|f| f.path.as_str())
        .collect();
    let kept: Vec<String> = r
        .files
        .iter()
        .filter(|f| !f.restored)
        .map(|f| match &f.reason {
            Some(why) => format!("{}: {why}", f.path),
            None => format!("{}: not restored", f.path),
        })
        .collect();
    Ok(match (restored.is_empty(), kept.is_empty()) {
        (true, _) => format!("Not rolled back: {}", kept.join("; ")),
        (false, true) => format!("Rolled back: restored {}", restored.join(", ")),
        (false, false) => format!(
            "Rolled back: restored {}; left alone: {}",
            restored.join(", "),
            kept.join("; ")
        ),
    })
}

/// `/undo` through an editor that reads and writes files, whose applies went into its
/// buffers (maybe unsaved, so the disk may still hold the text before): when every
/// file of checkpoint `id` reads in the editor as the apply left it, and on disk
/// either so or as before it (nothing of the user's would be lost), the rollback is
/// recorded on disk (`hard_all`, forced: the disk may hold the text before) and the
/// editor gets each file's text before the apply. "As the apply left it" allows the
/// rewrites the client's own write makes ([`written_as`]): they are no edit of the
/// user's. A file the apply created is removed on disk only (ACP has no call to close
/// a buffer). `None` when that does not hold: the disk rollback decides (and names
/// what changed).
async fn undo_in_editor(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    id: &str,
    cx: &Cx,
) -> Result<Option<String>, RpcError> {
    let cp: CheckpointView = c
        .call(Action::CheckpointGet(params::CheckpointRef {
            checkpoint_id: NonEmpty(id.to_owned()),
        }))
        .await
        .map_err(rpc)?;
    let mut plan = Vec::new();
    for f in &cp.checkpoint.files {
        // A file the apply deleted: the disk rollback handles it.
        let Some(after) = &f.after_content else {
            return Ok(None);
        };
        let abs = sess.abs(&f.path);
        let disk = disk_text(&abs);
        // An answer over the line limit is refused by name, never taken as "no
        // buffer": the disk rollback would then go past the user's unsaved edits.
        let read = super::context::editor_text(sess, cx, &abs).await;
        let Some(editor) = read.map_err(|why| {
            invalid(format!(
                "Not undone: the editor's text of {} could not be read ({why}); nothing \
                 was changed",
                f.path
            ))
        })?
        else {
            return Ok(None);
        };
        let editor = keep_final_newline(editor, disk.as_deref());
        let disk_ok = match (&disk, &f.before_content) {
            (Some(d), before) => written_as(d, after) || before.as_deref() == Some(d.as_str()),
            // Created into a buffer not saved yet.
            (None, None) => true,
            (None, Some(_)) => false,
        };
        if !written_as(&editor, after) || !disk_ok {
            return Ok(None);
        }
        plan.push((abs, f.path.clone(), f.before_content.clone()));
    }
    if plan.is_empty() {
        return Ok(None);
    }
    let r = c
        .call::<RollbackResult>(Action::CheckpointRollback(params::CheckpointRollback {
            checkpoint_id: NonEmpty(id.to_owned()),
            mode: "hard_all".into(),
            force: Some(true),
            hunk_ids: None,
        }))
        .await
        .map_err(rpc)?;
    if r.checkpoint_id.is_none() {
        // Nothing changed on disk (the apply went into unsaved buffers), so no
        // rollback names this apply yet: one is recorded for the buffers, in the chat's
        // checkpoints, so the next `/undo` (in this process or after `session/load` in
        // another) goes on to the apply before it.
        c.call::<RollbackResult>(Action::CheckpointRollback(params::CheckpointRollback {
            checkpoint_id: NonEmpty(id.to_owned()),
            mode: "editor_all".into(),
            force: None,
            hunk_ids: None,
        }))
        .await
        .map_err(rpc)?;
    }
    let mut restored = Vec::new();
    let mut failed = Vec::new();
    for (abs, path, before) in plan {
        let Some(before) = before else {
            // Created by the apply: the forced rollback removed it from the disk.
            restored.push(path);
            continue;
        };
        match write_through_editor(sess, caps, &abs, &path, &before, cx).await {
            Ok(()) => restored.push(path),
            Err(why) => failed.push(why),
        }
    }
    Ok(Some(match (restored.is_empty(), failed.is_empty()) {
        (true, _) => format!("Not rolled back in the editor: {}", failed.join("; ")),
        (false, true) => format!("Rolled back: restored {}", restored.join(", ")),
        (false, false) => format!(
            "Rolled back: restored {}; {}",
            restored.join(", "),
            failed.join("; ")
        ),
    }))
}
