//! The three-way merge behind every apply: base = the snapshot the model saw, theirs =
//! the model's output, ours = the file on disk now. Pure functions over text; the
//! caller reads and writes files.
//!
//! Texts are compared with LF line endings and a final newline, so a snapshot sent
//! without its final newline (as editors often do) or a CRLF file on disk do not look
//! like edits. The result is written back in the disk file's style: CRLF when the disk
//! file uses it, and the disk file's final newline unless the model changed the end.

use std::fmt;

use crate::diff::{Edit, apply_edits, edits, overlaps};
use crate::text::{final_newline, set_final_newline, with_nl};
use crate::text::{to_lf, uses_crlf, with_line_endings};

pub use crate::error::LineRange;

/// Why a merge did not go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// Both the user and the model changed these lines of the disk file.
    Overlap(Vec<LineRange>),
    /// The model wrote a new file but a different file exists on disk now.
    FileExists,
    /// The file the model edited was deleted on disk.
    FileDeleted,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Conflict::Overlap(ranges) => {
                let list: Vec<String> = ranges
                    .iter()
                    .map(|r| {
                        if r.end_line <= r.start_line {
                            format!("{}", r.start_line)
                        } else {
                            format!("{}-{}", r.start_line, r.end_line)
                        }
                    })
                    .collect();
                // "at line 7" for a single line, "at lines 7-9" / "at lines 3, 7" else.
                let one = ranges.len() == 1 && ranges[0].end_line <= ranges[0].start_line;
                write!(
                    f,
                    "your edits on disk overlap the model's changes at line{} {}",
                    if one { "" } else { "s" },
                    list.join(", ")
                )
            }
            Conflict::FileExists => f.write_str(
                "the model created it as a new file, but a different file exists on disk",
            ),
            Conflict::FileDeleted => f.write_str("it was deleted on disk"),
        }
    }
}

/// The merged text in the disk file's style, ready to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// Text to write (disk line endings).
    pub text: String,
    /// The same text with LF line endings (what snapshots hold).
    pub lf: String,
}

/// Merges the model's output into the file on disk.
///
/// `base` is the snapshot the model saw (`None`: the model created the file),
/// `theirs` the output, `ours` the disk file (`None`: it does not exist). Changes the
/// user made on lines the model did not touch survive. Overlaps are a [`Conflict`]
/// unless `force`, in which case the model's change wins on the overlapping lines and
/// the user's other edits still survive.
pub fn merge(
    base: Option<&str>,
    theirs: &str,
    ours: Option<&str>,
    force: bool,
) -> Result<Merged, Conflict> {
    let crlf = ours.is_some_and(uses_crlf);
    let theirs_lf = to_lf(theirs);
    let final_newline = final_newline(base, &theirs_lf, ours);
    let merged = match (base, ours) {
        (None, None) => theirs_lf.into_owned(),
        (Some(_), None) if !force => return Err(Conflict::FileDeleted),
        (Some(_), None) => theirs_lf.into_owned(),
        (None, Some(o)) => {
            if with_nl(&to_lf(o)) != with_nl(&theirs_lf) && !force {
                return Err(Conflict::FileExists);
            }
            with_nl(&theirs_lf)
        }
        (Some(b), Some(o)) => three_way(
            &with_nl(&to_lf(b)),
            &with_nl(&theirs_lf),
            &with_nl(&to_lf(o)),
            force,
        )?,
    };
    let lf = set_final_newline(merged, final_newline);
    let text = match ours.filter(|o| mixed_endings(o)) {
        Some(o) => endings_like(&lf, o),
        None => with_line_endings(&lf, crlf),
    };
    Ok(Merged { text, lf })
}

/// Whether `text` ends some lines with CRLF and others with LF alone.
fn mixed_endings(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf < text.matches('\n').count()
}

