//! The slash commands a prompt may be (`/add`, `/drop`, `/undo`, `/tokens`), announced
//! with `available_commands_update` and answered as an agent message.

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::ClientCapabilities;

use super::context::{ContextItem, add_context, locate_uri, read_text};
use super::state::{Cx, Sess, rpc};
use crate::apply::checkpoint::Checkpoint;
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params::{self, NonEmpty};
use crate::protocol::replies::{Ack, Checkpoints, RollbackResult, TokenEstimate};

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
        "undo" => undo(sess, c).await.map(Some),
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
async fn undo(sess: &Sess, c: &mut Client) -> Result<String, RpcError> {
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
