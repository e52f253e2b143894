//! The `anchored` schema: a region from unique start lines through the first end lines
//! after them, replaced by the given lines.

use super::error::{EditError, not_found};
use super::replay::{Norm, Region, render};
use super::splice::{splice, windows};
use super::text::Doc;

/// Replaces the region from the lines `start` through the first following lines equal
/// to `end` (the region is `start` alone without `end`) with `content` (the `anchored`
/// schema). Lines compare exactly, then up to trailing whitespace, then up to
/// surrounding whitespace; `start` must match exactly once.
pub fn anchored(
    text: &str,
    start: &[String],
    end: Option<&[String]>,
    content: &[String],
) -> Result<String, EditError> {
    if start.iter().all(|l| l.trim().is_empty()) {
        return Err(EditError::Invalid(
            "start must hold at least one non-blank line".into(),
        ));
    }
    let doc = Doc::parse(text);
    let mut found = None;
    for norm in [Norm::Exact, Norm::TrimEnd, Norm::Trim, Norm::Loose] {
        let hits = windows(&doc, start, norm);
        match hits[..] {
            [] => continue,
            [one] => {
                found = Some((one, norm));
                break;
            }
            _ => {
                return Err(EditError::NotUnique {
                    match_lines: hits.iter().map(|h| h + 1).collect(),
                });
            }
        }
    }
    let Some((s, norm)) = found else {
        return Err(not_found(text, &start.join("\n")));
    };
    let mut old: Vec<String> = start.to_vec();
    if let Some(end) = end.filter(|e| !e.is_empty()) {
        let from = s + start.len();
        let e = find_end(&doc, from, end)?.ok_or_else(|| {
            EditError::Invalid(format!(
                "end not found after the start at line {}: {}",
                s + 1,
                end.join(" / ")
            ))
        })?;
        // End lines matched up to whitespace; the file's own text carries their depth.
        old.extend((from..e + end.len()).map(|i| doc.lines[i].text.to_owned()));
    }
    let new: Vec<String> = content
        .iter()
        .flat_map(|l| {
            l.replace("\r\n", "\n")
                .split('\n')
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let region = Region {
        start: s,
        old,
        new,
        norm: if norm == Norm::Exact {
            Norm::Trim
        } else {
            norm
        },
        fragment: false,
    };
    let len = region.old.len();
    let out = render(&doc, &region)?;
    Ok(splice(&doc, vec![(s, len, out)], None))
}

/// The first occurrence of `end` at or after line `from`, compared exactly, then up to
/// trailing whitespace, then up to indentation. Up to indentation, several candidates
/// are ambiguous (an inner `}` or the block's own?) and refused.
fn find_end(doc: &Doc, from: usize, end: &[String]) -> Result<Option<usize>, EditError> {
    for norm in [Norm::Exact, Norm::TrimEnd, Norm::Trim] {
        let want: Vec<String> = end.iter().map(|l| norm.apply(l)).collect();
        let hits: Vec<usize> = (from..=doc.lines.len().saturating_sub(end.len()))
            .filter(|&i| {
                (0..end.len()).all(|j| {
                    doc.lines.get(i + j).map(|l| norm.apply(l.text)).as_ref() == Some(&want[j])
                })
            })
            .collect();
        match hits[..] {
            [] => continue,
            [first, ..] if norm != Norm::Trim || hits.len() == 1 => return Ok(Some(first)),
            _ => {
                return Err(EditError::NotUnique {
                    match_lines: hits.iter().map(|h| h + 1).collect(),
                });
            }
        }
    }
    Ok(None)
}
