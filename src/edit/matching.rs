//! Finding the one region of a file an edit means, then replacing it (see
//! `docs/PROTOCOL.md`, "The model's file tools").
//!
//! Passes, strictest first: the exact text (line endings ignored); lines equal up to
//! trailing whitespace; up to indentation; up to typographic punctuation and inner
//! whitespace; the same without blank lines the model added at the ends; `\n` and `\t`
//! written as escapes; a first or last line the model cut short. A pass applies only
//! when it finds exactly one region (or `replace_all` is set); a pass that finds
//! several refuses the edit, and no looser pass runs after it. The region is then
//! rewritten by [`super::replay::render`], which keeps every line the model kept.

use super::error::{EditError, not_found};
use super::replay::{Norm, Region, render};
use super::splice::{deletion_span, splice, windows};
use super::text::{Doc, on_token_boundaries, word};
use crate::text::model_lines;

type Found = Result<Option<String>, EditError>;

/// Replaces `old` with `new` in `content` (one search/replace edit).
/// Errors: empty or identical strings, no match, several matches without `replace_all`,
/// or a match that cannot be rewritten safely.
pub fn search_replace(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<String, EditError> {
    // A byte-order mark is not text of line 1: the edit applies to the text after it,
    // and the mark stays in front of whatever line 1 becomes.
    const BOM: char = '\u{feff}';
    if let Some(text) = content.strip_prefix(BOM) {
        let (old, new) = (old.trim_start_matches(BOM), new.trim_start_matches(BOM));
        return search_replace(text, old, new, replace_all).map(|out| format!("{BOM}{out}"));
    }
    let first = replace_once(content, old, new, replace_all);
    let out =
        super::normal_form::across_forms(&replace_once, content, old, new, replace_all, first)?;
    if out == content {
        return Err(EditError::Invalid(
            "this edit changes nothing: the matched text already reads like new_string".into(),
        ));
    }
    Ok(out)
}

fn replace_once(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<String, EditError> {
    if old.is_empty() {
        return Err(EditError::Invalid(
            "old_string must not be empty; use write_file to create or rewrite a file".into(),
        ));
    }
    if old == new {
        return Err(EditError::Invalid(
            "old_string and new_string are identical; this edit changes nothing".into(),
        ));
    }
    let doc = Doc::parse(content);
    let old = old.replace("\r\n", "\n");
    let new = new.replace("\r\n", "\n");
    if let Some(line) = placeholder(&old, &new, content) {
        return Err(EditError::Invalid(format!(
            "new_string holds the placeholder line {:?}; write out every line of the replacement",
            line.trim()
        )));
    }
    let (old, new) = super::make_cond::unflatten(content, &old, &new).unwrap_or((old, new));
    let new = super::indent_rule::settle(content, &old, &new)?.unwrap_or(new);
    // Deleting lines with blank lines on both sides in old_string: the blank lines are
    // the separation between the neighbours, which stays (the deletion keeps the
    // longer of the two runs of blank lines, see `deletion_span`).
    let old = match deletion_core(&old, &new) {
        Some(core) => core,
        None => old,
    };
    let new = if new.trim().is_empty() {
        String::new()
    } else {
        new
    };
    if let Some(out) = super::elision::elided(search_replace, content, &old, &new, replace_all) {
        return out;
    }
    if let Some(out) = try_passes(&doc, &old, &new, replace_all)? {
        return short_start_agrees(&doc, &old, &new, replace_all, out);
    }
    if !old.contains('\n') && ["\\n", "\\t", "\\\""].iter().any(|e| old.contains(e)) {
        let (o, n) = (unescape(&old), unescape(&new));
        if let Some(out) = try_passes(&doc, &o, &n, replace_all)? {
            return Ok(out);
        }
    }
    if let Some(out) = truncated_ends(&doc, &old, &new)? {
        return Ok(out);
    }
    Err(not_found(content, &old))
}

/// A copy whose first line is a lone bracket or two (`{`) that the line passes placed
/// at a line of its own may as well be the end of a line of code (`if x {`) elsewhere,
/// the reading [`truncated_ends`] makes. Unless the copy is exact, two readings that
/// differ are refused rather than one guessed.
fn short_start_agrees(
    doc: &Doc,
    old: &str,
    new: &str,
    replace_all: bool,
    out: String,
) -> Result<String, EditError> {
    let first = old.lines().next().unwrap_or("").trim();
    if replace_all
        || first.is_empty()
        || first.chars().count() >= 3
        || exact(doc, old, new, false, false)?.is_some()
    {
        return Ok(out);
    }
    let other = match truncated_ends(doc, old, new) {
        Err(EditError::NotUnique { .. }) => true,
        Ok(Some(o)) => o != out,
        _ => false,
    } || ends_a_line_of_code(doc, old, first);
    if other {
        return Err(EditError::Invalid(format!(
            "old_string starts with {first:?} on a line of its own, which matches a line of the file and also the end of another line of code; start old_string with the whole line it ends"
        )));
    }
    Ok(out)
}

/// Whether `first` (old's lone first line) also ends a longer line of code that the
/// rest of `old` follows, line by line up to indentation: the reading
/// [`truncated_ends`] makes only for an exact copy, taken here for a shifted one too.
fn ends_a_line_of_code(doc: &Doc, old: &str, first: &str) -> bool {
    let later: Vec<&str> = old.lines().skip(1).map(str::trim).collect();
    if later.iter().all(|l| l.is_empty()) {
        return false;
    }
    (0..doc.lines.len()).any(|i| {
        let line = doc.lines[i].text.trim_end();
        line.ends_with(first)
            && line.trim().len() > first.len()
            && later.iter().enumerate().all(|(k, l)| {
                doc.lines
                    .get(i + 1 + k)
                    .is_some_and(|f| f.text.trim() == *l)
            })
    })
}

fn try_passes(doc: &Doc, old: &str, new: &str, replace_all: bool) -> Found {
    if let Some(out) = exact(doc, old, new, replace_all, false)? {
        return Ok(Some(out));
    }
    if let Some(out) = line_passes(doc, old, new, replace_all)? {
        return Ok(Some(out));
    }
    exact(doc, old, new, replace_all, true)
}

fn line_passes(doc: &Doc, old: &str, new: &str, replace_all: bool) -> Found {
    let old_lines = model_lines(old);
    let new_lines = model_lines(new);
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return Ok(None);
    }
    let toggle = final_newline_toggle(old, new, &old_lines, &new_lines);
    for norm in [Norm::TrimEnd, Norm::Trim, Norm::Loose] {
        if let Some(out) = by_lines(doc, &old_lines, &new_lines, norm, replace_all, toggle)? {
            return Ok(Some(out));
        }
    }
    // Blank lines the model added at the ends of old_string (and copied into
    // new_string) that the file does not have there.
    let lead = old_lines.iter().take_while(|l| l.trim().is_empty()).count();
    let trail = old_lines
        .iter()
        .rev()
        .take_while(|l| l.trim().is_empty())
        .count();
    if lead + trail > 0 {
        let core = old_lines[lead..old_lines.len() - trail].to_vec();
        let nl = new_lines.iter().take_while(|l| l.trim().is_empty()).count();
        let nt = new_lines
            .iter()
            .rev()
            .take_while(|l| l.trim().is_empty())
            .count();
        let (nl, nt) = (nl.min(lead), nt.min(trail));
        let new_core = if nl + nt >= new_lines.len() {
            Vec::new()
        } else {
            new_lines[nl..new_lines.len() - nt].to_vec()
        };
        for norm in [Norm::Exact, Norm::TrimEnd, Norm::Trim, Norm::Loose] {
            if let Some(out) = by_lines(doc, &core, &new_core, norm, replace_all, None)? {
                return Ok(Some(out));
            }
        }
    }
    if replace_all {
        return Ok(None);
    }
    super::blanks::blank_insensitive(doc, old, new)
}

/// A line of `new` that stands for code the model left out ("// ... existing code ...")
/// and that is neither in `old` nor in the file: applying it would delete that code.
/// Read by shape, in any comment syntax `elision::comment_body` knows, or as a bare
/// ellipsis (`...`, Python's `Ellipsis` statement included), in an edit that removes
/// lines of `old`.
fn placeholder(old: &str, new: &str, content: &str) -> Option<String> {
    // One line replaced by `...` is a stub (`pass` to `...`); more is code left out.
    let removes = old
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !new.lines().any(|n| n.trim() == l.trim()))
        .count()
        >= 2;
    new.lines()
        .find(|line| {
            let t = line.trim();
            let Some(body) = super::elision::comment_body(t) else {
                return false;
            };
            let lower = body.to_lowercase();
            let leads = body.starts_with("...") || body.starts_with('\u{2026}');
            let dotted = body.is_empty() || body.ends_with("...") || body.ends_with('\u{2026}');
            let words = [
                "existing code",
                "rest of the",
                "remaining code",
                "unchanged",
                "rest of code",
                "omitted",
                "as before",
                "same as before",
            ]
            .iter()
            .any(|w| lower.contains(w));
            let elided =
                leads || (dotted && removes) || (words && body.split_whitespace().count() <= 8);
            elided && !old.lines().any(|l| l.trim() == t) && !content.lines().any(|l| l.trim() == t)
        })
        .map(str::to_owned)
        .filter(|_| !content.is_empty())
}

