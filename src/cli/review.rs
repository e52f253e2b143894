//! Hunk review and checkpoints from a shell: `review`, `checkpoints`, `rollback`.

use super::render::{self, Table};
use super::session::Session;
use super::terminal;
use crate::apply::checkpoint::Checkpoint;
use crate::front::client::{Failure, Res, exit};
use crate::protocol::action::Action;
use crate::protocol::params::{self, HunkSelection, NonEmpty};
use crate::protocol::replies::{
    CheckpointView, Checkpoints, Review, ReviewApplied, RollbackResult,
};
use crate::review::HunkState;

/// The decisions of a `bb7 review` or `/review`.
#[derive(Debug, Default)]
pub(super) struct Decisions {
    /// Hunks to merge into the files.
    pub accept: Vec<String>,
    /// Hunks to discard.
    pub reject: Vec<String>,
    /// Every pending hunk.
    pub all: bool,
    /// Hunks to take over the user's overlapping edits.
    pub take: Vec<String>,
    /// Ask on the terminal before taking (`/review take`).
    pub confirm_take: bool,
}

impl Decisions {
    fn none(&self) -> bool {
        self.accept.is_empty() && self.reject.is_empty() && self.take.is_empty() && !self.all
    }
}

/// `bb7 review [PATH] [--accept ID…] [--reject ID…] [--all] [--take ID…]`: without a
/// decision, lists the pending hunks with their ids; with one, applies it file by file.
pub(super) async fn review(s: &mut Session, path: Option<String>, d: Decisions) -> Res<()> {
    let Decisions {
        accept,
        reject,
        all,
        take,
        confirm_take,
    } = &d;
    let all = *all;
    s.active().await?;
    let path = path.map(|p| s.path(&p));
    let r: Review =
        s.c.call(Action::ReviewGet(params::ReviewGet { path: path.clone() }))
            .await?;
    for f in &*r.files {
        let Some(why) = &f.output_error else { continue };
        let path = terminal::err(&f.path);
        let why = terminal::err(why);
        if f.output_version.is_none() {
            eprintln!(
                "bb7: the model's output of {path} cannot be read ({why}); discard it with \
                 `bb7 reject {path}`"
            );
        } else {
            eprintln!("bb7: {path} cannot be reviewed: {why}");
        }
    }
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
        return if d.none() {
            Ok(())
        } else {
            Err(Failure::new("nothing to accept or reject"))
        };
    }
    if d.none() {
        // Data is made safe before it is styled, then printed as rendered.
        let safe = |t: &str| terminal::safe(t, terminal::Sink::Stdout).into_owned();
        let mut text = String::new();
        for f in &files {
            text.push_str(&format!("{} {}\n", f.status, safe(&f.path)));
            for h in &f.hunks {
                let clash = if h.applies_cleanly {
                    ""
                } else {
                    "  (overlaps your edits)"
                };
                let hidden = if h.invisible.is_empty() {
                    String::new()
                } else {
                    format!("  (adds invisible characters: {})", h.invisible.join(" "))
                };
                text.push_str(&format!(
                    "  {} {} +{} -{}{clash}{hidden}\n",
                    h.hunk_id, h.header, h.added, h.removed
                ));
                for line in h.patch.lines() {
                    // Hidden characters are written as `<U+202E>`.
                    let line = crate::text::invisible::visible(line);
                    text.push_str(&format!("    {}\n", render::diff(&safe(&line))));
                }
            }
        }
        s.out_rendered(&text);
        if s.in_chat {
            eprintln!(
                "bb7: decide with `/review accept ID…`, `/review reject ID…` or `/review all`; \
                 a hunk that overlaps your edits with `/review take ID`"
            );
        } else {
            eprintln!(
                "bb7: accept with `bb7 review --accept ID…`, reject with `--reject ID…`, all \
                 with `--all`; a hunk that overlaps your edits with `--take ID`"
            );
        }
        return Ok(());
    }
    let known = |id: &String| {
        files
            .iter()
            .any(|f| f.hunks.iter().any(|h| &h.hunk_id == id))
    };
    if let Some(bad) = accept
        .iter()
        .chain(reject)
        .chain(take)
        .find(|id| !known(id))
    {
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
        let (acc, rej, tak) = (has(accept), has(reject), has(take));
        if !all && acc.is_empty() && rej.is_empty() && tak.is_empty() {
            continue;
        }
        if *confirm_take {
            for id in &tak {
                let header = f
                    .hunks
                    .iter()
                    .find(|h| &h.hunk_id == id)
                    .map(|h| h.header.clone())
                    .unwrap_or_default();
                let question = format!(
                    "bb7: take the model's version of hunk {id} ({header}) in {}, replacing \
                     your edits on those lines? [y/N] ",
                    terminal::err(&f.path)
                );
                if !super::prompt::confirm(question).await {
                    return Err(Failure::new(format!("hunk {id} not taken")));
                }
            }
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
            take: (!tak.is_empty()).then_some(tak),
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
            conflicts.push(format!(
                "conflict: {}: hunk {c} overlaps your edits and stays pending (`{} {c}` \
                 replaces your edits there with it)",
                terminal::err(&f.path),
                s.cmd("bb7 review --take", "/review take")
            ));
        }
    }
    if conflicts.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(conflicts.join("\nbb7: ")).with_status(exit::CONFLICT))
    }
}

