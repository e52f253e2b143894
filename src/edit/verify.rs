//! The second reader: after the matcher has produced a file, this checks the result
//! against the model's edit from the definition of an edit alone, sharing no code with
//! the matcher's passes (docs/ARCHITECTURE.md, invariant "two readers").
//!
//! With `before` and `after` compared line by line, the changed region is what lies
//! between their longest common first and last lines (so every line outside it is
//! byte-identical by construction). Inside it:
//!
//! - a line the model kept (the same in `old_string` and `new_string`) is the file's
//!   line, byte for byte: its typography, its inner tabs, its leading ideographic space;
//! - a line that is new in the result holds the text of a line of `new_string` (after
//!   its indentation), or, for an escaped `old_string`, of `new_string` read back with the
//!   same escapes;
//! - new lines take indentation by one mapping: deeper in the model's copy is deeper in
//!   the result, equally deep is equally deep, as the matched lines show;
//! - a file line that is gone was a line of `old_string`;
//! - a byte-order mark stays at the start of the file and nowhere else;
//! - new lines take the file's line endings.
//!
//! The first line that breaks a rule is named in the refusal.

use similar::{Algorithm, DiffOp, capture_diff_slices};
use std::collections::{HashMap, HashSet};

const BOM: char = '\u{feff}';

