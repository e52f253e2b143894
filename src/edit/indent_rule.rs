//! The indentation rule for lines the model changed or inserted: a line whose
//! indentation disagrees with its neighbours and with the file's style is settled
//! before matching, or the edit is refused. Never guessed:
//!
//! 1. **Spaces among tabs.** In a tab-indented file, a new line indented with spaces
//!    whose neighbours in `new_string` (the nearest non-blank lines above and below) are
//!    indented with tabs takes tabs: its spaces read as four per tab (two when the count
//!    is not a multiple of four), and that depth is taken when a neighbour has it (the
//!    line above, one deeper when that line opens a block, or the line below).
//!    Otherwise: refused.
//! 2. **Off by less than a unit.** In a space-indented file whose lines are all at whole
//!    units (and whose copy in `old_string` keeps that unit), a new line that is not at a
//!    whole unit takes the whole-unit depth just below or just above it that a
//!    neighbour has, as in rule 1; both or neither: refused.
//!
//! A line that continues the one above (an open bracket, a trailing operator or
//! comma, a backslash) may align anywhere and is left alone, as is anything inside a
//! multi-line string; so are lines `old_string` has too (kept lines are copied from the
//! file by the replay). Markdown, YAML and other files without a consistent indentation
//! unit are not touched.

use super::error::EditError;
use super::text::{indent_of, space_unit_of};

/// `new` with the rule applied; `None` when it changes nothing.
/// Errors: a line whose depth cannot be settled unambiguously.
pub fn settle(content: &str, old: &str, new: &str) -> Result<Option<String>, EditError> {
    let file: Vec<&str> = content.lines().collect();
    let indented: Vec<&str> = file
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty() && !indent_of(l).is_empty())
        .collect();
    if indented.len() < 3 {
        return Ok(None);
    }
    let tabs = indented.iter().filter(|l| l.starts_with('\t')).count();
    let old_lines: Vec<&str> = old.lines().collect();
    let lines: Vec<&str> = new.lines().collect();
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let mut changed = false;
    if tabs * 10 >= indented.len() * 9 {
        for i in candidates(&lines, &old_lines) {
            let line = lines[i];
            let indent = indent_of(line);
            if indent.is_empty() || indent.contains('\t') {
                continue;
            }
            let (above, below) = neighbours(&lines, i);
            let near: Vec<usize> = above.into_iter().chain(below).collect();
            // The model's own lines around it are in tabs (or at column 0).
            let tabbed = |l: &usize| !indent_of(lines[*l]).contains(' ');
            if !near.iter().all(tabbed) || !near.iter().any(|l| lines[*l].starts_with('\t')) {
                continue;
            }
            // Models that write spaces for tabs write four per level (two when the
            // count is not a multiple of four).
            let depths: Vec<usize> = [4, 2]
                .iter()
                .find(|w| indent.len().is_multiple_of(**w))
                .map(|w| indent.len() / w)
                .into_iter()
                .collect();
            let depth = |l: usize| indent_of(lines[l]).matches('\t').count();
            let target = pick(
                &depths,
                above.map(|a| (depth(a), opens(lines[a]))),
                below.map(depth),
            )
            .ok_or_else(|| refuse(line, "is indented with spaces among tab-indented lines"))?;
            out[i] = format!("{}{}", "\t".repeat(target), line.trim_start());
            changed = true;
        }
    } else if tabs == 0
        && let Some(unit) = space_unit_of(file.iter().copied())
    {
        let aligned = |l: &&str| indent_of(l).len().is_multiple_of(unit);
        let off_in_file = indented.iter().filter(|l| !aligned(l)).count();
        let old_aligned = old_lines.iter().all(|l| l.trim().is_empty() || aligned(l));
        if off_in_file * 50 > indented.len() || !old_aligned {
            return Ok(None);
        }
        for i in candidates(&lines, &old_lines) {
            let line = lines[i];
            let width = indent_of(line).len();
            if width.is_multiple_of(unit) || indent_of(line).contains('\t') {
                continue;
            }
            let (above, below) = neighbours(&lines, i);
            let whole = |l: &usize| indent_of(lines[*l]).len().is_multiple_of(unit);
            if above.is_none() && below.is_none() || !above.iter().chain(&below).all(whole) {
                continue;
            }
            let depth = |l: usize| indent_of(lines[l]).len() / unit;
            let depths = [width / unit, width / unit + 1];
            let target = pick(
                &depths,
                above.map(|a| (depth(a), opens(lines[a]))),
                below.map(depth),
            )
            .ok_or_else(|| {
                refuse(
                    line,
                    "is off its block's depth by less than one indent unit",
                )
            })?;
            out[i] = format!("{}{}", " ".repeat(target * unit), line.trim_start());
            changed = true;
        }
    }
    if !changed {
        return Ok(None);
    }
    let mut text = out.join("\n");
    if new.ends_with('\n') {
        text.push('\n');
    }
    Ok(Some(text))
}

