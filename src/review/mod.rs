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

use crate::diff::{self as hunks, Edit, Hunk, apply_edits, overlaps, user_edits};
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
    /// the output is applied or discarded as a whole); `accepted` also for a hunk the
    /// file on disk already holds (`on_disk`).
    pub state: HunkState,
    /// It does not touch lines the user changed on disk, or the file on disk already
    /// holds it.
    pub applies_cleanly: bool,
    /// Larger than the limits and could not be split.
    pub oversized: bool,
    /// The file on disk already holds this change (the user made the same change, or
    /// took the model's version by hand): it is not pending, and the next decision
    /// about the file records it as accepted without writing it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_disk: bool,
    /// Invisible characters its `+` lines hold, as `U+202E`, each once
    /// (docs/PROTOCOL.md "Invisible characters"); a review shows them as `<U+202E>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invisible: Vec<String>,
}

/// How much of a file's pending change the file on disk already holds
/// (`get_file_statuses`' `on_disk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OnDisk {
    /// Every pending hunk: applying the output changes nothing more.
    #[serde(rename = "all")]
    All,
    /// Some of the pending hunks.
    #[serde(rename = "some")]
    Part,
}

/// Where the hunks of a file stand against the user's edits on disk.
struct Standing {
    /// Per hunk: the file on disk holds it.
    held: Vec<bool>,
    /// Per hunk: it touches a user edit that makes other text of those lines.
    clashing: Vec<bool>,
}

fn standing(base: &str, all: &[Hunk], user: &[Edit]) -> Standing {
    let edits: Vec<Edit> = all.iter().map(|h| h.edit.clone()).collect();
    let mut held = vec![false; all.len()];
    let mut clashing = vec![false; all.len()];
    for g in overlaps(base, &edits, user) {
        for i in g.theirs {
            if g.same {
                held[i] = true;
            } else {
                clashing[i] = true;
            }
        }
    }
    Standing { held, clashing }
}

/// The hunks of `path` for review. A missing final newline in any of the three texts
/// is not a change (editors often send snapshots without one).
/// Hunks the file on disk already holds come with state `accepted` and `on_disk`.
pub fn review_hunks(path: &str, base: &str, output: &str, disk: Option<&str>) -> Vec<HunkView> {
    let (base, output) = (with_nl(base), with_nl(output));
    let disk = disk.map(with_nl);
    let user = user_edits(&base, disk.as_deref());
    let all = hunks::hunks(path, &base, &output);
    let st = standing(&base, &all, &user);
    all.iter()
        .enumerate()
        .map(|(i, h)| view(h, st.held[i], st.clashing[i]))
        .collect()
}

/// How much of the change from `base` to `output` the file on disk holds; `None`
/// for none of it (or no change).
pub fn on_disk(path: &str, base: &str, output: &str, disk: Option<&str>) -> Option<OnDisk> {
    let hunks = review_hunks(path, base, output, disk);
    let held = hunks.iter().filter(|h| h.on_disk).count();
    match held {
        0 => None,
        n if n == hunks.len() => Some(OnDisk::All),
        _ => Some(OnDisk::Part),
    }
}

fn view(h: &Hunk, held: bool, clashing: bool) -> HunkView {
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
        state: if held {
            HunkState::Accepted
        } else {
            HunkState::Pending
        },
        applies_cleanly: !clashing,
        oversized: h.oversized,
        on_disk: held,
        invisible: crate::text::invisible::code_points(&h.edit.lines.concat()),
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
    /// Hunks still pending (conflicts included). A hunk the file on disk holds is
    /// never pending: unless rejected, it is applied without a write.
    pub pending: Vec<String>,
    /// Accepted hunks that touch lines the user changed; not applied.
    pub conflicts: Vec<String>,
}