/// `Some(wanted)` when the edit's only change is adding or removing the final newline.
fn final_newline_toggle(old: &str, new: &str, ol: &[String], nl: &[String]) -> Option<bool> {
    (ol == nl && old.ends_with('\n') != new.ends_with('\n')).then(|| new.ends_with('\n'))
}

/// Pass 1: the exact text, found in the file with every line ending as `\n`. A match
/// that starts inside a line's indentation with indentation of its own is a line copied
/// at the wrong depth: it is left to the line passes (which re-indent) unless
/// `inside_indent` allows it as a last resort.
fn exact(doc: &Doc, old: &str, new: &str, replace_all: bool, inside_indent: bool) -> Found {
    let text = doc.normalized();
    // A match starts and ends between words unless old_string itself starts or ends
    // inside one: `RETRIES = 3` is not the end of `DB_POOL_RETRIES = 3`.
    let hits: Vec<usize> = text
        .match_indices(old)
        .map(|(i, _)| i)
        .filter(|&i| on_token_boundaries(&text, i, old))
        .collect();
    let starts = line_starts(&text);
    // With replace_all too, an old_string that starts with indentation is a whole line
    // (or the start of one, when the line goes on with nothing but old_string's text):
    // a longer line that starts the same way is another line.
    let hits: Vec<usize> = if replace_all && hits.len() > 1 && old.starts_with([' ', '\t']) {
        hits.into_iter()
            .filter(|&h| {
                let line_start = starts[starts.partition_point(|&s| s <= h) - 1];
                let end = h + old.len();
                let rest_of_line = text[end..].split('\n').next().unwrap_or("");
                text[line_start..h].trim().is_empty()
                    && (old.ends_with('\n') || rest_of_line.trim().is_empty())
            })
            .collect()
    } else {
        hits
    };
    if hits.is_empty() {
        return Ok(None);
    }
    let line_at = |pos: usize| starts.partition_point(|&s| s <= pos) - 1;
    // `match_indices` skips a match that overlaps the one before (`}\n}\n` in three
    // closing braces): one found is still two places.
    if let (false, [h]) = (replace_all, hits.as_slice())
        && let Some(p) = overlapping(&text, *h, old)
    {
        return Err(EditError::NotUnique {
            match_lines: vec![line_at(*h) + 1, line_at(p) + 1],
        });
    }
    if hits.len() > 1 {
        if !replace_all {
            return Err(EditError::NotUnique {
                match_lines: hits.iter().map(|&h| line_at(h) + 1).collect(),
            });
        }
        return super::replace_all::each_site(doc, &text, &starts, &hits, old, new).map(Some);
    }
    let (a, b) = (hits[0], hits[0] + old.len());
    let first = line_at(a);
    let ends_line = old.ends_with('\n');
    let last = if ends_line {
        line_at(b - 1)
    } else {
        line_at(b.saturating_sub(1).max(a))
    };
    let line_end = |i: usize| starts[i] + doc.lines[i].text.len();
    let prefix = &text[starts[first]..a];
    // A multi-line old_string whose first line starts inside a word of the file's line
    // is a misremembered line, not a cut-short one.
    if old.contains('\n') && word(prefix.chars().last()) && word(old.chars().next()) {
        return Ok(None);
    }
    if !inside_indent
        && !prefix.is_empty()
        && prefix.trim().is_empty()
        && old.starts_with([' ', '\t'])
    {
        return Ok(None);
    }
    let suffix = if ends_line || b > line_end(last) {
        ""
    } else {
        &text[b..line_end(last)]
    };
    // An old_string that starts with indentation is a whole line as the model
    // remembers it; when the file's line goes on after it, the model misremembered
    // the line (`return total` of `return total + self.shipping`).
    if prefix.trim().is_empty() && old.starts_with([' ', '\t']) && !suffix.trim().is_empty() {
        return Ok(None);
    }
    let old_region: Vec<String> = (first..=last)
        .map(|i| doc.lines[i].text.to_owned())
        .collect();
    let whole_lines = prefix.trim().is_empty() && suffix.trim().is_empty();
    let absolute = !prefix.is_empty()
        && prefix.trim().is_empty()
        && !old.starts_with([' ', '\t'])
        && new.starts_with([' ', '\t']);
    if new.is_empty() && whole_lines {
        // Deleting whole lines removes them, never leaving an empty line behind.
        let (s, len) = deletion_span(doc, first, last + 1 - first);
        return Ok(Some(splice(doc, vec![(s, len, Vec::new())], None)));
    }
    let new_lines = if absolute && suffix.is_empty() {
        // old_string began after the indentation but new_string carries its own: the
        // model wrote it at the file's depth, or it is unclear where it belongs.
        let width = |s: &str| -> usize {
            s.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .map(|c| if c == '\t' { 4 } else { 1 })
                .sum()
        };
        if width(new) != width(prefix) {
            return Err(EditError::Invalid(format!(
                "old_string starts inside line {} but new_string is indented differently; copy whole lines with their indentation",
                first + 1
            )));
        }
        model_lines(new)
    } else {
        let mut body = indent_continuation(prefix, old, new);
        if (ends_line || suffix.is_empty()) && body.ends_with('\n') && !body.is_empty() {
            body.pop();
        }
        format!("{prefix}{body}{suffix}")
            .split('\n')
            .map(str::to_owned)
            .collect()
    };
    let toggle = (last + 1 == doc.lines.len())
        .then_some(())
        .and_then(|_| final_newline_toggle(old, new, &model_lines(old), &model_lines(new)));
    let region = Region {
        start: first,
        old: old_region,
        new: new_lines,
        norm: Norm::Exact,
        fragment: false,
    };
    let rendered = render(doc, &region)?;
    Ok(Some(splice(
        doc,
        vec![(region.start, region.old.len(), rendered)],
        toggle,
    )))
}

