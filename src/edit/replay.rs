//! Applying one matched region: the edit is the line diff from `old_string` to
//! `new_string`, replayed on the file's lines.
//!
//! Lines the model kept are copied from the file byte for byte (whitespace, tabs,
//! typographic characters, line ending). Lines it changed or inserted take the file's
//! line ending and the indentation the file uses at that place: its unit (tab or a
//! number of spaces), the offset between the model's copy and the file, and, in a file
//! that mixes tabs and spaces, the style of the neighbouring line.

use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::copy_chars::copy_trailing;
use super::error::EditError;
use super::literals;
use super::model_style::model_style;
use super::text::{Doc, Style, indent_of, mode, style_matches};

/// How lines are compared in a matching pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// Byte for byte.
    Exact,
    /// Trailing whitespace ignored.
    TrimEnd,
    /// Leading and trailing whitespace ignored.
    Trim,
    /// As `Trim`, with typographic punctuation folded to ASCII and runs of inner
    /// whitespace collapsed.
    Loose,
}

impl Norm {
    /// `line` as this pass compares it.
    pub fn apply(self, line: &str) -> String {
        match self {
            Norm::Exact => line.to_owned(),
            Norm::TrimEnd => line.trim_end().to_owned(),
            Norm::Trim => line.trim().to_owned(),
            Norm::Loose => {
                let folded = fold_punctuation(line.trim_start_matches('\u{feff}'));
                folded.split_whitespace().collect::<Vec<_>>().join(" ")
            }
        }
    }
}

/// Folds the typographic characters models substitute for ASCII ones.
pub fn fold_punctuation(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\u{2018}' | '\u{2019}' | '\u{201B}' | '\u{2032}' => out.push('\''),
            '\u{201C}' | '\u{201D}' | '\u{201F}' | '\u{2033}' => out.push('"'),
            '\u{2010}'..='\u{2015}' | '\u{2212}' => out.push('-'),
            '\u{00A0}' | '\u{2007}' | '\u{202F}' => out.push(' '),
            '\u{2026}' => out.push_str("..."),
            other => out.push(other),
        }
    }
    out
}

/// A region of the file that one edit matched.
#[derive(Debug, Clone)]
pub struct Region {
    /// Index of the first file line of the region.
    pub start: usize,
    /// The model's old lines, one per file line of the region (so the region is
    /// `start..start + old.len()`).
    pub old: Vec<String>,
    /// The model's new lines.
    pub new: Vec<String>,
    /// The comparison that matched `old` to the file.
    pub norm: Norm,
    /// Whether the model's first old line was the end of the file's line (a copy
    /// starting after code), though `old` now holds the whole line.
    pub fragment: bool,
}

/// A line of the result: its text, and the file's ending when it is a kept file line
/// (`None`: a new line, written with the file's usual ending).
#[derive(Debug, Clone, PartialEq)]
pub struct OutLine {
    /// The text without ending.
    pub text: String,
    /// The ending it had in the file.
    pub end: Option<String>,
}

