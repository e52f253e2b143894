//! Hunk review and checkpoints from a shell: `review`, `checkpoints`, `rollback`.

use super::terminal;
use super::{Failure, Res, Session};
use crate::protocol::action::Action;
use crate::protocol::params::{self, HunkSelection, NonEmpty};
use crate::protocol::replies::{Checkpoints, Review, ReviewApplied, RollbackResult};
use crate::review::HunkState;

/// `bb7 review [PATH] [--accept ID…] [--reject ID…] [--all]`: without a decision,
/// lists the pending hunks with their ids; with one, applies it file by file.
pub(super) async fn review(
    s: &mut Session,
    path: Option<String>,
    accept: Vec<String>,
    reject: Vec<String>,
    all: bool,
) -> Res<()> {
    s.active().await?;
    let path = path.map(|p| s.path(&p));
    let r: Review =
        s.c.call(Action::ReviewGet(params::ReviewGet { path: path.clone() }))
            .await?;
    // Decided hunks stay in the review with their state; only pending ones are listed.
    let files: Vec<_> = r
        .files
        .into_owned()
        .into_iter()
        .map(|mut f| {
            f.hunks.retain(|h| h.state == HunkState::Pending);
            f
        })
        .filter(|f| !f.hunks.is_empty())
        .collect();
    if files.is_empty() {
        eprintln!("bb7: no pending changes to review");
        return if accept.is_empty() && reject.is_empty() && !all {
            Ok(())
        } else {
            Err(Failure::new("nothing to accept or reject"))
        };
    }
    if accept.is_empty() && reject.is_empty() && !all {
        let mut text = String::new();
        for f in &files {
            text.push_str(&format!("{} {}\n", f.status, f.path));
            for h in &f.hunks {
                let clash = if h.applies_cleanly {
                    ""
                } else {
                    "  (overlaps your edits)"
                };
                text.push_str(&format!(
                    "  {} {} +{} -{}{clash}\n",
                    h.hunk_id, h.header, h.added, h.removed
                ));
                for line in h.patch.lines() {
                    text.push_str(&format!("    {line}\n"));
                }
            }
        }
        s.out(&text);
        eprintln!(
            "bb7: accept with `bb7 review --accept ID…`, reject with `--reject ID…`, all with `--all`"
        );
        return Ok(());
    }
    let known = |id: &String| {
        files
            .iter()
            .any(|f| f.hunks.iter().any(|h| &h.hunk_id == id))
    };
    if let Some(bad) = accept.iter().chain(&reject).find(|id| !known(id)) {
        return Err(Failure::new(format!(
            "no pending hunk {bad} (see `bb7 review`)"
        )));
    }
    let mut conflicts = Vec::new();
    for f in &files {
        let has = |ids: &[String]| -> Vec<String> {
            ids.iter()
                .filter(|id| f.hunks.iter().any(|h| &h.hunk_id == *id))
                .cloned()
                .collect()
        };
        let (acc, rej) = (has(&accept), has(&reject));
        if !all && acc.is_empty() && rej.is_empty() {
            continue;
        }
        let req = Action::ReviewApply(params::ReviewApply {
            path: NonEmpty(f.path.clone()),
            accept: if all {
                HunkSelection::All
            } else {
                HunkSelection::Ids(acc)
            },
            reject: HunkSelection::Ids(rej),
            expected_disk_hash: Some(f.disk_hash.clone()),
            reasons: None,
        });
        let r: ReviewApplied = s.c.call(req).await?;
        let cp = r
            .checkpoint_id
            .map(|c| format!(" (checkpoint {c})"))
            .unwrap_or_default();
        if !r.applied.is_empty() {
            eprintln!(
                "bb7: {}: accepted {}{cp}",
                terminal::err(&f.path),
                r.applied.join(" ")
            );
        }
        if !r.rejected.is_empty() {
            eprintln!(
                "bb7: {}: rejected {}",
                terminal::err(&f.path),
                r.rejected.join(" ")
            );
        }
        for c in r.conflicts.iter() {
            eprintln!(
                "bb7: {}: hunk {c} overlaps your edits and stays pending",
                f.path
            );
            conflicts.push(c.clone());
        }
    }
    if conflicts.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "conflict: {} hunk(s) overlap your edits: {}",
            conflicts.len(),
            conflicts.join(" ")
        )))
    }
}

/// `bb7 checkpoints`: `ID  TIME  FILES…  (ACTION)`, oldest first.
pub(super) async fn checkpoints(s: &mut Session) -> Res<()> {
    let r: Checkpoints =
        s.c.call(Action::CheckpointList(params::CheckpointList {
            chat_id: None,
        }))
        .await?;
    if r.checkpoints.is_empty() {
        eprintln!("bb7: no checkpoints yet (every apply and rollback makes one)");
        return Ok(());
    }
    let mut text = String::new();
    for cp in &r.checkpoints {
        let files: Vec<&str> = cp.files.iter().map(|f| f.path.as_ref()).collect();
        text.push_str(&format!(
            "{}  {}  {}  ({})\n",
            cp.checkpoint_id,
            cp.created_at,
            files.join(" "),
            cp.action
        ));
    }
    s.out(&text);
    Ok(())
}

/// `bb7 rollback ID [--scoped HUNK…] [--force]`.
pub(super) async fn rollback(
    s: &mut Session,
    id: String,
    scoped: Vec<String>,
    force: bool,
) -> Res<()> {
    let mode = if scoped.is_empty() {
        "hard_all"
    } else {
        "scoped_selected"
    };
    let r: RollbackResult =
        s.c.call(Action::CheckpointRollback(params::CheckpointRollback {
            checkpoint_id: NonEmpty(id),
            mode: mode.into(),
            hunk_ids: (!scoped.is_empty()).then_some(scoped),
            force: force.then_some(true),
        }))
        .await?;
    let mut conflicts = Vec::new();
    for f in r.files.iter() {
        if f.restored {
            eprintln!("bb7: restored {}", terminal::err(&f.path));
        } else if f.conflict {
            let why = f.reason.as_deref().unwrap_or("it changed since");
            eprintln!("bb7: {}: not restored: {why}", terminal::err(&f.path));
            conflicts.push(f.path.clone());
        }
    }
    if let Some(cp) = &r.checkpoint_id {
        eprintln!("bb7: rollback checkpoint {cp}");
    }
    if !conflicts.is_empty() {
        return Err(Failure::new(format!(
            "conflict: {} changed since the checkpoint (use --force to restore anyway)",
            conflicts.join(", ")
        )));
    }
    if r.checkpoint_id.is_none() {
        eprintln!("bb7: nothing to roll back");
    }
    Ok(())
}