/// The non-blank lines of a deletion's `old` that has blank lines at both ends.
fn deletion_core(old: &str, new: &str) -> Option<String> {
    if !new.trim().is_empty() || old.trim().is_empty() {
        return None;
    }
    let pieces: Vec<&str> = old.split_inclusive('\n').collect();
    let blank = |p: &&&str| p.trim().is_empty();
    let lead = pieces.iter().take_while(blank).count();
    let trail = pieces.iter().rev().take_while(blank).count();
    if lead == 0 || trail == 0 {
        return None;
    }
    let mut core = pieces[lead..pieces.len() - trail].concat();
    if !core.ends_with('\n') {
        core.push('\n');
    }
    Some(core)
}

/// When the exact text starts after a line's indentation, the model wrote the later
/// lines of `new` relative to that line; they get its indentation unless they already
/// carry at least as much.
fn indent_continuation(prefix: &str, old: &str, new: &str) -> String {
    // A multi-line old_string shows the model wrote its later lines in the file's frame.
    if prefix.is_empty()
        || !prefix.chars().all(|c| c == ' ' || c == '\t')
        || !new.contains('\n')
        || old.trim_end_matches(['\n', '\r']).contains('\n')
    {
        return new.to_owned();
    }
    let width = |s: &str| {
        s.chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .map(|c| if c == '\t' { 4 } else { 1 })
            .sum::<usize>()
    };
    let rest: Vec<&str> = new
        .split('\n')
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if rest.iter().map(|l| width(l)).min().unwrap_or(usize::MAX) >= width(prefix) {
        return new.to_owned();
    }
    let mut out = String::new();
    for (i, line) in new.split_inclusive('\n').enumerate() {
        if i > 0 && !line.trim().is_empty() {
            out.push_str(prefix);
        }
        out.push_str(line);
    }
    out
}

