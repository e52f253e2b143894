//! `replace_all` over several exact matches: each site is replaced on its own, and the
//! lines `new_string` adds after its first take that site's indentation.
//!
//! The assumption, stated: the model wrote `new_string`'s later lines relative to the
//! column where `old_string` starts. A site at another depth gets them at its own
//! depth, so a one-line `old_string` and a two-line `new_string` never put the added
//! line at column 0. Every line keeps its own line ending (a file that mixes CRLF and
//! LF stays mixed); added lines take the ending of the line they follow.

use super::error::EditError;
use super::replay::OutLine;
use super::splice::splice;
use super::text::{Doc, indent_of};

/// Replaces `old` at each of `hits` (byte offsets into `text`, the file with `\n`
/// endings; `starts` are its line starts) by `new` re-indented for that site.
pub(crate) fn each_site(
    doc: &Doc,
    text: &str,
    starts: &[usize],
    hits: &[usize],
    old: &str,
    new: &str,
) -> Result<String, EditError> {
    let line_at = |pos: usize| starts.partition_point(|&s| s <= pos) - 1;
    let line_end = |i: usize| starts[i] + doc.lines[i].text.len();
    let ends_line = old.ends_with('\n');
    // Groups of hits that share a line become one part.
    let mut parts: Vec<(usize, usize, Vec<OutLine>)> = Vec::new();
    let mut i = 0;
    while i < hits.len() {
        let first = line_at(hits[i]);
        let mut combined = String::new();
        let mut at = starts[first];
        let mut last;
        loop {
            let (a, b) = (hits[i], hits[i] + old.len());
            combined.push_str(&text[at..a]);
            let line = line_at(a);
            let prefix = &text[starts[line]..a];
            let shift = if prefix.trim().is_empty() {
                prefix
            } else {
                indent_of(prefix)
            };
            for (n, piece) in new.split_inclusive('\n').enumerate() {
                if n > 0 && !piece.trim().is_empty() {
                    combined.push_str(shift);
                }
                combined.push_str(piece);
            }
            at = b;
            last = if ends_line {
                line_at(b - 1)
            } else {
                line_at(b.saturating_sub(1).max(a))
            };
            i += 1;
            if i >= hits.len() || line_at(hits[i]) > last {
                break;
            }
        }
        let end = if ends_line {
            at
        } else {
            line_end(last).max(at)
        };
        combined.push_str(&text[at..end]);
        if ends_line {
            if combined.ends_with('\n') {
                combined.pop();
            } else if combined.is_empty() {
                parts.push((first, last + 1 - first, Vec::new()));
                continue;
            }
        }
        let out = combined
            .split('\n')
            .enumerate()
            .map(|(n, t)| OutLine {
                text: t.to_owned(),
                end: Some(doc.lines[(first + n).min(last)].end.to_owned()),
            })
            .collect();
        parts.push((first, last + 1 - first, out));
    }
    Ok(splice(doc, parts, None))
}
