//! Checkpoints (docs/PROTOCOL.md, "Review, apply and rollback"): every apply and
//! every rollback records the affected files' content before and after, so any of
//! them can be rolled back — a rollback included. Stored as `{state}/checkpoints/{id}.json` (`.bb7/` of the project, or
//! `~/.bb7/` in global-only mode).

use std::borrow::Cow;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::chat::ids;
use crate::diff::{self as hunks, Edit, apply_edits};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::fsutil::write_json_atomic;
use crate::project::paths::state_path;
use crate::text::{to_lf, uses_crlf, with_line_endings};

/// One file of a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointFile {
    /// Project-relative path.
    pub path: String,
    /// `sha256:…` of the file before, `null` when it did not exist.
    pub before_hash: Option<String>,
    /// `sha256:…` of the file after, `null` when it was deleted.
    pub after_hash: Option<String>,
    /// Hunks between before and after (ids as in reviews).
    pub hunk_ids: Vec<String>,
    /// Content before (as on disk), `null` when the file did not exist.
    pub before_content: Option<String>,
    /// Content after (as on disk), `null` when the file was deleted.
    pub after_content: Option<String>,
    /// What the model proposed at the time (its output), for the three-way view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_content: Option<String>,
}

/// A checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    /// `cp_<millis>_<random>`: sorts by creation.
    pub checkpoint_id: String,
    /// The chat whose apply made it.
    pub chat_id: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// `apply_file`, `apply_file_as`, `review_apply` or `rollback`.
    pub action: String,
    /// The files it changed.
    pub files: Vec<CheckpointFile>,
    /// The turn (job) whose answer an apply wrote: the assistant message that last
    /// wrote the output, as its index and `timestamp` (`7@2026-11-25T08:00:00Z`). Applies of one turn's output, one after the
    /// other, extend one checkpoint (docs/PROTOCOL.md, "Review, apply and rollback").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// On a rollback: the checkpoint it undid, so an undo never undoes the same
    /// apply twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolls_back: Option<String>,
}

/// What a new checkpoint records besides its files: the chat, what made it, the turn
/// whose output was applied and, for a rollback, the checkpoint it undoes.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The chat whose apply made it.
    pub chat_id: &'a str,
    /// See [`Checkpoint::action`].
    pub action: &'a str,
    /// See [`Checkpoint::turn_id`].
    pub turn_id: Option<&'a str>,
    /// See [`Checkpoint::rolls_back`].
    pub rolls_back: Option<&'a str>,
}

impl Checkpoint {
    /// Checks a checkpoint read from disk against its file: `.bb7/` may come from a
    /// cloned repository or a hostile write, so its content is untrusted input. The id
    /// must be the file's name, the chat id a valid one, every path a plain
    /// project-relative path outside the protected directories (no rollback ever
    /// writes `.git/` or `.bb7/`), and each hash must match the content it describes.
    /// Returns why not.
    pub fn validate(&self, file_id: &str) -> std::result::Result<(), String> {
        if self.checkpoint_id != file_id {
            return Err(format!("it names itself {}", self.checkpoint_id));
        }
        if !crate::project::paths::valid_chat_id(&self.chat_id) {
            return Err("its chat id is not valid".into());
        }
        if let Some(r) = &self.rolls_back
            && !(r.starts_with("cp_") && crate::project::paths::valid_chat_id(r))
        {
            return Err("the checkpoint it rolls back is not a checkpoint id".into());
        }
        for f in &self.files {
            if !is_plain_relative(&f.path) {
                return Err(format!("{:?} is not a project-relative path", f.path));
            }
            if let Some(dir) = crate::project::paths::protected_dir(&f.path) {
                return Err(format!("{} is inside {dir}/", f.path));
            }
            let hash = |c: &Option<String>| c.as_ref().map(|c| ids::sha256_tagged(c.as_bytes()));
            if hash(&f.before_content) != f.before_hash || hash(&f.after_content) != f.after_hash {
                return Err(format!(
                    "the hashes of {} do not match its contents",
                    f.path
                ));
            }
        }
        Ok(())
    }