/// The lines that replace `region` in `doc`.
/// Errors: a changed line would have to be indented left of column 0.
pub fn render(doc: &Doc, region: &Region) -> Result<Vec<OutLine>, EditError> {
    let file: Vec<&str> = (0..region.old.len())
        .map(|i| doc.lines[region.start + i].text)
        .collect();
    let old_n: Vec<String> = region.old.iter().map(|l| region.norm.apply(l)).collect();
    let new_n: Vec<String> = region.new.iter().map(|l| region.norm.apply(l)).collect();
    let ops = capture_diff_slices(Algorithm::Myers, &old_n, &new_n);
    // Lines inside strings: the file's (scanned from the top) and new_string's.
    let end = region.start + file.len();
    let (in_file, _) = literals::inside(doc.lines[..end].iter().map(|l| l.text), None);
    let (_, at_start) = literals::inside(doc.lines[..region.start].iter().map(|l| l.text), None);
    let text_lines = in_file.clone();
    let in_file = &in_file[region.start..];
    let (in_new, _) = literals::inside(region.new.iter().map(String::as_str), at_start);
    let mut frame = Frame::new(doc, region, &file, &ops, in_file);
    frame.text_lines = text_lines;
    // A string's new lines are written as the model wrote them, when its copies of
    // the string's lines show it copied them as they are.
    let verbatim = (0..file.len())
        .filter(|&i| in_file[i] && !region.old[i].trim().is_empty())
        .all(|i| indent_of(&region.old[i]) == indent_of(file[i]));
    let lone = !verbatim && literals::strings_only(&file, in_file);
    // In a copy shifted from the file's depth, an indented new string line may carry
    // the shift or not (one at column 0 is at column 0 either way), unless an
    // indented string line the model copied exactly shows it left them as they are.
    let shifted =
        frame.offset != 0 || frame.cols.is_some_and(|d| d != 0) || frame.model != doc.style;
    let shown = (0..file.len()).any(|i| {
        in_file[i]
            && !indent_of(file[i]).is_empty()
            && indent_of(&region.old[i]) == indent_of(file[i])
    });
    let shifted = shifted && !shown;
    let string_line = |n: usize, anchor: usize| -> Result<OutLine, EditError> {
        if !verbatim || (shifted && !indent_of(&region.new[n]).is_empty()) {
            return Err(EditError::Invalid(format!(
                "the new line {:?} is inside a multi-line string, where indentation is part of the text, and old_string's copy of that string is indented differently from the file; copy it with the file's exact indentation",
                region.new[n].trim()
            )));
        }
        Ok(OutLine {
            text: region.new[n].clone(),
            end: Some(
                doc.lines[region.start + anchor.min(file.len() - 1)]
                    .end
                    .to_owned(),
            ),
        })
    };
    if let Some((a, b)) = frame.nesting
        && places_lines(region, &ops)
    {
        let (fa, fb) = (region.start + a + 1, region.start + b + 1);
        return Err(EditError::Invalid(format!(
            "old_string nests lines {fa} and {fb} differently from the file (their depths relative to each other differ), so where the changed lines belong is unsure; copy old_string with the file's exact indentation"
        )));
    }
    if let Some((a, b)) = twin_removed(region, &old_n, &ops) {
        return Err(EditError::Invalid(format!(
            "lines {} and {} read the same once indentation is ignored, and the edit removes or changes only one of them: which one is unsure; copy old_string with the file's exact indentation",
            region.start + a + 1,
            region.start + b + 1
        )));
    }
    let trail = copy_trailing(&region.old, &file);
    let mut out = Vec::new();
    for op in ops {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for t in 0..len {
                    let (o, n) = (old_index + t, new_index + t);
                    let (old, new) = (&region.old[o], &region.new[n]);
                    // A line the model copied exactly and then changed in a way the
                    // pass ignores (say, removed trailing spaces) was changed on purpose;
                    // so was one it moved to another depth.
                    let deliberate = region.norm != Norm::Exact
                        && new != old
                        && (old == file[o] || frame.moved(doc, &file, o, new));
                    if deliberate {
                        out.push(frame.place(doc, region, &file, new, o, false)?);
                    } else {
                        out.push(kept(doc, region.start + o));
                    }
                }
            }
            DiffOp::Delete { .. } => {}
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => {
                for t in 0..new_len {
                    // An inserted line follows the region line above it.
                    let anchor = old_index.saturating_sub(1).min(file.len() - 1);
                    let line = &region.new[new_index + t];
                    if in_new[new_index + t] {
                        out.push(string_line(new_index + t, anchor)?);
                        continue;
                    }
                    if lone && !line.trim().is_empty() {
                        return Err(literals::unplaced(line));
                    }
                    let line = trail.strip(line);
                    if let Some(o) = super::copy_chars::moved_copy(&region.old, &file, line) {
                        out.push(kept(doc, region.start + o));
                        continue;
                    }
                    let placed = frame.place(doc, region, &file, line, anchor, false)?;
                    super::recipes::tab_kept(doc, region.start, &file, anchor, &placed.text)?;
                    out.push(placed);
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                for t in 0..new_len {
                    let paired = t < old_len;
                    let anchor = old_index + t.min(old_len - 1);
                    if in_new[new_index + t] {
                        out.push(string_line(new_index + t, anchor)?);
                        continue;
                    }
                    let mut line = trail.strip(&region.new[new_index + t]).to_owned();
                    if let Some(o) = super::copy_chars::moved_copy(&region.old, &file, &line) {
                        out.push(kept(doc, region.start + o));
                        continue;
                    }
                    if paired {
                        line = keep_file_characters(&region.old[anchor], file[anchor], &line);
                    }
                    let placed = frame.place(doc, region, &file, &line, anchor, paired)?;
                    super::recipes::tab_kept(doc, region.start, &file, anchor, &placed.text)?;
                    out.push(placed);
                }
            }
        }
    }
    Ok(out)
}