/// Checks `after` as the result of replacing `old` with `new` in `before`.
/// Errors: the message names the first line (1-based, in the result or the file) that
/// breaks a rule, and why.
pub fn check(before: &str, old: &str, new: &str, after: &str) -> Result<(), String> {
    if before == after {
        return Ok(());
    }
    let bom = |s: &str| s.starts_with(BOM);
    if bom(before) != bom(after) && !new.contains(BOM) {
        return Err("the byte-order mark at the start of the file would change".into());
    }
    let f = lines(before.strip_prefix(BOM).unwrap_or(before));
    let g = lines(after.strip_prefix(BOM).unwrap_or(after));
    if !new.contains(BOM) {
        let had = f.iter().filter(|l| l.0.contains(BOM)).count();
        if let Some(i) = g.iter().position(|l| l.0.contains(BOM))
            && g.iter().filter(|l| l.0.contains(BOM)).count() > had
        {
            return Err(format!(
                "line {} of the result would hold a byte-order mark; the mark belongs before line 1 only",
                i + 1
            ));
        }
    }
    let p = f.iter().zip(&g).take_while(|(a, b)| a == b).count();
    let s = f[p..]
        .iter()
        .rev()
        .zip(g[p..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let removed = &f[p..f.len() - s];
    let added = &g[p..g.len() - s];
    let old_l = model(old);
    let escaped = escapes(old);
    let mut news = vec![model(new)];
    if !escaped.is_empty() {
        news.push(model(&unescape(new, &escaped)));
    }
    let kept = kept_lines(&old_l, &news[0]);
    let eols: Vec<&str> = f.iter().map(|l| l.1).collect();
    // Sets of the removed lines, so a large region (a replace_all over 70,000 lines) is
    // checked in linear time rather than every added line against every removed one.
    let removed_text: HashSet<&str> = removed.iter().map(|r| r.0).collect();
    let removed_rest: HashSet<&str> = removed.iter().map(|r| rest(r.0)).collect();
    let removed_blank = removed.iter().any(|r| rest(r.0).is_empty());
    let mut removed_fold: HashMap<String, Vec<&str>> = HashMap::new();
    for r in removed {
        removed_fold.entry(fold(r.0)).or_default().push(r.0);
    }
    let fragments: HashSet<String> = removed
        .iter()
        .filter_map(|r| fragment(r.0, old, new))
        .collect();
    let news_fold: Vec<String> = news
        .iter()
        .flatten()
        .map(|n| fold(n))
        .filter(|n| !n.is_empty())
        .collect();
    let kept_fold: HashSet<String> = kept.iter().map(|k| fold(k)).collect();
    for (k, a) in added.iter().enumerate() {
        let at = p + k + 1;
        if removed_text.contains(a.0) {
            continue;
        }
        if !a.1.is_empty() && !eols.contains(&a.1) {
            return Err(format!(
                "line {at} of the result would end with a line ending the file does not use"
            ));
        }
        if rest(a.0).is_empty() {
            // A blank line comes from new_string or from the blank lines around the region.
            let blank = |l: &String| rest(l).is_empty();
            if !news[0].iter().any(blank) && !removed_blank {
                return Err(format!(
                    "line {at} of the result would be blank ({:?}), but new_string has no blank line",
                    a.0
                ));
            }
            continue;
        }
        // A kept line rewritten from the model's copy.
        let fa = fold(a.0);
        if let Some(r) = removed_fold
            .get(&fa)
            .and_then(|rs| rs.iter().find(|r| **r != a.0 && rest(r) != rest(a.0)))
            && kept_fold.contains(&fa)
        {
            return Err(format!(
                "line {at} is unchanged by the edit, but the result would rewrite it from the model's copy ({:?} instead of the file's {:?})",
                a.0.trim(),
                r.trim()
            ));
        }
        let explained = news_fold.iter().any(|n| fa.contains(n.as_str()))
            || removed_rest.contains(rest(a.0))
            || fragments.contains(a.0);
        if !explained {
            return Err(format!(
                "line {at} of the result ({:?}) is not a line of new_string",
                a.0.trim()
            ));
        }
    }
    let mut olds = vec![old_l.clone()];
    if !escaped.is_empty() {
        olds.push(model(&unescape(old, &escaped)));
    }
    let old_f: Vec<String> = olds.iter().flatten().map(|l| fold(l)).collect();
    let old_all = olds
        .iter()
        .map(|o| fold(&o.join(" ")))
        .collect::<Vec<_>>()
        .join("\n");
    let added_text: HashSet<&str> = added.iter().map(|a| a.0).collect();
    for (k, r) in removed.iter().enumerate() {
        if rest(r.0).is_empty() || added_text.contains(r.0) {
            continue;
        }
        let fr = fold(r.0);
        let in_old = old_f
            .iter()
            .any(|o| !o.is_empty() && (*o == fr || fr.contains(o.as_str())))
            || old_all.contains(&fr);
        if !in_old {
            return Err(format!(
                "line {} of the file ({:?}) would be removed, but old_string does not hold it",
                p + k + 1,
                r.0.trim()
            ));
        }
    }
    kept_in_place(removed, added, &kept, &news[0], p)?;
    indentation(&f, removed, added, &old_l, &news[0], p)
}

/// A line the model kept (the same in `old_string` and `new_string`) stays the file's
/// line byte for byte, indentation included. Per text (without its indentation): the
/// result's lines of that text that are none of the file's lines of it in the region are
/// new lines, and `new_string` adds only as many lines of that text as it holds beyond
/// those it kept.
fn kept_in_place(
    removed: &[(&str, &str)],
    added: &[(&str, &str)],
    kept: &[String],
    new: &[String],
    p: usize,
) -> Result<(), String> {
    let mut kept_count: HashMap<&str, usize> = HashMap::new();
    for k in kept {
        *kept_count.entry(rest(k)).or_default() += 1;
    }
    for (text, kept_n) in kept_count {
        let mut pool: Vec<&str> = removed
            .iter()
            .map(|r| r.0)
            .filter(|r| rest(r) == text)
            .collect();
        if pool.is_empty() {
            continue;
        }
        let new_n = new.iter().filter(|n| rest(n) == text).count();
        let mut foreign = Vec::new();
        for (k, a) in added.iter().enumerate().filter(|(_, a)| rest(a.0) == text) {
            match pool.iter().position(|r| *r == a.0) {
                Some(i) => {
                    pool.swap_remove(i);
                }
                None => foreign.push(p + k + 1),
            }
        }
        if foreign.len() > new_n.saturating_sub(kept_n) {
            let at = foreign[0];
            return Err(format!(
                "line {at} is unchanged by the edit, but the result would re-indent it from the model's copy ({text:?} is not at the file's column)"
            ));
        }
    }
    Ok(())
}

/// New lines keep the depth order of the model's copy, as measured against the file's
/// lines the model's old lines matched.
fn indentation(
    file: &[(&str, &str)],
    removed: &[(&str, &str)],
    added: &[(&str, &str)],
    old: &[String],
    new: &[String],
    p: usize,
) -> Result<(), String> {
    // (model width, result width, result line) pairs.
    let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
    for o in old.iter().filter(|o| !rest(o).is_empty()) {
        let hits: Vec<&(&str, &str)> = removed.iter().filter(|r| rest(r.0) == rest(o)).collect();
        if let [r] = hits[..] {
            pairs.push((width(o), width(r.0), 0));
        }
    }
    let removed_text: HashSet<&str> = removed.iter().map(|r| r.0).collect();
    let mut changed = 0;
    for (k, a) in added.iter().enumerate() {
        if rest(a.0).is_empty() || removed_text.contains(a.0) {
            continue;
        }
        let hits: Vec<&String> = new.iter().filter(|n| rest(n) == rest(a.0)).collect();
        if let [n] = hits[..] {
            if n.as_str() != a.0 {
                changed += 1;
            }
            pairs.push((width(n), width(a.0), p + k + 1));
        }
    }
    same_depth_as_matched(file, old, &pairs)?;
    if changed == 0 {
        return Ok(());
    }
    // Deeper in the model's copy must stay deeper in the result: no result line x with
    // a smaller model width than a result line y may be as deep as y. Sorted by model
    // width, each y is compared with the deepest x of a smaller width seen so far.
    let mut lines: Vec<(usize, usize, usize)> = pairs.into_iter().filter(|x| x.2 != 0).collect();
    lines.sort_by_key(|x| (x.0, x.2));
    let mut deepest: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < lines.len() {
        let group = lines[i..].iter().take_while(|y| y.0 == lines[i].0).count();
        for y in &lines[i..i + group] {
            if let Some((depth, line)) = deepest
                && depth >= y.1
            {
                return Err(format!(
                    "line {line} would be indented as deep as or deeper than line {}, though new_string indents it less",
                    y.2
                ));
            }
        }
        for x in &lines[i..i + group] {
            if deepest.is_none_or(|(d, _)| x.1 > d) {
                deepest = Some((x.1, x.2));
            }
        }
        i += group;
    }
    Ok(())
}

/// A new line as deep in the model's copy as a line of `old_string` is as deep in the
/// result as that line is in the file, when every line of `old_string` of that model
/// depth that the file holds once sits at one depth there (a flattened copy, whose
/// lines of one depth sit at several, says nothing). `pairs` are (model width, result
/// width, result line) of the new lines; line 0 entries are skipped.
fn same_depth_as_matched(
    file: &[(&str, &str)],
    old: &[String],
    pairs: &[(usize, usize, usize)],
) -> Result<(), String> {
    if pairs.iter().all(|x| x.2 == 0) {
        return Ok(());
    }
    // One pass over the file: each wanted text's count and its first line's width.
    let wanted: HashSet<&str> = old
        .iter()
        .map(|o| rest(o))
        .filter(|r| !r.is_empty())
        .collect();
    let mut in_file: HashMap<&str, (usize, usize)> = HashMap::new();
    for (l, _) in file {
        if wanted.contains(rest(l)) {
            in_file.entry(rest(l)).or_insert((0, width(l))).0 += 1;
        }
    }
    let mut file_depths: HashMap<usize, HashSet<usize>> = HashMap::new();
    for o in old.iter().filter(|o| !rest(o).is_empty()) {
        if let Some((1, w)) = in_file.get(rest(o)) {
            file_depths.entry(width(o)).or_default().insert(*w);
        }
    }
    for (model, result, line) in pairs.iter().filter(|x| x.2 != 0) {
        if let Some(depths) = file_depths.get(model)
            && depths.len() == 1
            && !depths.contains(result)
        {
            let want = depths.iter().next().copied().unwrap_or_default();
            return Err(format!(
                "line {line} would be indented {result} columns, but new_string indents it like a line of old_string that is indented {want} in the file"
            ));
        }
    }
    Ok(())
}

/// A single-line `old` replaced inside the file's line `line`.
fn fragment(line: &str, old: &str, new: &str) -> Option<String> {
    let (o, n) = (old.trim_end_matches('\n'), new.trim_end_matches('\n'));
    if o.contains('\n') || n.contains('\n') || o.is_empty() || !line.contains(o) {
        return None;
    }
    Some(line.replacen(o, n, 1))
}

/// Lines with their endings (`""` for a last line without one).
fn lines(s: &str) -> Vec<(&str, &str)> {
    s.split_inclusive('\n')
        .map(|l| {
            let t = l.trim_end_matches(['\n', '\r']);
            (t, &l[t.len()..])
        })
        .collect()
}

fn model(s: &str) -> Vec<String> {
    let s = s.replace("\r\n", "\n");
    let s = s.strip_suffix('\n').unwrap_or(&s);
    s.split('\n').map(str::to_owned).collect()
}

/// A line without its indentation (spaces and tabs only: an ideographic space is text).
fn rest(l: &str) -> &str {
    l.trim_matches([' ', '\t'])
}

fn width(l: &str) -> usize {
    l.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// Text compared loosely: canonically equivalent text alike (NFC, UAX #15), whitespace
/// runs collapsed, the typographic characters models type as ASCII read as ASCII.
fn fold(l: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let mapped: String = l
        .nfc()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            '\u{2013}' | '\u{2014}' | '\u{2212}' => '-',
            BOM => ' ',
            c => c,
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lines equal in `old` and `new` (the line diff's equal runs).
fn kept_lines(old: &[String], new: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        if let DiffOp::Equal { old_index, len, .. } = op {
            out.extend(
                old[old_index..old_index + len]
                    .iter()
                    .filter(|l| !rest(l).is_empty())
                    .cloned(),
            );
        }
    }
    out
}

/// The escapes a single-line `old` uses (`n`, `t`, `"`, `\`).
fn escapes(old: &str) -> Vec<char> {
    if old.trim_end_matches('\n').contains('\n') {
        return Vec::new();
    }
    ['n', 't', '"', '\\']
        .into_iter()
        .filter(|c| old.contains(&format!("\\{c}")))
        .collect()
}

/// `s` with the escapes in `kinds` read back.
fn unescape(s: &str, kinds: &[char]) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&k)) if kinds.contains(&k) => {
                chars.next();
                out.push(match k {
                    'n' => '\n',
                    't' => '\t',
                    k => k,
                });
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn a_kept_line_keeps_the_files_typography() {
        let before = "a\n“quoted” x\nb\n";
        let bad = "a\n\"quoted\" x\nc\n";
        let err = check(before, "a\n\"quoted\" x\nb\n", "a\n\"quoted\" x\nc\n", bad).unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        let good = "a\n“quoted” x\nc\n";
        check(before, "a\n\"quoted\" x\nb\n", "a\n\"quoted\" x\nc\n", good).unwrap();
    }

    #[test]
    fn a_bom_stays_in_front_of_line_1() {
        let err = check("\u{feff}a\nb\n", "a\n", "z\na\n", "z\n\u{feff}a\nb\n").unwrap_err();
        assert!(err.contains("byte-order mark"), "{err}");
        check("\u{feff}a\nb\n", "a\n", "z\na\n", "\u{feff}z\na\nb\n").unwrap();
    }

    #[test]
    fn a_kept_line_keeps_the_files_indentation() {
        let before = "fn f() {\n    g();\n}\n";
        let (old, new) = ("g();\n", "// note\ng();\n");
        let bad = "fn f() {\n    // note\ng();\n}\n";
        let err = check(before, old, new, bad).unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        check(before, old, new, "fn f() {\n    // note\n    g();\n}\n").unwrap();
        // A second copy of a kept line is new text and may sit where the model put it.
        let twice = "g();\nif x {\ng();\n}\n";
        check(
            before,
            old,
            twice,
            "fn f() {\n    g();\n    if x {\n    g();\n    }\n}\n",
        )
        .unwrap();
    }

    #[test]
    fn a_new_line_as_deep_as_a_copied_line_is_as_deep_as_it_in_the_file() {
        let before = "SELECT a,\n       b,\n       c\nFROM t;\n";
        let (old, new) = ("b,\nc\n", "b,\n-- note\nc\n");
        let err = check(
            before,
            old,
            new,
            "SELECT a,\n       b,\n-- note\n       c\nFROM t;\n",
        )
        .unwrap_err();
        assert!(err.contains("line 3"), "{err}");
        check(
            before,
            old,
            new,
            "SELECT a,\n       b,\n       -- note\n       c\nFROM t;\n",
        )
        .unwrap();
    }

    #[test]
    fn a_line_from_nowhere_is_refused() {
        let err = check("a\nb\nc\n", "b\n", "B\n", "a\nB\nX\n").unwrap_err();
        assert!(err.contains("line 3"), "{err}");
    }
}
