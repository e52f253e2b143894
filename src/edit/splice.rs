//! Finding a region's candidate windows and rebuilding a file around the replaced
//! regions: the two steps every matching pass shares around `replay::render`.

use super::replay::{Norm, OutLine};
use super::text::Doc;

/// Start indexes of the non-overlapping windows of `doc` equal to `old` under `norm`.
pub(crate) fn windows(doc: &Doc, old: &[String], norm: Norm) -> Vec<usize> {
    let k = old.len();
    if k == 0 || k > doc.lines.len() {
        return Vec::new();
    }
    let want: Vec<String> = old.iter().map(|l| norm.apply(l)).collect();
    let have: Vec<String> = doc.lines.iter().map(|l| norm.apply(l.text)).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + k <= have.len() {
        if have[i..i + k] == want[..] {
            out.push(i);
            i += k;
        } else {
            i += 1;
        }
    }
    out
}

/// Start indexes of every window of `doc` equal to `old` under `norm`, overlapping
/// ones included.
pub(crate) fn overlapping_windows(doc: &Doc, old: &[String], norm: Norm) -> Vec<usize> {
    let k = old.len();
    if k == 0 || k > doc.lines.len() {
        return Vec::new();
    }
    let want: Vec<String> = old.iter().map(|l| norm.apply(l)).collect();
    let have: Vec<String> = doc.lines.iter().map(|l| norm.apply(l.text)).collect();
    (0..=have.len() - k)
        .filter(|&i| have[i..i + k] == want[..])
        .collect()
}

/// Rebuilds the file with `parts` (start line, line count, replacement) in place. Every
/// line but the last gets an ending; the last keeps the file's final newline unless
/// `final_newline` says the edit changed it.
pub(crate) fn splice(
    doc: &Doc,
    mut parts: Vec<(usize, usize, Vec<OutLine>)>,
    final_newline: Option<bool>,
) -> String {
    parts.sort_by_key(|p| p.0);
    let mut lines: Vec<OutLine> = Vec::new();
    let mut i = 0;
    for (start, len, repl) in parts {
        for l in &doc.lines[i..start] {
            lines.push(OutLine {
                text: l.text.to_owned(),
                end: Some(l.end.to_owned()),
            });
        }
        lines.extend(repl);
        i = start + len;
    }
    for l in &doc.lines[i..] {
        lines.push(OutLine {
            text: l.text.to_owned(),
            end: Some(l.end.to_owned()),
        });
    }
    let final_newline = final_newline.unwrap_or(doc.final_newline);
    let mut out = String::new();
    let n = lines.len();
    for (j, l) in lines.into_iter().enumerate() {
        out.push_str(&l.text);
        let end = match l.end {
            Some(e) if !e.is_empty() => e,
            _ => doc.eol.to_owned(),
        };
        if j + 1 < n || final_newline {
            out.push_str(&end);
        }
    }
    out
}

/// The lines a deletion of `len` lines at `start` removes: with them, blank lines that
/// would otherwise pile up. Where the blank runs above and below meet, the longer one
/// stays; at the start or end of the file, none does.
pub fn deletion_span(doc: &Doc, start: usize, len: usize) -> (usize, usize) {
    let blank = |i: usize| doc.lines[i].text.trim().is_empty();
    let end = start + len;
    let above = (0..start).rev().take_while(|&i| blank(i)).count();
    let below = (end..doc.lines.len()).take_while(|&i| blank(i)).count();
    if (start..end).all(blank) {
        return (start, len);
    }
    if end == doc.lines.len() {
        (start - above, len + above)
    } else if start == 0 {
        (start, len + below)
    } else {
        (start, len + above.min(below))
    }
}