    /// The summary for `checkpoint_list`: files without their contents.
    pub fn summary(&self) -> CheckpointSummary<'_> {
        CheckpointSummary {
            checkpoint_id: Cow::Borrowed(&self.checkpoint_id),
            chat_id: Cow::Borrowed(&self.chat_id),
            created_at: Cow::Borrowed(&self.created_at),
            action: Cow::Borrowed(&self.action),
            turn_id: self.turn_id.as_deref().map(Cow::Borrowed),
            rolls_back: self.rolls_back.as_deref().map(Cow::Borrowed),
            files: self
                .files
                .iter()
                .map(|f| FileSummary {
                    path: Cow::Borrowed(&f.path),
                    before_hash: f.before_hash.as_deref().map(Cow::Borrowed),
                    after_hash: f.after_hash.as_deref().map(Cow::Borrowed),
                    hunk_ids: Cow::Borrowed(&f.hunk_ids),
                })
                .collect(),
        }
    }
}

/// A checkpoint in `checkpoint_list`: its fields, and its files without contents.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointSummary<'a> {
    /// See [`Checkpoint::checkpoint_id`].
    pub checkpoint_id: Cow<'a, str>,
    /// The chat whose apply made it.
    pub chat_id: Cow<'a, str>,
    /// RFC 3339 UTC.
    pub created_at: Cow<'a, str>,
    /// What made it.
    pub action: Cow<'a, str>,
    /// See [`Checkpoint::turn_id`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<Cow<'a, str>>,
    /// See [`Checkpoint::rolls_back`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolls_back: Option<Cow<'a, str>>,
    /// The files it changed.
    pub files: Vec<FileSummary<'a>>,
}

impl CheckpointSummary<'_> {
    /// The same summary, owning its fields.
    pub fn into_owned(self) -> CheckpointSummary<'static> {
        let own = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        CheckpointSummary {
            checkpoint_id: own(self.checkpoint_id),
            chat_id: own(self.chat_id),
            created_at: own(self.created_at),
            action: own(self.action),
            turn_id: self.turn_id.map(own),
            rolls_back: self.rolls_back.map(own),
            files: self
                .files
                .into_iter()
                .map(|f| FileSummary {
                    path: own(f.path),
                    before_hash: f.before_hash.map(own),
                    after_hash: f.after_hash.map(own),
                    hunk_ids: Cow::Owned(f.hunk_ids.into_owned()),
                })
                .collect(),
        }
    }
}

/// A file of a [`CheckpointSummary`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileSummary<'a> {
    /// Project-relative path.
    pub path: Cow<'a, str>,
    /// `sha256:…` before (`null`: the file did not exist).
    pub before_hash: Option<Cow<'a, str>>,
    /// `sha256:…` after (`null`: the file was deleted).
    pub after_hash: Option<Cow<'a, str>>,
    /// The hunks the change wrote.
    pub hunk_ids: Cow<'a, [String]>,
}

/// Builds the record of one file's change.
pub fn file_change(
    path: &str,
    before: Option<&str>,
    after: Option<&str>,
    proposed: Option<&str>,
) -> CheckpointFile {
    let hunk_ids = hunks::hunks(
        path,
        &to_lf(before.unwrap_or("")),
        &to_lf(after.unwrap_or("")),
    )
    .into_iter()
    .map(|h| h.id)
    .collect();
    CheckpointFile {
        path: path.to_owned(),
        before_hash: before.map(|b| ids::sha256_tagged(b.as_bytes())),
        after_hash: after.map(|a| ids::sha256_tagged(a.as_bytes())),
        hunk_ids,
        before_content: before.map(str::to_owned),
        after_content: after.map(str::to_owned),
        proposed_content: proposed.map(str::to_owned),
    }
}

