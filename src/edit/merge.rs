//! Combining an edit written against the version the model was shown with the edits of
//! the same response that already changed that version (a line-level three-way merge).
//!
//! Models often write every edit of a response against the file as they saw it, so a
//! later edit may quote context lines an earlier edit changed. When the lines the later
//! edit changes are untouched by the earlier ones, both apply; when they touch or
//! overlap, the merge is refused.

use similar::{Algorithm, DiffOp, capture_diff_slices};

/// One change of `base`: lines `start..end` replaced by `lines`.
#[derive(Debug, Clone, PartialEq)]
struct Hunk<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

fn hunks<'a>(base: &[&'a str], other: &[&'a str]) -> Vec<Hunk<'a>> {
    capture_diff_slices(Algorithm::Myers, base, other)
        .into_iter()
        .filter_map(|op| match op {
            DiffOp::Equal { .. } => None,
            DiffOp::Delete {
                old_index, old_len, ..
            } => Some(Hunk {
                start: old_index,
                end: old_index + old_len,
                lines: Vec::new(),
            }),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => Some(Hunk {
                start: old_index,
                end: old_index,
                lines: other[new_index..new_index + new_len].to_vec(),
            }),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => Some(Hunk {
                start: old_index,
                end: old_index + old_len,
                lines: other[new_index..new_index + new_len].to_vec(),
            }),
        })
        .collect()
}

/// Merges the changes `base → ours` and `base → theirs`, line by line with their
/// endings. `None` when a change of one side touches or overlaps a change of the other.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> Option<String> {
    let b: Vec<&str> = base.split_inclusive('\n').collect();
    let o: Vec<&str> = ours.split_inclusive('\n').collect();
    let t: Vec<&str> = theirs.split_inclusive('\n').collect();
    let mine = hunks(&b, &o);
    // The same change on both sides (an edit sent twice) is made once.
    let other: Vec<Hunk> = hunks(&b, &t)
        .into_iter()
        .filter(|h| !mine.contains(h))
        .collect();
    for x in &mine {
        for y in &other {
            // Touching counts: an insertion next to a change has no clear order.
            if x.start <= y.end && y.start <= x.end {
                return None;
            }
        }
    }
    let mut all: Vec<Hunk> = mine.into_iter().chain(other).collect();
    all.sort_by_key(|h| (h.start, h.end));
    let mut pieces: Vec<&str> = Vec::new();
    let mut i = 0;
    for h in all {
        pieces.extend(b[i..h.start].iter().copied());
        pieces.extend(h.lines.iter().copied());
        i = h.end;
    }
    pieces.extend(b[i..].iter().copied());
    // A line without an ending can only be the last one.
    let n = pieces.len();
    if pieces
        .iter()
        .take(n.saturating_sub(1))
        .any(|p| !p.ends_with('\n'))
    {
        return None;
    }
    let out: String = pieces.concat();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separate_changes_merge_and_touching_ones_do_not() {
        let base = "a\nb\nc\nd\ne\n";
        assert_eq!(
            merge3(base, "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n").as_deref(),
            Some("A\nb\nc\nd\nE\n")
        );
        assert_eq!(merge3(base, "A\nb\nc\nd\ne\n", "a\nB\nc\nd\ne\n"), None);
        assert_eq!(merge3(base, "a\nb\nX\nd\ne\n", "a\nb\nY\nd\ne\n"), None);
    }
}