/// `lf` written with the line endings of `disk`, a file that mixes CRLF and LF: a
/// line the disk has keeps its own ending, a new line takes the ending of the line
/// before it (of the first line at the top), so the file stays mixed as it was.
fn endings_like(lf: &str, disk: &str) -> String {
    let disk_lines: Vec<&str> = disk.split_inclusive('\n').collect();
    let bare = |l: &str| l.trim_end_matches('\n').trim_end_matches('\r').to_owned();
    let old: Vec<String> = disk_lines.iter().map(|l| bare(l)).collect();
    let new: Vec<String> = lf.split_inclusive('\n').map(bare).collect();
    let ending = |l: &str| if l.ends_with("\r\n") { "\r\n" } else { "\n" };
    let mut ends: Vec<&str> = vec![""; new.len()];
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new);
    for op in ops {
        match op {
            similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for t in 0..len {
                    ends[new_index + t] = ending(disk_lines[old_index + t]);
                }
            }
            // A changed line keeps the ending of the line it replaces.
            similar::DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                for t in 0..new_len.min(old_len) {
                    ends[new_index + t] = ending(disk_lines[old_index + t]);
                }
            }
            _ => {}
        }
    }
    let first = disk_lines.first().map_or("\n", |l| ending(l));
    let mut out = String::with_capacity(lf.len() + new.len());
    let mut prev = first;
    for (i, line) in lf.split_inclusive('\n').enumerate() {
        let Some(body) = line.strip_suffix('\n') else {
            out.push_str(line);
            break;
        };
        let end = if ends[i].is_empty() { prev } else { ends[i] };
        out.push_str(body);
        out.push_str(end);
        prev = end;
    }
    out
}

fn three_way(base: &str, theirs: &str, ours: &str, force: bool) -> Result<String, Conflict> {
    let model = edits(base, theirs);
    let user = edits(base, ours);
    // Where the two sides touch the same lines and leave the same text there (an apply
    // repeated after a crash, the user typing or taking what the model proposed),
    // there is no conflict: the model's edits make the user's text. Elsewhere the
    // user's overlapping edits clash, and with `force` give way to the model's.
    let groups = overlaps(base, &model, &user);
    let clashing: Vec<usize> = groups
        .iter()
        .filter(|g| !g.same)
        .flat_map(|g| g.ours.iter().copied())
        .collect();
    if !clashing.is_empty() && !force {
        return Err(Conflict::Overlap(ranges_in_ours(&user, &clashing)));
    }
    let grouped: Vec<usize> = groups.iter().flat_map(|g| g.ours.clone()).collect();
    let mut all = model;
    all.extend(
        user.into_iter()
            .enumerate()
            .filter(|(i, _)| !grouped.contains(i))
            .map(|(_, u)| u),
    );
    Ok(apply_edits(base, &all))
}