/// Where `old` occurs again, on token boundaries, overlapping its match at `at`.
fn overlapping(text: &str, at: usize, old: &str) -> Option<usize> {
    let end = at + old.len();
    let mut from = at;
    loop {
        from += text[from..].chars().next()?.len_utf8();
        let p = from + text[from..].find(old)?;
        if p >= end {
            return None;
        }
        if on_token_boundaries(text, p, old) {
            return Some(p);
        }
        from = p;
    }
}

fn line_starts(text: &str) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    v
}

fn by_lines(
    doc: &Doc,
    old: &[String],
    new: &[String],
    norm: Norm,
    replace_all: bool,
    toggle: Option<bool>,
) -> Found {
    let hits = windows(doc, old, norm);
    if hits.is_empty() {
        return Ok(None);
    }
    // Windows overlapping the one found (a copy of `}` `}` in three closing braces)
    // are other places too.
    let all = if replace_all {
        hits.clone()
    } else {
        super::splice::overlapping_windows(doc, old, norm)
    };
    if all.len() > 1 && !replace_all {
        return Err(EditError::NotUnique {
            match_lines: all.iter().map(|h| h + 1).collect(),
        });
    }
    if new.is_empty() && hits.len() == 1 {
        let (s, len) = deletion_span(doc, hits[0], old.len());
        return Ok(Some(splice(doc, vec![(s, len, Vec::new())], None)));
    }
    let mut parts = Vec::new();
    for &start in &hits {
        let region = Region {
            start,
            old: old.to_vec(),
            new: new.to_vec(),
            norm,
            fragment: false,
        };
        parts.push((start, old.len(), render(doc, &region)?));
    }
    let at_end = hits
        .last()
        .is_some_and(|&h| h + old.len() == doc.lines.len());
    Ok(Some(splice(doc, parts, toggle.filter(|_| at_end))))
}