/// `bb7 checkpoints`: `ID  TIME  FILES…  (ACTION)  HUNKS…`, oldest first; the hunk
/// ids are what `bb7 rollback ID --scoped HUNK…` takes.
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
    let mut table = Table::new(["ID", "TIME", "FILES", "ACTION", "HUNKS"]);
    for cp in &r.checkpoints {
        let files: Vec<&str> = cp.files.iter().map(|f| f.path.as_ref()).collect();
        let hunks: Vec<&str> = cp
            .files
            .iter()
            .flat_map(|f| f.hunk_ids.iter().map(String::as_str))
            .collect();
        table.row([
            cp.checkpoint_id.to_string(),
            cp.created_at.to_string(),
            files.join(" "),
            format!("({})", cp.action),
            hunks.join(" "),
        ]);
    }
    s.out_rendered(&table.render());
    Ok(())
}

/// `bb7 rollback --last` and `/undo`: rolls back the chat's newest apply that no
/// rollback undid yet (`checkpoint::last_undoable`), so a second undo undoes the apply
/// before it.
pub(super) async fn undo(s: &mut Session, force: bool) -> Res<()> {
    let id = s.active().await?;
    let r: Checkpoints =
        s.c.call(Action::CheckpointList(params::CheckpointList {
            chat_id: Some(id),
        }))
        .await?;
    let list: Vec<Checkpoint> = r.checkpoints.iter().map(as_checkpoint).collect();
    let Some(last) = crate::apply::checkpoint::last_undoable(&list) else {
        return Err(Failure::new(
            "nothing to undo: every apply of this chat is rolled back (or none was made)",
        ));
    };
    rollback(s, last.checkpoint_id.clone(), vec![], force).await
}

/// A listed checkpoint as far as [`crate::apply::checkpoint::last_undoable`] reads
/// one (its files' paths and hashes, no contents).
fn as_checkpoint(c: &crate::apply::checkpoint::CheckpointSummary) -> Checkpoint {
    Checkpoint {
        checkpoint_id: c.checkpoint_id.to_string(),
        chat_id: c.chat_id.to_string(),
        created_at: c.created_at.to_string(),
        action: c.action.to_string(),
        files: c
            .files
            .iter()
            .map(|f| crate::apply::checkpoint::CheckpointFile {
                path: f.path.to_string(),
                before_hash: f.before_hash.as_deref().map(str::to_owned),
                after_hash: f.after_hash.as_deref().map(str::to_owned),
                hunk_ids: f.hunk_ids.to_vec(),
                before_content: None,
                after_content: None,
                proposed_content: None,
            })
            .collect(),
        turn_id: c.turn_id.as_deref().map(str::to_owned),
        rolls_back: c.rolls_back.as_deref().map(str::to_owned),
    }
}

/// `bb7 rollback ID [--scoped HUNK…] [--force]`: merges three-way like apply
/// (`scoped_selected` of every hunk, or of the ones named), so later edits elsewhere
/// in a file survive; each file whose later edits overlap is reported once and makes
/// the command fail with the conflict status. `--force` is the hard rollback
/// (`hard_all` with `force`): each file as before the checkpoint.
pub(super) async fn rollback(
    s: &mut Session,
    id: String,
    scoped: Vec<String>,
    force: bool,
) -> Res<()> {
    let (mode, hunks) = if force && scoped.is_empty() {
        ("hard_all", None)
    } else if scoped.is_empty() {
        let cp: CheckpointView =
            s.c.call(Action::CheckpointGet(params::CheckpointRef {
                checkpoint_id: NonEmpty(id.clone()),
            }))
            .await?;
        let all: Vec<String> = cp
            .checkpoint
            .files
            .iter()
            .flat_map(|f| f.hunk_ids.iter().cloned())
            .collect();
        if all.is_empty() {
            ("hard_all", None)
        } else {
            ("scoped_selected", Some(all))
        }
    } else {
        ("scoped_selected", Some(scoped))
    };
    let r: RollbackResult =
        s.c.call(Action::CheckpointRollback(params::CheckpointRollback {
            checkpoint_id: NonEmpty(id),
            mode: mode.into(),
            hunk_ids: hunks,
            force: force.then_some(true),
        }))
        .await?;
    let mut conflicts = Vec::new();
    for f in r.files.iter() {
        let path = terminal::err(&f.path);
        if f.restored && !s.root.join(&f.path).exists() {
            eprintln!(
                "bb7: deleted {path}: the checkpoint created it (if it is in the context, \
                 `{} {path}` takes it out)",
                s.cmd("bb7 remove", "/drop")
            );
        } else if f.restored {
            eprintln!("bb7: restored {path}");
        }
        if f.conflict {
            let why = f.reason.as_deref().unwrap_or("it changed since");
            conflicts.push(format!("conflict: {path}: {}", terminal::err(why)));
        }
    }
    if let Some(cp) = &r.checkpoint_id {
        eprintln!("bb7: rollback checkpoint {cp}");
    }
    if !conflicts.is_empty() {
        conflicts.push(
            "those files are untouched; `--force` resets them to before the checkpoint, \
             dropping your later edits there"
                .into(),
        );
        return Err(Failure::new(conflicts.join("\nbb7: ")).with_status(exit::CONFLICT));
    }
    if r.checkpoint_id.is_none() {
        eprintln!("bb7: nothing to roll back: the files are already as before the checkpoint");
    }
    Ok(())
}