/// Two neighbouring old lines that compare equal in this pass but differ as the
/// model wrote them, of which the diff removes (or changes) one and keeps the other:
/// the pass cannot tell which one the model meant.
fn twin_removed(region: &Region, old_n: &[String], ops: &[DiffOp]) -> Option<(usize, usize)> {
    if region.norm == Norm::Exact {
        return None;
    }
    let mut gone = vec![false; old_n.len()];
    for op in ops {
        if let DiffOp::Delete {
            old_index, old_len, ..
        }
        | DiffOp::Replace {
            old_index, old_len, ..
        } = *op
        {
            gone[old_index..old_index + old_len].fill(true);
        }
    }
    (1..old_n.len()).find_map(|i| {
        let twins = old_n[i] == old_n[i - 1] && region.old[i] != region.old[i - 1];
        (twins && gone[i] != gone[i - 1]).then_some((i - 1, i))
    })
}

/// Whether the edit writes a non-blank line that is not a kept file line (one that
/// must be placed at a depth).
fn places_lines(region: &Region, ops: &[DiffOp]) -> bool {
    ops.iter().any(|op| match *op {
        DiffOp::Insert {
            new_index, new_len, ..
        }
        | DiffOp::Replace {
            new_index, new_len, ..
        } => region.new[new_index..new_index + new_len]
            .iter()
            .any(|l| !l.trim().is_empty()),
        _ => false,
    })
}

/// A changed line whose copy in old_string differs from the file's line beyond
/// whitespace (typographic characters folded to ASCII): the model's change is replayed
/// on the file's line, so the characters it did not touch stay as the file has them.
/// Unrelated pairs and changes that touch those characters keep the model's line.
fn keep_file_characters(old: &str, file: &str, new: &str) -> String {
    let (o, f, n) = (old.trim(), file.trim(), new.trim());
    if o == f || Norm::Loose.apply(o) != Norm::Loose.apply(f) {
        return new.to_owned();
    }
    if similar::TextDiff::from_chars(o, n).ratio() < 0.5 {
        return new.to_owned();
    }
    if let Some(body) = super::copy_chars::file_spacing(o, f, n) {
        return format!("{}{body}", indent_of(new));
    }
    match super::combine::merge3_chars(o, f, n) {
        Some(body) => format!("{}{body}", indent_of(new)),
        None => new.to_owned(),
    }
}

fn kept(doc: &Doc, i: usize) -> OutLine {
    let l = doc.lines[i];
    OutLine {
        text: l.text.to_owned(),
        end: Some(l.end.to_owned()),
    }
}

/// How the model's indentation maps onto the file's in one region.
struct Frame {
    /// The style the model wrote in.
    model: Style,
    /// Levels to add to the model's indentation (the usual offset of the region).
    offset: isize,
    /// The offset of the first line when it differs from the rest (a first line
    /// copied without its indentation).
    first: Option<isize>,
    /// Two region lines (indexes) that old_string nests differently from the file:
    /// no one offset maps the model's depths onto the file's.
    nesting: Option<(usize, usize)>,
    /// Whether the kept lines of new_string showed which frame the model wrote it in
    /// (its own, shifted like old_string, or the file's).
    framed: bool,
    /// Columns to add to every model line, when old_string is the file's lines shifted
    /// as a whole by that many spaces.
    cols: Option<isize>,
    /// How many lines agree on `cols` (off the grid, one line is too little evidence).
    cols_lines: usize,
    /// Region lines (indexes) that are aligned continuation lines, not levels.
    aligned: Vec<usize>,
    /// By file line from the top to the region's end: inside a multi-line string.
    text_lines: Vec<bool>,
    /// Whether old_string starts after code on the file's first line of the region:
    /// that line's columns say nothing about the copy's, so the lines after it are
    /// the only evidence of the shift, and one such line is enough.
    fragment: bool,
}

