//! The staged commit of a response's outputs (invariant 6 and Durability 2 and 9 in
//! docs/ARCHITECTURE.md). A commit lives in `staging/{txn}/` of the chat:
//!
//! - `files/{path}`: each new output, written and flushed before anything else;
//! - `journal.json`: the list of paths, written last: the commit point;
//! - `old/{path}`: an earlier output of the same path, moved aside while the new one
//!   moves into `output/`, so that a commit that fails half-way can be undone.
//!
//! Before the journal nothing is committed, and a failure removes the directory. After
//! it, a crash leaves the commit standing: the next open moves every file still in
//! `files/` into place ([`ChatFiles::recover_staged`]). A failure the running process
//! sees after the journal (a folder in `output/` the file system refuses to write) is
//! undone instead: every file moved so far goes back to `files/`, every earlier output
//! back into place, and only then is the journal removed, so the calls the client is
//! told failed never appear on a later open. Undoing never loses the new files before
//! the journal is gone: a crash half-way through it still finishes the commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{ChatFiles, StoreError};
use crate::error::{Error, Result};
use crate::project::fsutil::{sync_dir, write_atomic, write_json_atomic};

/// One path of a commit as far as the move into `output/` got.
struct Moved {
    path: String,
    /// The earlier output of the path is in `old/`.
    old_aside: bool,
    /// The new output is in `output/`.
    new_in: bool,
}