/// The checkpoints of one state directory.
pub struct CheckpointStore {
    base: PathBuf,
}

impl CheckpointStore {
    /// Checkpoints under `{state}/checkpoints`.
    pub fn new(state: PathBuf) -> CheckpointStore {
        CheckpointStore { base: state }
    }

    /// Records a checkpoint and returns it (durable when this returns).
    pub fn create(&self, origin: Origin, files: Vec<CheckpointFile>) -> Result<Checkpoint> {
        let millis = chrono::Utc::now().timestamp_millis();
        let mut suffix = [0u8; 3];
        let _ = getrandom::fill(&mut suffix);
        let cp = Checkpoint {
            checkpoint_id: format!("cp_{millis:013}_{}", hex::encode(suffix)),
            chat_id: origin.chat_id.to_owned(),
            created_at: ids::now_rfc3339(),
            action: origin.action.to_owned(),
            files,
            turn_id: origin.turn_id.map(str::to_owned),
            rolls_back: origin.rolls_back.map(str::to_owned),
        };
        self.write(&cp)?;
        Ok(cp)
    }

    /// Writes `cp` (atomically and durably) under its id.
    fn write(&self, cp: &Checkpoint) -> Result<()> {
        let path = state_path(
            &self.base,
            &format!("checkpoints/{}.json", cp.checkpoint_id),
        )?;
        write_json_atomic(&path, cp)
    }

    /// Records `files` for `origin`: in the newest checkpoint of the store when that
    /// one is an apply of the same chat and turn (one turn's answer applied file by
    /// file, or hunk by hunk, is one checkpoint, undone whole), else in a new one.
    /// A file already in it keeps its content before, and takes the new content after.
    pub fn record(&self, origin: Origin, files: Vec<CheckpointFile>) -> Result<Checkpoint> {
        let joins = |cp: &Checkpoint| {
            origin.turn_id.is_some()
                && cp.turn_id.as_deref() == origin.turn_id
                && cp.chat_id == origin.chat_id
                && cp.rolls_back.is_none()
                && is_apply(&cp.action)
                && is_apply(origin.action)
        };
        let Some(mut cp) = self.newest().filter(joins) else {
            return self.create(origin, files);
        };
        for f in files {
            match cp.files.iter_mut().find(|g| g.path == f.path) {
                Some(g) => {
                    *g = file_change(
                        &f.path,
                        g.before_content.as_deref(),
                        f.after_content.as_deref(),
                        f.proposed_content.as_deref(),
                    )
                }
                None => cp.files.push(f),
            }
        }
        self.write(&cp)?;
        Ok(cp)
    }

    /// The newest checkpoint (ids sort by creation), when it reads back.
    pub fn newest(&self) -> Option<Checkpoint> {
        let dir = state_path(&self.base, "checkpoints").ok()?;
        let newest = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
            .filter(|n| n.starts_with("cp_"))
            .max()?;
        self.get(&newest).ok()
    }

    /// Loads one. Errors: `Checkpoint not found`.
    pub fn get(&self, id: &str) -> Result<Checkpoint> {
        if !id.starts_with("cp_") || !crate::project::paths::valid_chat_id(id) {
            return Err(Error::not_found("Checkpoint not found"));
        }
        let path = state_path(&self.base, &format!("checkpoints/{id}.json"))?;
        // Opened as a regular file within its cap (invariant 13); a damaged one is
        // refused, never moved: it holds the user's files.
        let bytes = match crate::project::fsutil::read_state(
            &path,
            crate::project::state_file::CHECKPOINT_CAP,
        ) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::not_found("Checkpoint not found"));
            }
            Err(e) if crate::project::fsutil::is_damage(&e) => {
                return Err(Error::new(
                    ErrorCode::Io,
                    format!("Checkpoint {id} is damaged: {e}"),
                ));
            }
            Err(e) => return Err(Error::io(format!("Cannot read checkpoint {id}"), e)),
        };
        let damaged =
            |why: String| Error::new(ErrorCode::Io, format!("Checkpoint {id} is damaged: {why}"));
        let cp: Checkpoint = serde_json::from_slice(&bytes).map_err(|e| damaged(e.to_string()))?;
        cp.validate(id).map_err(damaged)?;
        Ok(cp)
    }

    /// All checkpoints, oldest first, optionally of one chat.
    pub fn list(&self, chat_id: Option<&str>) -> Result<Vec<Checkpoint>> {
        let dir = state_path(&self.base, "checkpoints")?;
        let mut names: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        let mut out = Vec::new();
        for n in names {
            if let Ok(cp) = self.get(&n)
                && chat_id.is_none_or(|c| c == cp.chat_id)
            {
                out.push(cp);
            }
        }
        Ok(out)
    }
}

