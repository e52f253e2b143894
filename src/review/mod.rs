//! Review of the model's output hunk by hunk, apply that keeps the user's own edits,
//! checkpoints and rollback (docs/PROTOCOL.md "Review, apply and rollback").
//!
//! Three versions of a file meet here: the snapshot the model saw (`base`), the
//! model's output, and the file on disk. Hunks are the changes from base to output;
//! the user's edits are the changes from base to disk. An accepted hunk is written to
//! disk together with the user's edits unless the two touch the same lines (a
//! conflict). After a decision the snapshot holds the accepted hunks and the output
//! holds the snapshot plus the hunks still pending, so the review state is simply what
//! is on disk and survives restarts.

pub mod decided;

use serde::{Deserialize, Serialize};

use crate::diff::{self as hunks, Edit, Hunk, apply_edits, user_edits};
use crate::error::{Error, Result};
use crate::text::{final_newline, set_final_newline, with_nl};

/// Where a hunk stands in its review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HunkState {
    /// Not decided yet.
    Pending,
    /// Accepted: written to disk and part of the snapshot.
    Accepted,
    /// Rejected: removed from the output.
    Rejected,
}

/// One hunk as `review_get` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HunkView {
    /// Stable id.
    pub hunk_id: String,
    /// `@@ -a,b +c,d @@`.
    pub header: String,
    /// 1-based first line in the snapshot.
    pub old_start: usize,
    /// Lines removed.
    pub old_lines: usize,
    /// 1-based first line in the output.
    pub new_start: usize,
    /// Lines added.
    pub new_lines: usize,
    /// Header plus `-`/`+` lines.
    pub patch: String,
    /// Added lines.
    pub added: usize,
    /// Removed lines.
    pub removed: usize,
    /// `pending`, or `accepted` / `rejected` for a hunk already decided (listed until
    /// the output is applied or discarded as a whole).
    pub state: HunkState,
    /// It does not touch lines the user changed on disk.
    pub applies_cleanly: bool,
    /// Larger than the limits and could not be split.
    pub oversized: bool,
}

/// The hunks of `path` for review. A missing final newline in any of the three texts
/// is not a change (editors often send snapshots without one).
pub fn review_hunks(path: &str, base: &str, output: &str, disk: Option<&str>) -> Vec<HunkView> {
    let (base, output) = (with_nl(base), with_nl(output));
    let disk = disk.map(with_nl);
    let user = user_edits(&base, disk.as_deref());
    hunks::hunks(path, &base, &output)
        .into_iter()
        .map(|h| view(&h, &user))
        .collect()
}

fn view(h: &Hunk, user: &[Edit]) -> HunkView {
    let old_n = h.old_lines.len();
    let new_n = h.edit.lines.len();
    HunkView {
        hunk_id: h.id.clone(),
        header: h.header(),
        old_start: if old_n == 0 {
            h.edit.start
        } else {
            h.edit.start + 1
        },
        old_lines: old_n,
        new_start: if new_n == 0 {
            h.new_start
        } else {
            h.new_start + 1
        },
        new_lines: new_n,
        patch: h.patch(),
        added: new_n,
        removed: old_n,
        state: HunkState::Pending,
        applies_cleanly: !user.iter().any(|u| u.conflicts_with(&h.edit)),
        oversized: h.oversized,
    }
}

/// The hunks a decision settled, as they looked when decided, with their new state.
pub fn decided_views(
    path: &str,
    base: &str,
    output: &str,
    disk: Option<&str>,
    d: &Decision,
) -> Vec<HunkView> {
    review_hunks(path, base, output, disk)
        .into_iter()
        .filter_map(|mut h| {
            let state = if d.applied.iter().any(|(id, _)| *id == h.hunk_id) {
                HunkState::Accepted
            } else if d.rejected.iter().any(|(id, _)| *id == h.hunk_id) {
                HunkState::Rejected
            } else {
                return None;
            };
            h.state = state;
            h.applies_cleanly = true;
            Some(h)
        })
        .collect()
}

/// Which hunks a request names: a list of ids or `"all"`.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every hunk.
    All,
    /// These ids.
    Ids(Vec<String>),
}

/// The outcome of a review decision, to be written by the caller.
#[derive(Debug, Clone)]
pub struct Decision {
    /// New disk content (LF), when any hunk was applied.
    pub disk: Option<String>,
    /// New snapshot: base plus the applied hunks.
    pub snapshot: String,
    /// New output, or `None` when nothing is pending any more.
    pub output: Option<String>,
    /// Applied hunks, with their headers.
    pub applied: Vec<(String, String)>,
    /// Rejected hunks, with their headers.
    pub rejected: Vec<(String, String)>,
    /// Hunks still pending (conflicts included).
    pub pending: Vec<String>,
    /// Accepted hunks that touch lines the user changed; not applied.
    pub conflicts: Vec<String>,
}