/// Indexes of the lines of `new` the model changed or inserted (not in `old`), outside
/// multi-line strings and not continuing the line above.
fn candidates(lines: &[&str], old: &[&str]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut in_string = false;
    for (i, line) in lines.iter().enumerate() {
        let quotes = line.matches("\"\"\"").count()
            + line.matches("'''").count()
            + line.matches('`').count();
        let inside = in_string;
        if quotes % 2 == 1 {
            in_string = !in_string;
        }
        if inside || line.trim().is_empty() || old.contains(line) {
            continue;
        }
        if let (Some(above), _) = neighbours(lines, i)
            && continues(lines[above])
        {
            continue;
        }
        out.push(i);
    }
    out
}

/// The nearest non-blank lines above and below line `i`.
fn neighbours(lines: &[&str], i: usize) -> (Option<usize>, Option<usize>) {
    let above = (0..i).rev().find(|&j| !lines[j].trim().is_empty());
    let below = (i + 1..lines.len()).find(|&j| !lines[j].trim().is_empty());
    (above, below)
}

/// Whether the next line continues this one (and may align anywhere).
pub(crate) fn continues(line: &str) -> bool {
    let t = line.trim_end();
    let open = t.matches(['(', '[']).count() > t.matches([')', ']']).count();
    open || [
        ",", "\\", "+", "-", "*", "/", "&&", "||", "=", "|", "&", ".", "?",
    ]
    .iter()
    .any(|e| t.ends_with(e))
}

/// Whether the line opens a block (its next line is one level deeper).
fn opens(line: &str) -> bool {
    let t = line.trim_end();
    t.ends_with(['{', ':']) || t.ends_with(" then") || t.ends_with(" do") || t.ends_with("->")
}

/// The one depth of `depths` that a neighbour has (the line above, one level deeper
/// when it opens a block; the line below); `None` when none or several do.
fn pick(depths: &[usize], above: Option<(usize, bool)>, below: Option<usize>) -> Option<usize> {
    let wanted: Vec<usize> = above
        .map(|(depth, opens)| depth + usize::from(opens))
        .into_iter()
        .chain(below)
        .collect();
    let mut hits: Vec<usize> = depths
        .iter()
        .copied()
        .filter(|d| wanted.contains(d))
        .collect();
    hits.sort_unstable();
    hits.dedup();
    match hits.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

fn refuse(line: &str, why: &str) -> EditError {
    EditError::Invalid(format!(
        "the new line {:?} {why}, and its depth is ambiguous; write it in the file's indentation",
        line.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO: &str = "func f() {\n\tif x {\n\t\ty()\n\t}\n\treturn\n}\n";

    #[test]
    fn a_space_line_among_tabs_takes_tabs() {
        let new = "\tif x {\n\t\ty()\n        z()\n\t}\n";
        let got = settle(GO, "\tif x {\n\t\ty()\n\t}\n", new)
            .unwrap()
            .unwrap();
        assert_eq!(got, "\tif x {\n\t\ty()\n\t\tz()\n\t}\n");
    }

    #[test]
    fn a_python_line_two_spaces_short_takes_its_blocks_depth() {
        let py = "def f(x):\n    if x:\n        a()\n        b()\n    return x\n";
        let old = "        a()\n        b()\n";
        let new = "        a()\n      c()\n        b()\n";
        let got = settle(py, old, new).unwrap().unwrap();
        assert_eq!(got, "        a()\n        c()\n        b()\n");
    }

    #[test]
    fn an_ambiguous_depth_is_refused() {
        let py = "def f(x):\n    if x:\n        a()\n    return x\n";
        let old = "        a()\n    return x\n";
        let new = "        a()\n      c()\n    return x\n";
        assert!(settle(py, old, new).is_err());
    }

    #[test]
    fn a_first_or_last_line_uses_the_one_neighbour_it_has() {
        let got = settle(GO, "\t}\n\treturn\n", "    log()\n\t}\n\treturn\n").unwrap();
        assert_eq!(got.as_deref(), Some("\tlog()\n\t}\n\treturn\n"));
        let go = "func f() {\n\tx()\n\ty()\n\tz()\n}\n";
        let got = settle(go, "\tz()\n}\n", "\tz()\n    w()\n}\n").unwrap();
        assert_eq!(got.as_deref(), Some("\tz()\n\tw()\n}\n"));
    }

    #[test]
    fn continuation_lines_and_consistent_text_are_left_alone() {
        let py = "def f(x):\n    if x:\n        a()\n    return x\n";
        let new = "        a(1,\n          2)\n    return x\n";
        assert_eq!(
            settle(py, "        a()\n    return x\n", new).unwrap(),
            None
        );
        assert_eq!(
            settle(GO, "\treturn\n", "\tlog()\n\treturn\n").unwrap(),
            None
        );
    }
}