impl Frame {
    fn new(doc: &Doc, region: &Region, file: &[&str], ops: &[DiffOp], strings: &[bool]) -> Frame {
        let model = model_style(doc, &region.old, &region.new, file, strings);
        let level = |s: &str, style: Style| style.measure(indent_of(s)).0 as isize;
        // Lines inside strings say how the model copied them, not how code nests; they
        // are read only when the copy holds nothing else.
        let code = (0..file.len()).any(|i| !strings[i] && !file[i].trim().is_empty());
        let offsets: Vec<(usize, isize)> = (0..file.len())
            .filter(|&i| {
                !region.old[i].trim().is_empty()
                    && !file[i].trim().is_empty()
                    && (!strings[i] || !code)
            })
            .map(|i| {
                (
                    i,
                    level(file[i], doc.style_of(file[i])) - level(&region.old[i], model),
                )
            })
            .collect();
        // The model's lines nest as the file's do when one offset maps them all (the
        // first line may have lost its indentation alone, a copying habit). Lines
        // aligned inside brackets are not levels and say nothing.
        let shift = |i: usize| {
            let (ol, orem) = model.measure(indent_of(&region.old[i]));
            let (fl, frem) = doc.style_of(file[i]).measure(indent_of(file[i]));
            (fl as isize - ol as isize, frem as isize - orem as isize)
        };
        // A line that continues the one above and sits off the grid is aligned, not
        // nested.
        let continued = |i: usize| {
            let aligned = model.measure(indent_of(&region.old[i])).1 != 0
                || doc.style_of(file[i]).measure(indent_of(file[i])).1 != 0;
            aligned
                && (0..i)
                    .rev()
                    .find(|&j| !region.old[j].trim().is_empty())
                    .is_some_and(|j| super::indent_rule::continues(&region.old[j]))
        };
        // The usual offset, from the lines that nest (aligned continuation lines say
        // nothing of levels), or from all lines when none does.
        let nesting: Vec<&(usize, isize)> = offsets.iter().filter(|p| !continued(p.0)).collect();
        let pool = if nesting.is_empty() {
            offsets.iter().collect()
        } else {
            nesting
        };
        let rest: Vec<isize> = pool
            .into_iter()
            .filter(|(i, _)| *i != 0 || offsets.len() == 1)
            .map(|&(_, o)| o)
            .collect();
        let mut offset = mode(&rest).unwrap_or(0);
        let first = offsets
            .first()
            .filter(|(i, o)| *i == 0 && *o != offset)
            .map(|&(_, o)| o);
        let lost_first = first.is_some() && indent_of(&region.old[0]).is_empty();
        let fragment = region.fragment && region.old.len() > 1;
        let judged: Vec<(usize, (isize, isize))> = offsets
            .iter()
            .filter(|&&(i, _)| !(continued(i) || (i == 0 && (lost_first || fragment))))
            .map(|&(i, _)| (i, shift(i)))
            .collect();
        // The same number of columns between every judged line and the file's: the
        // model shifted its copy as a whole (by any amount, not only whole levels).
        // Aligned continuation lines count here too: a whole shift moves them alike.
        let shifted_lines: Vec<usize> = offsets
            .iter()
            .map(|&(i, _)| i)
            .filter(|&i| !(i == 0 && (lost_first || fragment)))
            .collect();
        let spaces_only = shifted_lines.iter().all(|&i| {
            !indent_of(&region.old[i]).contains('\t') && !indent_of(file[i]).contains('\t')
        });
        let col_shift =
            |i: usize| indent_of(file[i]).len() as isize - indent_of(&region.old[i]).len() as isize;
        let cols = (spaces_only && !shifted_lines.is_empty())
            .then(|| col_shift(shifted_lines[0]))
            .filter(|&d| shifted_lines.iter().all(|&i| col_shift(i) == d));
        let nesting = judged
            .iter()
            .find(|&&(_, o)| o != judged[0].1)
            .map(|&(j, _)| (judged[0].0, j));
        // When the kept lines of new_string already sit where the file has them while
        // old_string's copies did not, the model wrote new_string in the file's frame.
        let (mut at_file, mut at_old) = (0, 0);
        for op in ops {
            if let DiffOp::Equal {
                old_index,
                new_index,
                len,
            } = *op
            {
                for t in 0..len {
                    let (o, n) = (old_index + t, new_index + t);
                    let fl = level(file[o], doc.style_of(file[o]));
                    let ol = level(&region.old[o], model);
                    let nl = level(&region.new[n], model);
                    if region.new[n].trim().is_empty() || fl == ol {
                        continue;
                    }
                    if nl == fl {
                        at_file += 1;
                    } else if nl == ol {
                        at_old += 1;
                    }
                }
            }
        }
        if at_file > at_old {
            offset = 0;
            return Frame {
                model,
                offset,
                first: None,
                nesting: None,
                framed: true,
                cols: None,
                cols_lines: 0,
                fragment: false,
                aligned: Vec::new(),
                text_lines: Vec::new(),
            };
        }
        Frame {
            model,
            offset,
            first,
            nesting,
            framed: at_file + at_old > 0,
            cols,
            cols_lines: shifted_lines.len(),
            fragment,
            aligned: offsets
                .iter()
                .map(|&(i, _)| i)
                .filter(|&i| continued(i))
                .collect(),
            text_lines: Vec::new(),
        }
    }