/// The last pass: the first or last line of `old` is only part of the file's line.
/// It applies only when that line is kept unchanged, so the file's full line stays.
fn truncated_ends(doc: &Doc, old: &str, new: &str) -> Found {
    let mut old_l = model_lines(old);
    let mut new_l = model_lines(new);
    let k = old_l.len();
    if k < 2 || k > doc.lines.len() {
        return Ok(None);
    }
    let loose = |s: &str| Norm::Loose.apply(s);
    let (first, last) = (loose(&old_l[0]), loose(&old_l[k - 1]));
    let middle: Vec<String> = old_l[1..k - 1].iter().map(|l| loose(l)).collect();
    // A short end (a fragment starting at `{`, a closing `}`) is evidence only with a
    // line of substance between the ends.
    let short = first.len() < 3 || last.len() < 3;
    if first.is_empty() || last.is_empty() || (short && !middle.iter().any(|l| l.len() >= 3)) {
        return Ok(None);
    }
    let hits: Vec<usize> = (0..=doc.lines.len() - k)
        .filter(|&i| {
            let f0 = loose(doc.lines[i].text);
            let fl = loose(doc.lines[i + k - 1].text);
            // With two lines the evidence is thin: a cut must fall between words. A
            // line whose start is cut off must start at a word anyway: `count = 0` is
            // not the end of `total_count = 0`.
            let strict = k == 2;
            (cut_prefix(&f0, &first, strict) || cut_suffix(&f0, &first, true))
                && cut_prefix(&fl, &last, strict)
                && (1..k - 1).all(|j| loose(doc.lines[i + j].text) == middle[j - 1])
                // Two lines: one of them must be whole.
                && (k > 2 || f0 == first || fl == last)
        })
        .collect();
    let [start] = hits[..] else {
        return if hits.len() > 1 {
            Err(EditError::NotUnique {
                match_lines: hits.iter().map(|h| h + 1).collect(),
            })
        } else {
            Ok(None)
        };
    };
    let mut fragment = false;
    for (o, f) in [(0, start), (k - 1, start + k - 1)] {
        let full = doc.lines[f].text;
        if loose(full) == loose(&old_l[o]) {
            continue;
        }
        fragment |= o == 0 && !cut_prefix(&loose(full), &first, false);
        // The cut-short line must be kept as it is: the first line of new_string for
        // the first, the last copy of it in new_string for the last.
        let n = if o == 0 {
            (new_l.first() == Some(&old_l[0])).then_some(0)
        } else {
            new_l
                .iter()
                .rposition(|l| l == &old_l[o])
                .filter(|&n| n > 0 || k == 1)
        };
        let Some(n) = n else {
            return Err(EditError::Invalid(format!(
                "old_string has only part of line {}; copy whole lines",
                f + 1
            )));
        };
        // A cut-short last line keeps the model's indentation, so it is judged in the
        // copy's frame like the lines above it (the first line is not judged).
        let own = |l: &str| match o {
            0 => full.to_owned(),
            _ => format!("{}{}", super::text::indent_of(l), full.trim_start()),
        };
        new_l[n] = own(&new_l[n]);
        old_l[o] = own(&old_l[o]);
    }
    let region = Region {
        start,
        old: old_l,
        new: new_l,
        norm: Norm::Loose,
        fragment,
    };
    let out = render(doc, &region)?;
    Ok(Some(splice(doc, vec![(start, k, out)], None)))
}

/// `part` is `line` cut short at the end (with `strict`, not inside a word).
fn cut_prefix(line: &str, part: &str, strict: bool) -> bool {
    line.strip_prefix(part)
        .is_some_and(|rest| !(strict && word(part.chars().last()) && word(rest.chars().next())))
}

/// `part` is `line` with its start cut off (with `strict`, not inside a word).
fn cut_suffix(line: &str, part: &str, strict: bool) -> bool {
    line.strip_suffix(part)
        .is_some_and(|head| !(strict && word(head.chars().last()) && word(part.chars().next())))
}

/// `\n`, `\t`, `\"` and `\\` written as escapes, read back.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