/// Whether `action` writes the model's work (an apply), not a rollback.
fn is_apply(action: &str) -> bool {
    matches!(action, "apply_file" | "review_apply" | "apply_file_as")
}

/// The checkpoint an undo rolls back among `list` (oldest first, one chat's): the
/// newest apply that later rollbacks have not undone whole. A second undo therefore
/// undoes the apply before it, never the first undo; an apply a scoped rollback undid
/// only part of (one hunk) is still the one to undo, since some of it is still applied.
/// An apply is undone whole when, for each of its files (by its `before_hash`/
/// `after_hash`, contents not needed), a rollback of it left the file as it was before.
pub fn last_undoable(list: &[Checkpoint]) -> Option<&Checkpoint> {
    // Newest first: a rollback that a later rollback undid (a redo) undoes nothing.
    let mut undoers: std::collections::HashMap<&str, Vec<&Checkpoint>> =
        std::collections::HashMap::new();
    for c in list.iter().rev() {
        let undone = undoers.get(c.checkpoint_id.as_str()).is_some_and(|rbs| {
            c.files.iter().all(|f| {
                rbs.iter().any(|rb| {
                    rb.files
                        .iter()
                        .any(|g| g.path == f.path && g.after_hash == f.before_hash)
                })
            })
        });
        if undone {
            continue;
        }
        if let Some(r) = &c.rolls_back {
            undoers.entry(r.as_str()).or_default().push(c);
        } else if is_apply(&c.action) {
            return Some(c);
        }
    }
    None
}

/// A path as bb7 records it: `/`-separated normal components, no `.`, `..`, empty
/// component, backslash or NUL, not absolute.
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains(['\\', '\0'])
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// How a rollback treats one file.
#[derive(Debug, Clone, PartialEq)]
pub enum RollbackMode {
    /// Restore the content before the checkpoint (`hard_all`).
    Hard {
        /// Also when the file changed after the checkpoint.
        force: bool,
    },
    /// Reverse only these hunks, keeping newer unrelated edits (`scoped_selected`).
    Scoped(Vec<String>),
}

/// What a rollback does to one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRollback {
    /// The new content: `Some(Some(text))` to write, `Some(None)` to delete,
    /// `None` to leave the file as it is.
    pub write: Option<Option<String>>,
    /// The file was (fully or partly) restored.
    pub restored: bool,
    /// Something could not be restored.
    pub conflict: bool,
    /// Why not.
    pub reason: Option<String>,
}