    /// Whether the model put a kept line `new` (old line `o`) at another depth than
    /// the file has it, once its frame is mapped onto the file's.
    fn moved(&self, doc: &Doc, file: &[&str], o: usize, new: &str) -> bool {
        if new.trim().is_empty() {
            return false;
        }
        let offset = match self.first {
            Some(f) if o == 0 => f,
            _ => self.offset,
        };
        let placed = self.model.measure(indent_of(new)).0 as isize + offset;
        placed != doc.style_of(file[o]).measure(indent_of(file[o])).0 as isize
    }

    /// A changed or inserted line, indented for the file. `anchor` is the index of the
    /// region line it replaces or follows; `paired` says it replaces that line.
    /// Where a changed or new line lands; refused when the frame puts a line written
    /// at its copied neighbour's column anywhere but at that line's column in the file
    /// (the same column in the copy is the same depth, whatever the frame says).
    fn place(
        &self,
        doc: &Doc,
        region: &Region,
        file: &[&str],
        line: &str,
        anchor: usize,
        paired: bool,
    ) -> Result<OutLine, EditError> {
        let a = anchor.min(file.len() - 1);
        let (copy, at) = (&region.old[a], file[a]);
        // A file not indented anywhere yet has no unit to map the model's to, and a copy
        // that matched byte for byte shares the file's frame: the line is the model's.
        // A line copied exactly whose indentation alone the model changed (spaces to a
        // tab in a recipe, a line re-indented on purpose) is written as the model wrote it.
        if paired && copy == at && line.trim() == copy.trim() && indent_of(line) != indent_of(copy)
        {
            let end = Some(doc.lines[region.start + a].end.to_owned());
            return Ok(OutLine {
                text: line.to_owned(),
                end,
            });
        }
        let flat = |t: &str| t.trim().is_empty() || indent_of(t).is_empty();
        if doc.lines.iter().all(|l| flat(l.text))
            && region.old.iter().zip(file).all(|(o, f)| o == f)
            && !line.trim().is_empty()
        {
            let end = Some(doc.lines[region.start + a].end.to_owned());
            return Ok(OutLine {
                text: line.to_owned(),
                end,
            });
        }
        // A first line copied at a depth of its own (the others agree on another), and
        // changed without moving: it stays where the file has it, to the column.
        let own_first = a == 0 && self.first.is_some() && !self.fragment;
        if own_first && paired && !copy.trim().is_empty() && indent_of(line) == indent_of(copy) {
            let out = self.place_by_frame(doc, region, file, line, anchor, paired)?;
            let text = format!("{}{}", indent_of(at), &line[indent_of(line).len()..]);
            return Ok(OutLine { text, end: out.end });
        }
        let out = self.place_by_frame(doc, region, file, line, anchor, paired)?;
        let disagree = !out.text.trim().is_empty()
            && !copy.trim().is_empty()
            && !at.trim().is_empty()
            && indent_of(line) == indent_of(copy)
            && indent_of(&out.text) != indent_of(at)
            && !(a == 0 && (self.first.is_some() || self.fragment));
        if disagree {
            return Err(EditError::Invalid(format!(
                "the line {:?} is written at the column of line {} in old_string, which the file indents otherwise than the rest of the copy says: its depth is unsure; copy old_string with the file's exact indentation",
                line.trim(),
                region.start + a + 1
            )));
        }
        Ok(out)
    }