/// Decides `accept` and `reject` for `path`. Hunks the file on disk already holds are
/// applied (they join the snapshot, the disk is not written for them) unless
/// rejected, whether named or not. Errors: an id that is not a current hunk (the
/// review changed; fetch it again), or one id both accepted and rejected.
pub fn decide(
    path: &str,
    base: &str,
    output: &str,
    disk: Option<&str>,
    accept: &Selection,
    reject: &Selection,
) -> Result<Decision> {
    decide_taking(path, base, output, disk, accept, reject, &[])
}

/// [`decide`], where the hunks in `take` are accepted even when they touch lines the
/// user changed: the model's version wins there (the user's edits that overlap a
/// taken hunk are dropped, the others stay). The user confirmed it (`bb7 review
/// --take`, `/review take`, docs/PROTOCOL.md `review_apply`).
pub fn decide_taking(
    path: &str,
    base: &str,
    output: &str,
    disk: Option<&str>,
    accept: &Selection,
    reject: &Selection,
    take: &[String],
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
    let taken = pick(&Selection::Ids(take.to_vec()))?;
    let mut accepted = pick(accept)?;
    accepted.extend(
        taken
            .iter()
            .filter(|i| !accepted.contains(i))
            .collect::<Vec<_>>(),
    );
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
    let mut user = user_edits(base, disk);
    let st = standing(base, &all, &user);
    let held: Vec<usize> = (0..all.len())
        .filter(|i| st.held[*i] && !accepted.contains(i) && !rejected.contains(i))
        .collect();
    accepted.extend(held);
    let (ok, conflict): (Vec<usize>, Vec<usize>) = accepted
        .iter()
        .partition(|&&i| st.held[i] || !st.clashing[i] || taken.contains(&i));
    // A taken hunk replaces the user's edits it overlaps.
    for &i in taken.iter().filter(|i| !st.held[**i]) {
        user.retain(|u| !u.conflicts_with(&all[i].edit));
    }
    let applied_edits: Vec<Edit> = ok.iter().map(|&i| all[i].edit.clone()).collect();
    let snapshot = apply_edits(base, &applied_edits);
    // The disk already holds the held hunks, as the user's edits.
    let written: Vec<Edit> = ok
        .iter()
        .filter(|&&i| !st.held[i])
        .map(|&i| all[i].edit.clone())
        .collect();
    let disk_new = (!written.is_empty()).then(|| {
        let mut both = user.clone();
        both.extend(written);
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
    fn hunks_the_disk_holds_are_applied_without_a_write() {
        // A rewrite large enough to be split into several hunks, typed in whole by the
        // user: one edit of theirs covers the pieces, which agree as a group.
        let block = |c: &str| -> String { (0..30).map(|i| format!("{c}{i}\n")).collect() };
        let base = format!("{}\n{}\n{}", block("a"), block("b"), block("c"));
        let output = base.replace('a', "A").replace('b', "B").replace('c', "C");
        let views = review_hunks("f", &base, &output, Some(&output));
        assert!(views.len() > 1, "{}", views.len());
        assert!(
            views
                .iter()
                .all(|h| h.on_disk && h.state == HunkState::Accepted)
        );
        assert_eq!(
            on_disk("f", &base, &output, Some(&output)),
            Some(OnDisk::All)
        );
        let none = Selection::Ids(vec![]);
        let d = decide("f", &base, &output, Some(&output), &none, &none).unwrap();
        assert_eq!(d.applied.len(), views.len());
        assert_eq!((d.disk, d.output), (None, None));
        assert_eq!(d.snapshot, output);
        // Part of it typed: only those hunks are held, the rest stay pending.
        let disk = base.replace('a', "A");
        assert_eq!(
            on_disk("f", &base, &output, Some(&disk)),
            Some(OnDisk::Part)
        );
        let d = decide("f", &base, &output, Some(&disk), &none, &none).unwrap();
        assert!(d.disk.is_none());
        assert_eq!(d.output.as_deref(), Some(&output[..]));
        assert_eq!(d.snapshot, disk);
        assert_eq!(on_disk("f", &base, &output, Some(&base)), None);
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
