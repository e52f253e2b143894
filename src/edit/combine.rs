//! Three-way merges: of lines, for an edit written against the version the model was
//! shown after edits of the same response already changed that version; of characters,
//! for a changed line whose copy in `old_string` differed from the file (typographic
//! characters the model folded to ASCII stay as the file has them).
//!
//! Both sides' changes apply when they neither touch nor overlap; otherwise the merge
//! is refused.

use std::hash::Hash;

use similar::{Algorithm, DiffOp, capture_diff_slices};

/// One change of `base`: items `start..end` replaced by `items`.
#[derive(Debug, Clone, PartialEq)]
struct Hunk<T> {
    start: usize,
    end: usize,
    items: Vec<T>,
}

fn hunks<T: Hash + Eq + Clone>(base: &[T], other: &[T]) -> Vec<Hunk<T>> {
    capture_diff_slices(Algorithm::Myers, base, other)
        .into_iter()
        .filter_map(|op| {
            let (start, end, from, len) = match op {
                DiffOp::Equal { .. } => return None,
                DiffOp::Delete {
                    old_index,
                    old_len,
                    new_index,
                } => (old_index, old_index + old_len, new_index, 0),
                DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                } => (old_index, old_index, new_index, new_len),
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => (old_index, old_index + old_len, new_index, new_len),
            };
            Some(Hunk {
                start,
                end,
                items: other[from..from + len].to_vec(),
            })
        })
        .collect()
}

/// Merges `base → ours` and `base → theirs`; `None` when a change of one side touches
/// or overlaps a change of the other. The same change on both sides is made once.
fn merge_slices<T: Hash + Eq + Clone>(base: &[T], ours: &[T], theirs: &[T]) -> Option<Vec<T>> {
    let mine = hunks(base, ours);
    let other: Vec<Hunk<T>> = hunks(base, theirs)
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
    let mut all: Vec<Hunk<T>> = mine.into_iter().chain(other).collect();
    all.sort_by_key(|h| (h.start, h.end));
    let mut out = Vec::new();
    let mut i = 0;
    for h in all {
        out.extend_from_slice(&base[i..h.start]);
        out.extend(h.items);
        i = h.end;
    }
    out.extend_from_slice(&base[i..]);
    Some(out)
}

/// Merges two edited versions of `base` line by line, endings included.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> Option<String> {
    let split = |s: &str| -> Vec<String> { s.split_inclusive('\n').map(str::to_owned).collect() };
    let pieces = merge_slices(&split(base), &split(ours), &split(theirs))?;
    // A line without an ending can only be the last one.
    let n = pieces.len();
    if pieces
        .iter()
        .take(n.saturating_sub(1))
        .any(|p| !p.ends_with('\n'))
    {
        return None;
    }
    Some(pieces.concat())
}

/// Merges two edited versions of one line character by character.
pub fn merge3_chars(base: &str, ours: &str, theirs: &str) -> Option<String> {
    let chars = |s: &str| -> Vec<char> { s.chars().collect() };
    merge_slices(&chars(base), &chars(ours), &chars(theirs)).map(|v| v.into_iter().collect())
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
        assert_eq!(
            merge3_chars("x = 1 - 2", "x = 1 \u{2014} 2", "x = 10 - 2").as_deref(),
            Some("x = 10 \u{2014} 2")
        );
    }
}