    fn place_by_frame(
        &self,
        doc: &Doc,
        region: &Region,
        file: &[&str],
        line: &str,
        anchor: usize,
        paired: bool,
    ) -> Result<OutLine, EditError> {
        // A new line takes the ending of the file line it replaces or follows, so a
        // file that mixes CRLF and LF keeps each line's ending.
        let end = Some(
            doc.lines[region.start + anchor.min(file.len() - 1)]
                .end
                .to_owned(),
        );
        if line.trim().is_empty() {
            return Ok(OutLine {
                text: String::new(),
                end,
            });
        }
        let offset = match self.first {
            Some(f) if paired && anchor == 0 => f,
            _ => self.offset,
        };
        // The model moved a line it changed from its copy's depth to exactly the
        // file's: it may have written the line in the file's frame, or meant to
        // shift it. Nothing kept shows which, and the two readings differ.
        if paired
            && offset != 0
            && !self.framed
            && indent_of(line) == indent_of(file[anchor])
            && indent_of(&region.old[anchor]) != indent_of(file[anchor])
        {
            return Err(EditError::Invalid(format!(
                "line {} is indented differently in old_string than in the file, and new_string moves it to the file's indentation: whether it should move is unsure; copy old_string with the file's exact indentation",
                region.start + anchor + 1
            )));
        }
        let target =
            if line.starts_with('\t') && super::recipes::in_recipe(doc, region.start + anchor) {
                Style::Tabs
            } else {
                neighbour_style(doc, region.start, file, anchor, &self.text_lines)
            };
        let indent = indent_of(line);
        // Next to a heredoc's tab-indented lines in code indented otherwise: written in
        // the code's style it is code; else which style it meant is unsure.
        if target != neighbour_style(doc, region.start, file, anchor, &[])
            && !style_matches(self.model, target, indent)
        {
            return Err(EditError::Invalid(format!(
                "the new line {:?} follows lines inside a multi-line string indented otherwise than the code around it: whether it takes the string's indentation or the code's is unsure; write it with the code's indentation",
                line.trim()
            )));
        }
        let body = &line[indent.len()..];
        // At the column of an aligned line the model copied off the file's column: it
        // is aligned alike, where the file aligns that line.
        if self.aligned.contains(&anchor) && indent == indent_of(&region.old[anchor]) {
            let text = format!("{}{body}", indent_of(file[anchor]));
            return Ok(OutLine { text, end });
        }
        // A copy shifted as a whole: the line moves by the same columns, when that
        // lands it on the file's grid (else its levels are mapped below).
        if let (Some(d), Style::Spaces(n)) = (self.cols, target)
            && self.model == target
            && !indent.contains('\t')
            && !(paired
                && anchor == 0
                && self.first.is_some()
                && indent_of(&region.old[0]).is_empty())
        {
            let width = indent.len() as isize + d;
            let sure = self.cols_lines >= 2
                || (self.fragment && self.cols_lines == 1)
                || (width as usize).is_multiple_of(n.max(1));
            if width >= 0 && sure {
                return Ok(OutLine {
                    text: format!("{}{body}", " ".repeat(width as usize)),
                    end,
                });
            }
        }
        // Shifted as a whole onto column 0, in any style.
        if self.cols.is_some_and(|d| indent.len() as isize + d == 0) && !indent.contains('\t') {
            return Ok(OutLine {
                text: body.to_owned(),
                end,
            });
        }
        if offset == 0 && style_matches(self.model, target, indent) {
            return Ok(OutLine {
                text: line.to_owned(),
                end,
            });
        }
        let (levels, rem) = self.model.measure(indent);
        let levels = levels as isize + offset;
        if levels < 0 || super::text::tabs_then_spaces(indent, target) {
            return Err(EditError::Invalid(format!(
                "cannot tell how to indent the changed line {:?}; copy old_string with its indentation",
                line.trim()
            )));
        }
        Ok(OutLine {
            text: format!("{}{body}", target.render(levels as usize, rem)),
            end,
        })
    }
}

/// The style of the nearest indented file line at or above `anchor` (then below it),
/// else the file's usual style. Lines inside multi-line strings (`text`, by file line)
/// are not indentation: a `<<-` heredoc's tabs say nothing of the code around it.
fn neighbour_style(doc: &Doc, start: usize, file: &[&str], anchor: usize, text: &[bool]) -> Style {
    let abs = start + anchor.min(file.len().saturating_sub(1));
    let indented = |i: usize| {
        let t = doc.lines[i].text;
        (!t.trim().is_empty() && text.get(i) != Some(&true) && !indent_of(t).is_empty())
            .then(|| doc.style_of(t))
    };
    if doc.lines.is_empty() {
        return doc.style;
    }
    let abs = abs.min(doc.lines.len() - 1);
    (0..=abs)
        .rev()
        .take(50)
        .find_map(indented)
        .or_else(|| (abs..doc.lines.len()).take(50).find_map(indented))
        .unwrap_or(doc.style)
}