/// Decides `accept` and `reject` for `path`. Errors: an id that is not a current hunk
/// (the review changed; fetch it again), or one id both accepted and rejected.
pub fn decide(
    path: &str,
    base: &str,
    output: &str,
    disk: Option<&str>,
    accept: &Selection,
    reject: &Selection,
) -> Result<Decision> {
    // Compared with final newlines, like the apply engine; the file on disk keeps its
    // own final newline unless the model changed the end.
    let end_newline = final_newline(Some(base), output, disk);
    let (base, output) = (&with_nl(base)[..], &with_nl(output)[..]);
    let disk_nl = disk.map(with_nl);
    let disk = disk_nl.as_deref();
    let all = hunks::hunks(path, base, output);
    let pick = |sel: &Selection| -> Result<Vec<usize>> {
        match sel {
            Selection::All => Ok((0..all.len()).collect()),
            Selection::Ids(ids) => ids
                .iter()
                .map(|id| {
                    all.iter().position(|h| &h.id == id).ok_or_else(|| {
                        Error::not_found(format!(
                            "Unknown hunk {id} in {path}: the review changed, fetch it again"
                        ))
                    })
                })
                .collect(),
        }
    };
    let accepted = pick(accept)?;
    let rejected = pick(reject)?;
    if let (Selection::All, Selection::All) = (accept, reject)
        && !all.is_empty()
    {
        return Err(Error::invalid(
            "A hunk cannot be both accepted and rejected",
        ));
    }
    if accepted.iter().any(|i| rejected.contains(i)) {
        return Err(Error::invalid(
            "A hunk cannot be both accepted and rejected",
        ));
    }
    let user = user_edits(base, disk);
    let (ok, conflict): (Vec<usize>, Vec<usize>) = accepted
        .iter()
        .partition(|&&i| !user.iter().any(|u| u.conflicts_with(&all[i].edit)));
    let applied_edits: Vec<Edit> = ok.iter().map(|&i| all[i].edit.clone()).collect();
    let snapshot = apply_edits(base, &applied_edits);
    let disk_new = (!ok.is_empty()).then(|| {
        let mut both = user.clone();
        both.extend(applied_edits.iter().cloned());
        set_final_newline(apply_edits(base, &both), end_newline)
    });
    let keep: Vec<Edit> = (0..all.len())
        .filter(|i| !rejected.contains(i))
        .map(|i| all[i].edit.clone())
        .collect();
    let output_new = apply_edits(base, &keep);
    let pending: Vec<String> = (0..all.len())
        .filter(|i| !ok.contains(i) && !rejected.contains(i))
        .map(|i| all[i].id.clone())
        .collect();
    Ok(Decision {
        disk: disk_new,
        output: (output_new != snapshot).then_some(output_new),
        snapshot,
        applied: ok
            .iter()
            .map(|&i| (all[i].id.clone(), all[i].header()))
            .collect(),
        rejected: rejected
            .iter()
            .map(|&i| (all[i].id.clone(), all[i].header()))
            .collect(),
        pending,
        conflicts: conflict.iter().map(|&i| all[i].id.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_without_final_newline_is_no_user_edit() {
        // The editor sent the snapshot without its final newline; the disk has one.
        let (base, output, disk) = ("a\nb", "a\nB", "a\nb\n");
        let views = review_hunks("f", base, output, Some(disk));
        assert_eq!(views.len(), 1);
        assert!(views[0].applies_cleanly);
        let d = decide(
            "f",
            base,
            output,
            Some(disk),
            &Selection::All,
            &Selection::Ids(vec![]),
        )
        .unwrap();
        assert!(d.conflicts.is_empty());
        assert_eq!(d.disk.as_deref(), Some("a\nB\n"));
        assert_eq!(d.applied[0].0, views[0].hunk_id);
    }

    #[test]
    fn accept_some_reject_others_keep_user_edits() {
        let base = "one\ntwo\nthree\nfour\nfive\nsix\n";
        let output = "ONE\ntwo\nthree\nFOUR\nfive\nsix\nseven\n";
        let disk = "one\ntwo\nthree (user)\nfour\nfive\nsix\n";
        let h = hunks::hunks("f", base, output);
        assert_eq!(h.len(), 3);
        let d = decide(
            "f",
            base,
            output,
            Some(disk),
            &Selection::Ids(vec![h[0].id.clone()]),
            &Selection::Ids(vec![h[2].id.clone()]),
        )
        .unwrap();
        assert_eq!(
            d.disk.as_deref(),
            Some("ONE\ntwo\nthree (user)\nfour\nfive\nsix\n")
        );
        assert_eq!(d.snapshot, "ONE\ntwo\nthree\nfour\nfive\nsix\n");
        assert_eq!(
            d.output.as_deref(),
            Some("ONE\ntwo\nthree\nFOUR\nfive\nsix\n")
        );
        assert_eq!(d.pending, vec![h[1].id.clone()]);
        // A hunk next to the user's edit still applies; one on the same line conflicts.
        let disk2 = "one\ntwo\nthree\nfour (user)\nfive\nsix\n";
        let d = decide(
            "f",
            base,
            output,
            Some(disk2),
            &Selection::All,
            &Selection::Ids(vec![]),
        )
        .unwrap();
        assert_eq!(d.conflicts, vec![h[1].id.clone()]);
        assert_eq!(
            d.disk.as_deref(),
            Some("ONE\ntwo\nthree\nfour (user)\nfive\nsix\nseven\n")
        );
        assert!(
            decide(
                "f",
                base,
                output,
                Some(disk),
                &Selection::Ids(vec!["h_nope".into()]),
                &Selection::Ids(vec![])
            )
            .is_err()
        );
    }
}
