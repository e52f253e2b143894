//! The indentation style the model wrote an edit in: tabs, or spaces of some width,
//! learned from its copy of the file's lines against the file's own.

use super::text::{Doc, Style, indent_of, mode, space_unit_of};

/// The style the model's lines (`old`, its copy of `file`'s lines, and `new`) are
/// written in.
/// Lines inside multi-line strings (`strings`: a heredoc's tab-indented body under
/// `<<-`, say) are text, not indentation, and teach nothing of the model's unit.
pub fn model_style(
    doc: &Doc,
    old: &[String],
    new: &[String],
    file: &[&str],
    strings: &[bool],
) -> Style {
    let text: Vec<&String> = old
        .iter()
        .zip(strings)
        .filter(|p| *p.1)
        .map(|p| p.0)
        .collect();
    let all = old.iter().chain(new.iter()).filter(|l| !text.contains(l));
    if all.clone().any(|l| l.starts_with('\t')) {
        return Style::Tabs;
    }
    // Spaces where the file has tabs: learn the width of a level from the pairs.
    let mut widths = Vec::new();
    for ((o, f), _) in old.iter().zip(file).zip(strings).filter(|(_, s)| !**s) {
        let tabs = indent_of(f).chars().take_while(|&c| c == '\t').count();
        let w = indent_of(o).len();
        if tabs > 0 && w > 0 && w.is_multiple_of(tabs) && !o.trim().is_empty() {
            widths.push((w / tabs) as isize);
        }
    }
    if let Some(w) = mode(&widths).filter(|&w| w > 0) {
        return Style::Spaces(w as usize);
    }
    // A line that continues the one above is aligned, not a level: its step (`combine(a,`
    // then `b);` eight columns in) says nothing of the unit.
    let nesting = |lines: &[String]| -> Vec<String> {
        let mut prev: Option<&String> = None;
        let mut out = Vec::new();
        for l in lines {
            if l.trim().is_empty() {
                continue;
            }
            if !prev.is_some_and(|p| super::indent_rule::continues(p)) && !text.contains(&l) {
                out.push(l.clone());
            }
            prev = Some(l);
        }
        out
    };
    let (old_levels, new_levels) = (nesting(old), nesting(new));
    let own = space_unit_of(old_levels.iter().chain(&new_levels).map(String::as_str));
    let Style::Spaces(n) = doc.style else {
        return Style::Spaces(own.unwrap_or(doc.space_unit));
    };
    let Some(m) = own.filter(|&m| m != n) else {
        return Style::Spaces(n);
    };
    // A unit other than the file's only when the copied lines step like it: each change
    // of depth in old_string is that many levels in the file too. Without such steps,
    // only when the model's depths do not fit the file's unit at all.
    let pairs: Vec<(usize, usize)> = old
        .iter()
        .zip(file)
        .zip(strings)
        .filter(|(_, s)| !**s)
        .map(|(pair, _)| pair)
        .filter(|(o, f)| {
            !o.trim().is_empty() && !indent_of(o).contains('\t') && !indent_of(f).contains('\t')
        })
        .map(|(o, f)| (indent_of(o).len(), indent_of(f).len()))
        .collect();
    let Some(&(o0, f0)) = pairs.first() else {
        return Style::Spaces(n);
    };
    let stepped = pairs.iter().any(|&(o, _)| o != o0);
    let scales = pairs.iter().all(|&(o, f)| {
        (o as isize - o0 as isize) * n as isize == (f as isize - f0 as isize) * m as isize
    });
    if stepped {
        return Style::Spaces(if scales { m } else { n });
    }
    let fits = |u: usize| pairs.iter().all(|&(o, _)| o % u == 0);
    if !fits(n) && fits(m) {
        return Style::Spaces(m);
    }
    // old_string shows no step, so new_string's own lines tell the model's unit: its
    // lines deeper than old_string's first step by that unit each time, and the file's
    // unit would put them off the depths the model's steps mean.
    let steps: Vec<usize> = new
        .iter()
        .filter(|l| !l.trim().is_empty() && !indent_of(l).contains('\t'))
        .map(|l| indent_of(l).len())
        .filter(|&w| w > o0)
        .map(|w| w - o0)
        .collect();
    let by_model = !steps.is_empty() && steps.iter().all(|s| s.is_multiple_of(m));
    Style::Spaces(if by_model && fits(m) { m } else { n })
}
