//! Review, per-hunk apply, checkpoints and rollback for a session (docs/PROTOCOL.md
//! "Review, apply and rollback"). Every write to the user's files goes through the
//! apply engine (`crate::apply::commit`).

use serde_json::json;

use super::Session;
use crate::apply::checkpoint::{CheckpointStore, Origin, RollbackMode, rollback_file};
use crate::apply::{self, FileWrite, read_disk};
use crate::chat::ids;
use crate::chat::model::{ContextFile, Part};
use crate::context::{ChatFiles, event_for, find_file, push_event};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::output::{Entry, status_of};
use crate::project::paths::locate_in_project;

use crate::protocol::params;
use crate::protocol::replies::*;
use crate::review::{self, HunkState, Selection, decided};
use crate::text::{to_lf, uses_crlf, with_line_endings};

fn selection(hunks: params::HunkSelection) -> Selection {
    match hunks {
        params::HunkSelection::All => Selection::All,
        params::HunkSelection::Ids(ids) => Selection::Ids(ids),
        params::HunkSelection::None => Selection::Ids(Vec::new()),
    }
}

impl Session {
    /// The checkpoints of the project (of `~/.bb7` in global-only mode).
    pub(super) fn checkpoints(&self) -> Result<CheckpointStore> {
        let state = match &self.project {
            Some(p) => p.state_dir(),
            None => self.dirs()?.state.clone(),
        };
        Ok(CheckpointStore::new(state))
    }

    /// The base the model's output is reviewed against: the snapshot of the file in
    /// context, or nothing for a file the model created.
    fn review_base(&self, rel: &str) -> Result<(String, Option<ContextFile>)> {
        let a = self.active()?;
        let files = ChatFiles::new(&a.store, &a.chat.id);
        match find_file(&a.chat, rel) {
            Some(i) => {
                let cf = a.chat.context_files[i].clone();
                Ok((files.read_snapshot(&cf)?, Some(cf)))
            }
            None => Ok((String::new(), None)),
        }
    }