/// Where the user's edits `which` (indices into `user`, the edits from the base to
/// the file on disk) sit in the file on disk.
fn ranges_in_ours(user: &[Edit], which: &[usize]) -> Vec<LineRange> {
    let mut shift: isize = 0;
    let mut out = Vec::new();
    for (i, e) in user.iter().enumerate() {
        let start = (e.start as isize + shift) as usize;
        if which.contains(&i) {
            out.push(LineRange {
                start_line: start + 1,
                end_line: start + e.lines.len(),
            });
        }
        shift += e.lines.len() as isize - (e.end - e.start) as isize;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

    #[test]
    fn user_edit_elsewhere_survives() {
        let theirs = BASE.replace("9\n", "nine\n");
        let ours = BASE.replace("2\n", "two (user)\n");
        let m = merge(Some(BASE), &theirs, Some(&ours), false).unwrap();
        assert_eq!(m.text, ours.replace("9\n", "nine\n"));
    }

    #[test]
    fn same_lines_conflict_unless_forced() {
        let theirs = BASE.replace("9\n", "nine\n");
        let ours = BASE.replace("9\n", "NINE\n").replace("2\n", "two\n");
        let e = merge(Some(BASE), &theirs, Some(&ours), false).unwrap_err();
        assert_eq!(
            e,
            Conflict::Overlap(vec![LineRange {
                start_line: 9,
                end_line: 9
            }])
        );
        assert!(e.to_string().ends_with("at line 9"), "one line: {e}");
        let two = Conflict::Overlap(vec![LineRange {
            start_line: 9,
            end_line: 10,
        }]);
        assert!(two.to_string().ends_with("at lines 9-10"), "{two}");
        let m = merge(Some(BASE), &theirs, Some(&ours), true).unwrap();
        assert_eq!(
            m.text,
            BASE.replace("9\n", "nine\n").replace("2\n", "two\n")
        );
    }

    #[test]
    fn identical_changes_are_not_conflicts() {
        let theirs = BASE.replace("9\n", "nine\n");
        let m = merge(Some(BASE), &theirs, Some(&theirs), false).unwrap();
        assert_eq!(m.text, theirs);
        // Next to the user's own edits: those survive, and only a different change of
        // the same lines is a conflict.
        let theirs = BASE.replace("2\n", "two\n").replace("9\n", "nine\n");
        let ours = BASE
            .replace("9\n", "nine\n")
            .replace("5\n", "five (user)\n");
        let m = merge(Some(BASE), &theirs, Some(&ours), false).unwrap();
        assert_eq!(m.text, ours.replace("2\n", "two\n"));
        let ours = ours.replace("2\n", "TWO\n");
        let e = merge(Some(BASE), &theirs, Some(&ours), false).unwrap_err();
        assert_eq!(
            e,
            Conflict::Overlap(vec![LineRange {
                start_line: 2,
                end_line: 2
            }])
        );
    }

    #[test]
    fn a_file_of_mixed_endings_keeps_each_lines_own() {
        let disk = "a\r\nb\r\nc\nd\r\n";
        let base = "a\nb\nc\nd\n";
        let m = merge(Some(base), "a\nb\nc2\nd\n", Some(disk), false).unwrap();
        assert_eq!(m.text, "a\r\nb\r\nc2\nd\r\n");
        let m = merge(Some(base), "a\nb\nb2\nc\nd\n", Some(disk), false).unwrap();
        assert_eq!(m.text, "a\r\nb\r\nb2\r\nc\nd\r\n");
    }

    #[test]
    fn crlf_and_final_newline_follow_the_disk() {
        // The editor sent the snapshot without its final newline; the model kept that.
        let base = "a\nb";
        let theirs = "a\nB";
        let m = merge(Some(base), theirs, Some("a\r\nb\r\n"), false).unwrap();
        assert_eq!(m.text, "a\r\nB\r\n");
        assert_eq!(m.lf, "a\nB\n");
        // A disk file without final newline keeps lacking it.
        let m = merge(Some("a\nb\n"), "a\nB\n", Some("a\nb"), false).unwrap();
        assert_eq!(m.text, "a\nB");
        // Unless the model changed the end.
        let m = merge(Some("a\nb"), "a\nB\n", Some("a\nb"), false).unwrap();
        assert_eq!(m.text, "a\nB\n");
    }

    #[test]
    fn new_and_deleted_files() {
        assert_eq!(merge(None, "x\n", None, false).unwrap().text, "x\n");
        assert_eq!(
            merge(None, "x\n", Some("mine\n"), false).unwrap_err(),
            Conflict::FileExists
        );
        assert_eq!(merge(None, "x\n", Some("x\n"), false).unwrap().text, "x\n");
        assert_eq!(
            merge(None, "x\n", Some("mine\n"), true).unwrap().text,
            "x\n"
        );
        assert_eq!(
            merge(Some("a\n"), "b\n", None, false).unwrap_err(),
            Conflict::FileDeleted
        );
        assert_eq!(merge(Some("a\n"), "b\n", None, true).unwrap().text, "b\n");
    }

    #[test]
    fn insertions_shift_reported_ranges() {
        let theirs = BASE.replace("8\n", "eight\n");
        let ours = BASE.replace("1\n", "0\n1\n").replace("8\n", "ate\nate2\n");
        let e = merge(Some(BASE), &theirs, Some(&ours), false).unwrap_err();
        assert_eq!(
            e,
            Conflict::Overlap(vec![LineRange {
                start_line: 9,
                end_line: 10
            }])
        );
    }
}
