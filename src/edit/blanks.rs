//! The pass for an `old_string` whose blank lines inside differ from the file's (a blank
//! line left out between two methods, or two collapsed into one).
//!
//! It applies when the non-blank lines match exactly one region and the model kept a line
//! next to each differing gap unchanged: the file's own blank lines then stay there. A
//! gap between two lines the edit deletes, with nothing written in their place, is
//! deleted with them. When the edit rewrites the lines on both sides of such a gap it is
//! refused.

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::error::EditError;
use super::replay::{Norm, Region, render};
use super::splice::splice;
use super::text::Doc;
use crate::text::model_lines;

/// Applies `old` → `new` ignoring blank-line differences inside `old`; `Ok(None)` when
/// the pass does not apply.
pub fn blank_insensitive(doc: &Doc, old: &str, new: &str) -> Result<Option<String>, EditError> {
    let old_l = model_lines(old);
    let mut new_l = model_lines(new);
    let blank = |l: &String| l.trim().is_empty();
    if old_l.first().is_none_or(blank) || old_l.last().is_none_or(blank) {
        return Ok(None);
    }
    let nb: Vec<usize> = (0..old_l.len()).filter(|&i| !blank(&old_l[i])).collect();
    if nb.len() < 2 {
        return Ok(None);
    }
    let want: Vec<String> = nb.iter().map(|&i| Norm::Loose.apply(&old_l[i])).collect();
    let file_nb: Vec<usize> = (0..doc.lines.len())
        .filter(|&i| !doc.lines[i].text.trim().is_empty())
        .collect();
    let have: Vec<String> = file_nb
        .iter()
        .map(|&i| Norm::Loose.apply(doc.lines[i].text))
        .collect();
    let hits: Vec<usize> = (0..(have.len() + 1).saturating_sub(want.len()))
        .filter(|&h| have[h..h + want.len()] == want[..])
        .collect();
    let h = match hits[..] {
        [] => return Ok(None),
        [h] => h,
        _ => {
            return Err(EditError::NotUnique {
                match_lines: hits.iter().map(|&h| file_nb[h] + 1).collect(),
            });
        }
    };
    let f: Vec<usize> = (0..nb.len()).map(|k| file_nb[h + k]).collect();
    let on: Vec<String> = old_l.iter().map(|l| Norm::Loose.apply(l)).collect();
    let nn: Vec<String> = new_l.iter().map(|l| Norm::Loose.apply(l)).collect();
    let mut kept: Vec<Option<usize>> = vec![None; old_l.len()];
    for op in capture_diff_slices(Algorithm::Myers, &on, &nn) {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for t in 0..len {
                kept[old_index + t] = Some(new_index + t);
            }
        }
    }
    // The file's region with one model line per file line; gaps that differ take the
    // file's blank lines, in old and new alike.
    let mut aligned: Vec<String> = Vec::new();
    let mut gaps: Vec<(usize, usize, usize)> = Vec::new();
    for k in 0..nb.len() {
        aligned.push(old_l[nb[k]].clone());
        if k + 1 == nb.len() {
            break;
        }
        let model_gap = nb[k + 1] - nb[k] - 1;
        let file_gap = f[k + 1] - f[k] - 1;
        aligned.extend(std::iter::repeat_n(String::new(), file_gap));
        if model_gap == file_gap {
            continue;
        }
        // Both neighbours deleted, and new_string puts nothing in their place: the gap
        // lies inside the deleted lines and goes with them, whatever its length.
        let before_kept = (0..=nb[k]).rev().find_map(|i| kept[i]);
        let after_kept = (nb[k + 1]..old_l.len()).find_map(|i| kept[i]);
        if kept[nb[k]].is_none()
            && kept[nb[k + 1]].is_none()
            && before_kept.map_or(0, |a| a + 1) == after_kept.unwrap_or(new_l.len())
        {
            continue;
        }
        // A line new_string adds between the two kept lines around a gap the model
        // wrote otherwise may belong before or after the file's blank lines there.
        if let (Some(a), Some(b)) = (kept[nb[k]], kept[nb[k + 1]])
            && new_l[a + 1..b].iter().any(|l| !blank(l))
        {
            return Err(EditError::Invalid(format!(
                "old_string has other blank lines than lines {}-{} of the file, and new_string adds lines there: whether they go before or after the blank lines is unsure; copy the blank lines too",
                f[k] + 1,
                f[k + 1] + 1
            )));
        }
        // The gap's place in new_string: right after the kept line before it, or right
        // before the kept line after it, where the model's own blank lines are.
        let is_blank =
            |r: std::ops::Range<usize>| new_l.get(r).is_some_and(|s| s.iter().all(blank));
        let after = kept[nb[k]].map(|a| (a + 1, a + 1 + model_gap));
        let before = kept[nb[k + 1]].and_then(|b| Some((b.checked_sub(model_gap)?, b)));
        match after
            .filter(|&(x, y)| is_blank(x..y))
            .or(before.filter(|&(x, y)| is_blank(x..y)))
        {
            Some((x, y)) => gaps.push((x, y, file_gap)),
            None => {
                return Err(EditError::Invalid(format!(
                    "old_string has other blank lines than lines {}-{} of the file, next to lines the edit changes; copy the blank lines too",
                    f[k] + 1,
                    f[k + 1] + 1
                )));
            }
        }
    }
    for (from, to, count) in gaps.into_iter().rev() {
        new_l.splice(from..to, std::iter::repeat_n(String::new(), count));
    }
    let region = Region {
        start: f[0],
        old: aligned,
        new: new_l,
        norm: Norm::Loose,
        fragment: false,
    };
    let len = region.old.len();
    if region.new.is_empty() {
        // A whole deletion, as the line passes make one: with the blank lines that
        // would otherwise pile up.
        let (s, len) = super::splice::deletion_span(doc, f[0], len);
        return Ok(Some(splice(doc, vec![(s, len, Vec::new())], None)));
    }
    let out = render(doc, &region)?;
    Ok(Some(splice(doc, vec![(f[0], len, out)], None)))
}