    /// `review_get`: the hunks of every file with output, or of `path`: those already
    /// decided (state `accepted` / `rejected`) first, then the pending ones.
    pub(super) fn review_get(&self, args: params::ReviewGet) -> Result<Review<'_>> {
        let root = self.root()?.to_path_buf();
        let a = self.active()?;
        let files = ChatFiles::new(&a.store, &a.chat.id);
        let paths = match args.path.as_deref() {
            Some(p) => vec![locate_in_project(&root, p)?.0],
            None => files.list_outputs()?,
        };
        let mut out = Vec::new();
        for rel in paths {
            // A file that cannot be reviewed (its output over the read limit or not a
            // regular file, its snapshot unreadable, the file on disk not text) is
            // reported on its own row, so the others can still be reviewed and applied
            // and this one rejected (`output_delete`).
            let output = match files.read_output(&rel) {
                Ok(Some(output)) => output,
                Ok(None) if args.path.is_some() => {
                    return Err(Error::not_found(format!("No pending changes for {rel}")));
                }
                Ok(None) => continue,
                Err(e) => {
                    out.push(self.unreviewable(&root, rel, e.message, None)?);
                    continue;
                }
            };
            let version = ids::file_version(&rel, &output);
            match self.review_row(files, &root, &rel, output) {
                Ok(row) => out.push(row),
                Err(e) => out.push(self.unreviewable(&root, rel, e.message, Some(version))?),
            }
        }
        Ok(Review { files: out.into() })
    }

    /// The `review_get` row of `rel`, whose output is `output`. Errors: its snapshot
    /// or the file on disk cannot be read.
    fn review_row(
        &self,
        files: ChatFiles<'_>,
        root: &std::path::Path,
        rel: &str,
        output: String,
    ) -> Result<ReviewFile> {
        let (base, cf) = self.review_base(rel)?;
        let disk = read_disk(&root.join(rel), rel)?;
        let disk_lf = disk.text.as_deref().map(|t| to_lf(t).into_owned());
        let mut hunks = decided::load(files, rel);
        hunks.extend(review::review_hunks(
            rel,
            &base,
            &output,
            disk_lf.as_deref(),
        ));
        // Decided hunks, and those the file on disk already holds, are not pending.
        let review_state = if hunks.iter().all(|h| h.state == HunkState::Pending) {
            ReviewState::Pending
        } else {
            ReviewState::Partial
        };
        let status = status_of(match &cf {
            Some(_) => Entry::InContext {
                output_differs: output != base,
            },
            None => Entry::OutputOnly {
                exists_locally: disk.text.is_some(),
            },
        });
        Ok(ReviewFile {
            status,
            disk_hash: disk.hash,
            base_version: cf.as_ref().map(|c| c.version.clone()),
            output_version: Some(ids::file_version(rel, &output)),
            review_state,
            hunks,
            output_error: None,
            path: rel.to_owned(),
        })
    }

    /// The `review_get` row of a file that cannot be reviewed: no hunks, and
    /// `output_error` saying why and how to reject it; `output_version` when the output
    /// itself read. A file on disk that cannot be read counts as present, hash unknown.
    fn unreviewable(
        &self,
        root: &std::path::Path,
        rel: String,
        error: String,
        output_version: Option<String>,
    ) -> Result<ReviewFile> {
        let cf = {
            let a = self.active()?;
            find_file(&a.chat, &rel).map(|i| a.chat.context_files[i].clone())
        };
        let disk = read_disk(&root.join(&rel), &rel).ok();
        // A file that exists but is no text still has a hash: `null` says "absent".
        let disk_hash = match &disk {
            Some(d) => d.hash.clone(),
            None => crate::project::fsutil::read_regular(&root.join(&rel))
                .ok()
                .map(|bytes| ids::sha256_tagged(&bytes)),
        };
        let status = status_of(match &cf {
            Some(_) => Entry::InContext {
                output_differs: true,
            },
            None => Entry::OutputOnly {
                exists_locally: disk.as_ref().is_none_or(|d| d.text.is_some()),
            },
        });
        Ok(ReviewFile {
            status,
            disk_hash,
            base_version: cf.map(|c| c.version),
            output_version,
            review_state: ReviewState::Pending,
            hunks: Vec::new(),
            output_error: Some(error),
            path: rel,
        })
    }

    /// `review_apply`: applies accepted hunks to the file on disk (keeping the user's
    /// edits), removes rejected ones from the output, records the decisions, and makes
    /// a checkpoint when the file changed.
    pub(super) fn review_apply(&mut self, args: params::ReviewApply) -> Result<ReviewApplied<'_>> {
        let root = self.root()?.to_path_buf();
        let (rel, abs) = locate_in_project(&root, args.path.as_str())?;
        let accept = selection(args.accept);
        let reject = selection(args.reject);
        let expected = args.expected_disk_hash.flatten();
        let reasons = args.reasons.unwrap_or_default();
        self.ensure_project_chat()?;
        let output = {
            let a = self.active()?;
            ChatFiles::new(&a.store, &a.chat.id)
                .read_output(&rel)?
                .ok_or_else(|| Error::not_found(format!("No pending changes for {rel}")))?
        };
        let (base, cf) = self.review_base(&rel)?;
        if cf.as_ref().is_some_and(|c| c.readonly) {
            return Err(Error::invalid(format!("{rel} is read-only in context")));
        }
        let disk = read_disk(&abs, &rel)?;
        if disk.hash != expected {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "{rel} changed on disk since the review was computed; fetch the review again"
                ),
            ));
        }
        let disk_lf = disk.text.as_deref().map(|t| to_lf(t).into_owned());
        let take = args.take.unwrap_or_default();
        let decision = review::decide_taking(
            &rel,
            &base,
            &output,
            disk_lf.as_deref(),
            &accept,
            &reject,
            &take,
        )?;

        let mut checkpoint_id = None;
        let mut content = disk_lf.clone().unwrap_or_default();
        if let Some(new_disk) = &decision.disk {
            let crlf = disk.text.as_deref().is_some_and(uses_crlf);
            let (chat_id, turn) = {
                let chat = &self.active()?.chat;
                (chat.id.clone(), apply::turn_of(chat, &rel))
            };
            let origin = Origin {
                chat_id: &chat_id,
                action: "review_apply",
                turn_id: turn.as_deref(),
                rolls_back: None,
            };
            checkpoint_id = apply::commit(
                &root,
                &self.checkpoints()?,
                origin,
                vec![FileWrite {
                    rel: rel.clone(),
                    before: disk.text.clone(),
                    after: Some(with_line_endings(new_disk, crlf)),
                    proposed: Some(output.clone()),
                }],
            )?;
            content = new_disk.clone();
        }
        let newly_decided =
            review::decided_views(&rel, &base, &output, disk_lf.as_deref(), &decision);
        let reason_of = |id: &str| reasons.get(id).cloned();
        let d = decision.clone();
        let shown_path = rel.clone();
        let record_path = rel.clone();
        self.mutate(move |chat, files, _| {
            if !d.applied.is_empty() {
                let version = ids::file_version(&rel, &d.snapshot);
                match find_file(chat, &rel) {
                    Some(i) => chat.context_files[i].version = version,
                    None => chat.context_files.push(ContextFile {
                        path: rel.clone(),
                        readonly: false,
                        external: false,
                        version,
                        start_line: None,
                        end_line: None,
                        kind: None,
                        meta: None,
                    }),
                }
                let i = find_file(chat, &rel).unwrap_or(0);
                files.write_snapshot(&chat.context_files[i].clone(), &d.snapshot)?;
            }
            match &d.output {
                Some(o) => files.write_output(&rel, o)?,
                None => files.remove_output(&rel)?,
            }
            let base_part = match find_file(chat, &rel) {
                Some(i) => event_for("UserAcceptHunk", &chat.context_files[i]),
                None => Part::event("UserAcceptHunk", &rel),
            };
            for (action, list) in [
                ("UserAcceptHunk", &d.applied),
                ("UserRejectHunk", &d.rejected),
            ] {
                for (id, header) in list {
                    let mut p = base_part.clone();
                    p.action = Some(action.into());
                    p.extra.insert("hunk_id".into(), json!(id));
                    p.extra.insert("hunk".into(), json!(header));
                    if let Some(r) = reason_of(id) {
                        p.extra.insert("reason".into(), json!(r));
                    }
                    push_event(chat, p);
                }
            }
            Ok(())
        })?;
        // The decisions are shown until the output is applied or gone as a whole.
        {
            let a = self.active()?;
            let files = ChatFiles::new(&a.store, &a.chat.id);
            if decision.output.is_some() {
                decided::record(files, &record_path, newly_decided)?;
            } else {
                decided::clear(files, &record_path)?;
            }
        }
        let ids_of = |l: &[(String, String)]| l.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>();
        Ok(ReviewApplied {
            path: shown_path.into(),
            applied: ids_of(&decision.applied).into(),
            rejected: ids_of(&decision.rejected).into(),
            pending: decision.pending.into(),
            conflicts: decision.conflicts.into(),
            checkpoint_id: checkpoint_id.map(Into::into),
            content: content.into(),
        })
    }

    /// `checkpoint_list`: all checkpoints (oldest first), or one chat's.
    pub(super) fn checkpoint_list(&self, args: params::CheckpointList) -> Result<Checkpoints<'_>> {
        self.root()?;
        let list = self.checkpoints()?.list(args.chat_id.as_deref())?;
        let checkpoints = list.iter().map(|c| c.summary().into_owned()).collect();
        Ok(Checkpoints { checkpoints })
    }

    /// `checkpoint_get`: one checkpoint with contents.
    pub(super) fn checkpoint_get(&self, args: params::CheckpointRef) -> Result<CheckpointView<'_>> {
        self.root()?;
        let cp = self.checkpoints()?.get(args.checkpoint_id.as_str())?;
        Ok(CheckpointView {
            checkpoint: std::borrow::Cow::Owned(cp),
        })
    }

    /// `checkpoint_diff3`: the checkpoint's base, the file now, and what the model
    /// proposed.
    pub(super) fn checkpoint_diff3(&self, args: params::CheckpointDiff3) -> Result<Diff3<'_>> {
        let root = self.root()?.to_path_buf();
        let cp = self.checkpoints()?.get(args.checkpoint_id.as_str())?;
        let (rel, abs) = locate_in_project(&root, args.path.as_str())?;
        let f = cp.files.iter().find(|f| f.path == rel).ok_or_else(|| {
            Error::not_found(format!(
                "{rel} is not part of checkpoint {}",
                cp.checkpoint_id
            ))
        })?;
        let current = read_disk(&abs, &rel)?.text;
        let proposed = f.proposed_content.as_ref().or(f.after_content.as_ref());
        Ok(Diff3 {
            path: rel.into(),
            checkpoint_base: f.before_content.clone().map(Into::into),
            current: current.map(Into::into),
            proposed: proposed.cloned().map(Into::into),
        })
    }

    /// `checkpoint_rollback`: `hard_all` restores the files as they were before the
    /// checkpoint (a file changed since only with `force`); `scoped_selected` reverses
    /// only `hunk_ids`, keeping newer unrelated edits. The rollback is a checkpoint.
    pub(super) fn checkpoint_rollback(
        &mut self,
        args: params::CheckpointRollback,
    ) -> Result<RollbackResult<'_>> {
        let root = self.root()?.to_path_buf();
        let store = self.checkpoints()?;
        let cp = store.get(args.checkpoint_id.as_str())?;
        // `editor_all`: the caller restores the files itself (an ACP client's
        // buffers, docs/PROTOCOL.md "bb7 acp"), as `apply_file` with `editor_content`
        // applies: the rollback is recorded, from the texts the apply left to the texts
        // before it, and nothing is written.
        let in_editor = args.mode == "editor_all";
        let mode = match args.mode.as_str() {
            "hard_all" => RollbackMode::Hard {
                force: args.force.unwrap_or(false),
            },
            "editor_all" => RollbackMode::Hard { force: true },
            "scoped_selected" => RollbackMode::Scoped(
                args.hunk_ids
                    .filter(|l| !l.is_empty())
                    .ok_or_else(|| Error::invalid("scoped_selected needs hunk_ids"))?,
            ),
            other => {
                return Err(Error::invalid(format!(
                    "Unknown mode {other}: use hard_all, scoped_selected or editor_all"
                )));
            }
        };
        if let RollbackMode::Scoped(ids) = &mode
            && let Some(unknown) = ids
                .iter()
                .find(|id| !cp.files.iter().any(|f| f.hunk_ids.contains(id)))
        {
            return Err(Error::not_found(format!(
                "Hunk {unknown} is not part of checkpoint {}",
                cp.checkpoint_id
            )));
        }
        let mut results = Vec::new();
        let mut changes = Vec::new();
        for f in &cp.files {
            if let RollbackMode::Scoped(ids) = &mode
                && !f.hunk_ids.iter().any(|h| ids.contains(h))
            {
                continue;
            }
            let (rel, abs) = locate_in_project(&root, &f.path)?;
            if in_editor {
                changes.push(FileWrite {
                    rel: rel.clone(),
                    before: f.after_content.clone(),
                    after: f.before_content.clone(),
                    proposed: None,
                });
                results.push(RollbackFile {
                    path: rel,
                    restored: true,
                    conflict: false,
                    reason: None,
                });
                continue;
            }
            let current = read_disk(&abs, &rel)?.text;
            let plan = rollback_file(f, current.as_deref(), &mode);
            if let Some(write) = &plan.write {
                changes.push(FileWrite {
                    rel: rel.clone(),
                    before: current.clone(),
                    after: write.clone(),
                    proposed: None,
                });
            }
            results.push(RollbackFile {
                path: rel,
                restored: plan.restored,
                conflict: plan.conflict,
                reason: plan.reason,
            });
        }
        // The rollback belongs to the chat whose apply it undoes, whichever chat is
        // active: that chat's undo must see it (`checkpoint::last_undoable`).
        let chat_id = cp.chat_id.clone();
        let origin = Origin {
            chat_id: &chat_id,
            action: "rollback",
            turn_id: None,
            rolls_back: Some(&cp.checkpoint_id),
        };
        let new_id = match in_editor {
            true => apply::record(&root, &store, origin, changes)?.map(|r| r.checkpoint_id),
            false => apply::commit(&root, &store, origin, changes)?,
        };
        if let Some(a) = &self.active
            && a.chat.id == cp.chat_id
            && new_id.is_some()
        {
            let restored: Vec<String> = results
                .iter()
                .filter(|r| r.restored)
                .map(|r| r.path.clone())
                .collect();
            let source = cp.checkpoint_id.clone();
            self.mutate(move |chat, _, _| {
                for path in restored {
                    let mut p = Part::event("UserRollback", &path);
                    p.extra.insert("checkpoint_id".into(), json!(source));
                    push_event(chat, p);
                }
                Ok(())
            })?;
        }
        Ok(RollbackResult {
            checkpoint_id: new_id.map(Into::into),
            files: results.into(),
        })
    }
}
