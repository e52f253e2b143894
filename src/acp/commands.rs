//! The slash commands a prompt may be (`/add`, `/drop`, `/undo`, `/tokens`), announced
//! with `available_commands_update` and answered as an agent message.

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::ClientCapabilities;

use super::context::{ContextItem, add_context, locate_uri, read_text};
use super::state::{Cx, Sess, rpc};
use crate::cli::Client;
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