/// Plans the rollback of `file` given the file's current content on disk.
pub fn rollback_file(
    file: &CheckpointFile,
    current: Option<&str>,
    mode: &RollbackMode,
) -> FileRollback {
    let current_hash = current.map(|c| ids::sha256_tagged(c.as_bytes()));
    match mode {
        RollbackMode::Hard { force } => {
            if current_hash == file.after_hash || *force {
                return restore(file.before_content.clone());
            }
            if current_hash == file.before_hash {
                // Already as before the checkpoint.
                return FileRollback {
                    write: None,
                    restored: true,
                    conflict: false,
                    reason: None,
                };
            }
            would_drop(file, current)
        }
        // Every hunk of the file: the whole change reversed, merged with later edits
        // like an apply.
        RollbackMode::Scoped(ids)
            if !file.hunk_ids.is_empty() && file.hunk_ids.iter().all(|h| ids.contains(h)) =>
        {
            if current_hash == file.after_hash {
                return restore(file.before_content.clone());
            }
            hard_merge(file, current, false)
        }
        RollbackMode::Scoped(ids) => {
            let before = to_lf(file.before_content.as_deref().unwrap_or("")).into_owned();
            let after = to_lf(file.after_content.as_deref().unwrap_or("")).into_owned();
            let now = current.map(|c| to_lf(c).into_owned());
            let selected: Vec<hunks::Hunk> = hunks::hunks(&file.path, &before, &after)
                .into_iter()
                .filter(|h| ids.contains(&h.id))
                .collect();
            // Each hunk reversed, as an edit of the "after" text.
            let reversed: Vec<Edit> = selected
                .iter()
                .map(|h| Edit {
                    start: h.new_start,
                    end: h.new_start + h.edit.lines.len(),
                    lines: h.old_lines.clone(),
                })
                .collect();
            let newer = crate::diff::user_edits(&after, now.as_deref());
            let (ok, clash): (Vec<Edit>, Vec<Edit>) = reversed
                .into_iter()
                .partition(|r| !newer.iter().any(|n| n.conflicts_with(r)));
            if ok.is_empty() {
                return FileRollback {
                    write: None,
                    restored: false,
                    conflict: !clash.is_empty(),
                    reason: (!clash.is_empty())
                        .then(|| "the selected hunks overlap later edits".to_owned()),
                };
            }
            let mut all = newer;
            all.extend(ok);
            let text = apply_edits(&after, &all);
            let crlf = current.is_some_and(uses_crlf);
            FileRollback {
                write: Some(Some(with_line_endings(&text, crlf))),
                restored: true,
                conflict: !clash.is_empty(),
                reason: (!clash.is_empty())
                    .then(|| "some selected hunks overlap later edits and were kept".to_owned()),
            }
        }
    }
}

/// A hard rollback without force of a file changed since the checkpoint: nothing is
/// written, and the reason names the lines of the file now that resetting it would
/// drop (docs/PROTOCOL.md, "Review, apply and rollback").
fn would_drop(file: &CheckpointFile, current: Option<&str>) -> FileRollback {
    let after = to_lf(file.after_content.as_deref().unwrap_or(""));
    let now = to_lf(current.unwrap_or(""));
    let ranges: Vec<String> = hunks::hunks(&file.path, &after, &now)
        .iter()
        .map(|h| match h.edit.lines.len() {
            0 => format!("a deletion after line {}", h.new_start),
            1 => format!("line {}", h.new_start + 1),
            n => format!("lines {}-{}", h.new_start + 1, h.new_start + n),
        })
        .collect();
    let what = match current {
        None => "you deleted it since the checkpoint".to_owned(),
        Some(_) => format!(
            "it changed since the checkpoint; a hard rollback would drop your edits at {}",
            ranges.join(", ")
        ),
    };
    FileRollback {
        write: None,
        restored: false,
        conflict: true,
        reason: Some(format!(
            "{what} (roll back with force to reset it anyway, or scoped to keep them)"
        )),
    }
}

/// A plan that writes `content` (`None`: deletes the file).
fn restore(content: Option<String>) -> FileRollback {
    FileRollback {
        write: Some(content),
        restored: true,
        conflict: false,
        reason: None,
    }
}