impl ChatFiles<'_> {
    /// Writes several outputs so that they commit together, also across a crash: every
    /// file is staged, then the journal is written, then the files move into `output/`
    /// and the staging directory is removed (see the module documentation). Errors:
    /// [`StoreError`], naming the file that could not be stored; after an error nothing
    /// of the commit is in `output/` and no staging directory is left for an open to
    /// finish, except when even undoing failed (then the error says so, and the next
    /// open finishes the commit).
    pub fn commit_outputs(&self, writes: &BTreeMap<String, String>) -> Result<(), StoreError> {
        let mut txn = [0u8; 6];
        let _ = getrandom::fill(&mut txn);
        let txn = format!("staging/{}", hex::encode(txn));
        if let Err(e) = self.stage(&txn, writes) {
            // Before the journal nothing is committed: the staging directory goes, so
            // no failed commit is left behind for the next open to find.
            self.discard(&txn);
            return Err(e);
        }
        let paths: Vec<&str> = writes.keys().map(String::as_str).collect();
        let mut moved = Vec::with_capacity(paths.len());
        let Err(failure) = self.move_in(&txn, &paths, &mut moved) else {
            self.remove_txn(&txn)?;
            return Ok(());
        };
        // The client will be told these writes failed, so they must not appear later:
        // the commit is undone before the journal goes.
        match self.undo(&txn, &moved) {
            Ok(()) => {
                self.discard(&txn);
                Err(failure)
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not undo a failed output commit");
                let kept = format!(
                    "{}; putting the earlier files back failed too ({}), so the change is finished when the chat is next opened",
                    failure.error.message, e.message
                );
                Err(StoreError {
                    path: failure.path,
                    error: Error::new(failure.error.code, kept),
                })
            }
        }
    }

    /// Writes every file under `{txn}/files/`, then the journal (the commit point).
    fn stage(&self, txn: &str, writes: &BTreeMap<String, String>) -> Result<(), StoreError> {
        for (path, content) in writes {
            let at = |error: Error| StoreError {
                path: Some(path.clone()),
                error,
            };
            let file = self.txn_path(txn, "files", path).map_err(at)?;
            write_atomic(&file, content.as_bytes()).map_err(at)?;
        }
        let paths: Vec<&String> = writes.keys().collect();
        let journal = self.journal_path(txn)?;
        write_json_atomic(&journal, &paths)?;
        Ok(())
    }

    /// Moves each staged file into `output/`, an earlier output of its path first into
    /// `{txn}/old/`; `moved` records how far each path got. Errors: the path that could
    /// not be moved.
    fn move_in(&self, txn: &str, paths: &[&str], moved: &mut Vec<Moved>) -> Result<(), StoreError> {
        for &path in paths {
            let at = |error: Error| StoreError {
                path: Some(path.to_owned()),
                error,
            };
            let target = self.output_path(path).map_err(at)?;
            let mut step = Moved {
                path: path.to_owned(),
                old_aside: false,
                new_in: false,
            };
            // Only an earlier file is kept aside; a folder where the file goes fails the
            // move below, as it should.
            if target.symlink_metadata().is_ok_and(|m| m.is_file()) {
                let aside = self.txn_path(txn, "old", path).map_err(at)?;
                let moving = rename(&target, &aside, "Cannot move an earlier output aside");
                moving.map_err(at)?;
                step.old_aside = true;
            }
            let staged = self.txn_path(txn, "files", path).map_err(at)?;
            let result = rename(&staged, &target, "Cannot write output");
            step.new_in = result.is_ok();
            moved.push(step);
            result.map_err(at)?;
        }
        Ok(())
    }

    /// Undoes [`ChatFiles::move_in`], last path first, then removes the journal: the
    /// new files go back to `files/` (so a crash meanwhile still finishes the commit),
    /// the earlier outputs back into `output/`. Errors: a file that could not be moved
    /// back; the journal then stays.
    fn undo(&self, txn: &str, moved: &[Moved]) -> Result<()> {
        for step in moved.iter().rev() {
            let target = self.output_path(&step.path)?;
            if step.new_in {
                let staged = self.txn_path(txn, "files", &step.path)?;
                rename(&target, &staged, "Cannot take back an output")?;
            }
            if step.old_aside {
                let aside = self.txn_path(txn, "old", &step.path)?;
                rename(&aside, &target, "Cannot restore an earlier output")?;
            } else {
                self.remove_empty_parents(&target);
            }
        }
        let journal = self.journal_path(txn)?;
        std::fs::remove_file(&journal)
            .map_err(|e| Error::io("Cannot abort an output commit", e))?;
        if let Some(dir) = journal.parent() {
            sync_dir(dir);
        }
        Ok(())
    }

    /// Folders of `output/` that moving `target` in created and that are empty again.
    fn remove_empty_parents(&self, target: &Path) {
        let Ok(root) = self.store.chat_path(self.id, "output") else {
            return;
        };
        let mut dir = target.parent();
        while let Some(d) = dir {
            if d == root || !d.starts_with(&root) || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    /// `staging/{txn}/journal.json`, the commit point.
    fn journal_path(&self, txn: &str) -> Result<PathBuf> {
        self.store
            .chat_path(self.id, &format!("{txn}/journal.json"))
    }

    /// `staging/{txn}/{part}/{path}`.
    fn txn_path(&self, txn: &str, part: &str, path: &str) -> Result<PathBuf> {
        self.store
            .chat_path(self.id, &format!("{txn}/{part}/{path}"))
    }

    /// Removes an uncommitted (or undone) staging directory, and `staging/` when it is
    /// empty. Best effort: a leftover without a journal is discarded on the next open.
    fn discard(&self, txn: &str) {
        if let Ok(dir) = self.store.chat_path(self.id, txn) {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Ok(dir) = self.store.chat_path(self.id, "staging") {
            let _ = std::fs::remove_dir(dir);
        }
    }

    /// Removes a finished commit's directory, and `staging/` when no other commit is
    /// staged.
    fn remove_txn(&self, txn: &str) -> Result<()> {
        let dir = self.store.chat_path(self.id, txn)?;
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io("Cannot clean up staged output", e))?;
        let _ = std::fs::remove_dir(self.store.chat_path(self.id, "staging")?);
        Ok(())
    }

    /// Finishes a journaled commit a crash interrupted: moves every file still staged
    /// into `output/` and removes the directory (earlier outputs kept aside go with it).
    fn finish_staged(&self, txn: &str) -> Result<()> {
        let journal = self.journal_path(txn)?;
        let paths: Vec<String> =
            crate::project::fsutil::read_state(&journal, crate::project::state_file::SMALL_CAP)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
        for path in &paths {
            let staged = self.txn_path(txn, "files", path)?;
            if !staged.is_file() {
                continue; // moved before the interruption
            }
            rename(&staged, &self.output_path(path)?, "Cannot write output")?;
        }
        self.remove_txn(txn)
    }

    /// Completes or discards output commits interrupted by a crash (see
    /// [`ChatFiles::commit_outputs`]). Called when a chat is opened.
    pub fn recover_staged(&self) -> Result<()> {
        let root = self.store.chat_path(self.id, "staging")?;
        let Ok(entries) = std::fs::read_dir(&root) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let txn = format!("staging/{name}");
            let journal = self.journal_path(&txn)?;
            // Only a journal known to be absent discards the commit; one that cannot
            // be looked at now (a permission error) leaves it for a later open
            // (Durability 9).
            match journal.symlink_metadata() {
                Ok(m) if m.is_file() => {
                    self.finish_staged(&txn)?;
                    continue;
                }
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io("Cannot look at a staged output commit", e));
                }
                _ => {}
            }
            let dir = self.store.chat_path(self.id, &txn)?;
            std::fs::remove_dir_all(&dir)
                .map_err(|e| Error::io("Cannot discard staged output", e))?;
        }
        let _ = std::fs::remove_dir(&root);
        Ok(())
    }
}

/// Renames `from` to `to`, creating `to`'s folder. Errors (`io`): `doing` and the
/// system's reason.
fn rename(from: &Path, to: &Path, doing: &str) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(doing, e))?;
    }
    std::fs::rename(from, to).map_err(|e| Error::io(doing, e))
}