/// The whole change of a file that changed after the checkpoint reversed, merged
/// three-way like an apply: base = the content after the checkpoint, theirs = the
/// content before it, ours = the file now. The user's later edits elsewhere in the file
/// survive; edits of the same lines are a conflict unless `force`, where the rollback
/// wins on those lines.
fn hard_merge(file: &CheckpointFile, current: Option<&str>, force: bool) -> FileRollback {
    let conflict = |why: String| FileRollback {
        write: None,
        restored: false,
        conflict: true,
        reason: Some(why),
    };
    match (&file.before_content, &file.after_content) {
        // The checkpoint created the file: undoing it deletes the file, and a file
        // edited since is deleted only with force.
        (None, Some(_)) if current.is_none() => FileRollback {
            write: None,
            restored: false,
            conflict: false,
            reason: None,
        },
        (None, _) if force => restore(None),
        (None, _) => conflict(
            "the checkpoint created this file and it was edited since; roll back with \
             force to delete it anyway"
                .into(),
        ),
        (Some(before), after) => {
            match super::merge::merge(after.as_deref(), before, current, force) {
                Ok(m) => restore(Some(m.text)),
                Err(c) => conflict(format!(
                    "{c} (since the checkpoint); a hard rollback with force resets the \
                     file to before the checkpoint, dropping your later edits"
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
    const AFTER: &str = "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\nnine\nten\neleven\n";

    fn plan(now: &str, force: bool) -> FileRollback {
        let f = file_change("f.txt", Some(BEFORE), Some(AFTER), None);
        rollback_file(&f, Some(now), &RollbackMode::Hard { force })
    }

    fn all_hunks(now: &str) -> FileRollback {
        let f = file_change("f.txt", Some(BEFORE), Some(AFTER), None);
        let ids = f.hunk_ids.clone();
        rollback_file(&f, Some(now), &RollbackMode::Scoped(ids))
    }

    #[test]
    fn a_hard_rollback_reports_later_edits_and_drops_them_only_when_forced() {
        let now = AFTER.replace("four", "FOUR (later)");
        let p = plan(&now, false);
        assert!(!p.restored && p.conflict && p.write.is_none(), "{p:?}");
        assert!(
            p.reason.as_deref().unwrap_or("").contains("line 4"),
            "{p:?}"
        );
        let p = plan(&now, true);
        assert_eq!(p.write, Some(Some(BEFORE.to_owned())));
        assert_eq!(plan(AFTER, false).write, Some(Some(BEFORE.to_owned())));
    }

    #[test]
    fn a_scoped_rollback_of_every_hunk_merges_later_edits() {
        let p = all_hunks(&AFTER.replace("four", "FOUR (later)"));
        assert!(p.restored && !p.conflict, "{p:?}");
        assert_eq!(p.write, Some(Some(BEFORE.replace("four", "FOUR (later)"))));
        let p = all_hunks(
            &AFTER
                .replace("ONE", "ONE (later)")
                .replace("four", "FOUR (later)"),
        );
        assert!(p.conflict && p.write.is_none(), "{p:?}");
        assert!(
            p.reason.as_deref().unwrap_or("").contains("line 1"),
            "{p:?}"
        );
    }

    fn cp(id: &str, action: &str, rolls_back: Option<&str>) -> Checkpoint {
        Checkpoint {
            checkpoint_id: id.into(),
            chat_id: "0123456789".into(),
            created_at: String::new(),
            action: action.into(),
            files: vec![],
            turn_id: None,
            rolls_back: rolls_back.map(Into::into),
        }
    }

    #[test]
    fn undo_goes_back_one_apply_at_a_time_and_a_redo_counts() {
        let mut list = vec![
            cp("cp_1", "apply_file", None),
            cp("cp_2", "review_apply", None),
        ];
        assert_eq!(last_undoable(&list).unwrap().checkpoint_id, "cp_2");
        list.push(cp("cp_3", "rollback", Some("cp_2")));
        assert_eq!(last_undoable(&list).unwrap().checkpoint_id, "cp_1");
        list.push(cp("cp_4", "rollback", Some("cp_1")));
        assert!(last_undoable(&list).is_none());
        // Rolling the last undo back re-applies cp_1: it can be undone again.
        list.push(cp("cp_5", "rollback", Some("cp_4")));
        assert_eq!(last_undoable(&list).unwrap().checkpoint_id, "cp_1");
    }
}
