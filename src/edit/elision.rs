//! Elided edits: an `old_string` (or SEARCH part) that leaves out unchanged lines with a
//! marker line (`...`, `…`, `// ... existing code ...`, `# ... rest unchanged ...`,
//! `/* ... */`, `<!-- ... -->`).
//!
//! The rule: the parts of `old_string` between its elision lines are each found in the
//! file exactly once (line by line, up to indentation), in order and without overlap;
//! each part is then replaced by the part of `new_string` at the same place, and every
//! elided span keeps the file's own text. `new_string` must elide at the same places
//! (the same number of elision lines); a marker at the very start or end of both is
//! dropped. Everything else is refused with a message that asks for the lines instead:
//! a part that is missing, found more than once or out of order, a `new_string` that
//! elides elsewhere or not at all (which would delete the elided code). A marker line
//! that really is in the file is code, not an elision.

use super::error::EditError;

/// What the model is told when an elided edit cannot be placed.
const REPEAT: &str = "repeat the unchanged lines instead of eliding them";

/// Whether `line` stands for left-out code: `...` or `…` alone, or a comment whose
/// text is an ellipsis or says the code is unchanged.
pub fn is_elision(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() || t.len() > 80 {
        return false;
    }
    if t.trim_matches(['.', '\u{2026}', ' ']).is_empty() {
        return t.contains("...") || t.contains('\u{2026}');
    }
    let Some(body) = comment_body(t).or_else(|| t.strip_prefix('*').map(str::trim)) else {
        return false;
    };
    let lower = body.to_lowercase();
    let dotted = body.starts_with("...")
        || body.starts_with('\u{2026}')
        || body.ends_with("...")
        || body.ends_with('\u{2026}');
    let says = [
        "existing",
        "rest of",
        "remaining",
        "unchanged",
        "omitted",
        "same as before",
        "remains the same",
        "stays the same",
        "as before",
    ]
    .iter()
    .any(|w| lower.contains(w));
    (dotted && body.len() < 60) || (says && body.split_whitespace().count() <= 8)
}

/// The text of a line that is only a comment or only an ellipsis (`Some("")` for a
/// bare `...`); `None` for code. The comment forms: `//`, `#`, `--`, `;` (`;;` too),
/// `%`, `!` (Fortran), `'` (Visual Basic), `REM` and `::` (batch files), and the
/// enclosed `/* */`, `<!-- -->`, JSX's `{/* */}`, Jinja's `{# #}`, OCaml's and Pascal's
/// `(* *)`, Haskell's `{- -}`, Lua's `--[[ ]]` and PowerShell's `<# #>`.
pub fn comment_body(t: &str) -> Option<&str> {
    if !t.is_empty() && t.trim_matches(['.', '\u{2026}']).is_empty() {
        return (t.contains("...") || t.contains('\u{2026}')).then_some("");
    }
    let pairs = [
        ("{/*", "*/}"),
        ("{#", "#}"),
        ("/*", "*/"),
        ("<!--", "-->"),
        ("(*", "*)"),
        ("{-", "-}"),
        ("--[[", "]]"),
        ("<#", "#>"),
    ];
    for (open, close) in pairs {
        if let Some(b) = t.strip_prefix(open).and_then(|b| b.strip_suffix(close)) {
            return Some(b.trim());
        }
    }
    let rem = ["REM ", "rem ", "Rem "]
        .iter()
        .find_map(|p| t.strip_prefix(p))
        .or_else(|| t.strip_prefix("::"));
    if let Some(b) = rem {
        return Some(b.trim());
    }
    // A quoted string ('...') is code, not a Visual Basic comment.
    if t.starts_with('\'') && t.len() > 1 && t.ends_with('\'') {
        return None;
    }
    ["//", "#", "--", "/*", "<!--", ";", "%", "!", "'"]
        .iter()
        .find_map(|p| {
            t.strip_prefix(p)
                .map(|b| b.trim_start_matches(p.chars().last().unwrap_or(' ')))
        })
        .map(|b| {
            b.trim()
                .trim_end_matches("*/")
                .trim_end_matches("-->")
                .trim()
        })
}

/// Lines of `text` cut at its elision lines (lines the file does not hold), and those
/// marker lines, one between each two parts.
fn parts<'t>(text: &'t str, file: &[&str]) -> (Vec<Vec<&'t str>>, Vec<&'t str>) {
    let mut out = vec![Vec::new()];
    let mut markers = Vec::new();
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if is_elision(bare) && !file.iter().any(|f| f.trim() == bare.trim()) {
            out.push(Vec::new());
            markers.push(bare);
        } else if let Some(last) = out.last_mut() {
            last.push(line);
        }
    }
    (out, markers)
}

/// How one part is replaced: the matcher's `search_replace(content, old, new,
/// replace_all)`, passed in by the matcher so this room does not import it back.
pub type Replace = fn(&str, &str, &str, bool) -> Result<String, EditError>;

/// Applies an elided edit, each part through `replace`; `None` when `old` elides
/// nothing (an ordinary edit).
pub fn elided(
    replace: Replace,
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Option<Result<String, EditError>> {
    let file: Vec<&str> = content.split_inclusive('\n').collect();
    let bare: Vec<&str> = file
        .iter()
        .map(|l| l.trim_end_matches(['\n', '\r']))
        .collect();
    let (mut old_parts, mut markers) = parts(old, &bare);
    if old_parts.len() < 2 {
        return None;
    }
    Some(apply(
        replace,
        content,
        &file,
        (&mut old_parts, &mut markers),
        &mut parts(new, &bare).0,
        replace_all,
    ))
}

fn refuse(why: &str) -> EditError {
    EditError::Invalid(format!(
        "old_string elides lines with a marker line, and {why}; {REPEAT}"
    ))
}

fn blank(part: &[&str]) -> bool {
    part.iter().all(|l| l.trim().is_empty())
}

fn apply(
    replace: Replace,
    content: &str,
    file: &[&str],
    (old, markers): (&mut Vec<Vec<&str>>, &mut Vec<&str>),
    new: &mut Vec<Vec<&str>>,
    replace_all: bool,
) -> Result<String, EditError> {
    if replace_all {
        return Err(refuse("replace_all cannot be combined with an elision"));
    }
    // A marker at the very start or end of both strings stands for nothing to change.
    if blank(&old[0]) && new.len() > 1 && blank(&new[0]) {
        old.remove(0);
        new.remove(0);
        markers.remove(0);
    }
    if old.len() > 1 && blank(old.last().unwrap()) && new.len() > 1 && blank(new.last().unwrap()) {
        old.pop();
        new.pop();
        markers.pop();
    }
    if old.len() != new.len() {
        return Err(refuse(
            "new_string does not elide the same spans (it would delete or move the elided code)",
        ));
    }
    let moved = |o: &Vec<&str>, n: &Vec<&str>| blank(n) && !blank(o);
    if moved(&old[0], &new[0]) || moved(old.last().unwrap(), new.last().unwrap()) {
        return Err(refuse(
            "new_string moves an elision to its start or end (it would delete the elided code)",
        ));
    }
    if old.iter().any(|p| blank(p)) {
        return Err(refuse("a part around an elision is empty"));
    }
    let mut spans = Vec::new();
    let mut from = 0;
    for part in old.iter() {
        let (start, end) = find_once(file, part)?;
        if start < from {
            return Err(refuse(
                "the parts around the elision are not in the file's order",
            ));
        }
        spans.push((start, end));
        from = end;
    }
    for (i, pair) in spans.windows(2).enumerate() {
        // The marker's depth in the file: its column in the copy, moved as the copy's
        // last line before it is moved from the file's.
        let before_copy = old[i].iter().rev().find(|l| !l.trim().is_empty());
        let marker = match (markers.get(i), before_copy, pair[0].1.checked_sub(1)) {
            (Some(m), Some(b), Some(at)) => (width(m) + width(file[at])).checked_sub(width(b)),
            _ => None,
        };
        crosses(file, pair[0].1, pair[1].0, marker)?;
    }
    // Last part first, on the whole file (the matcher reads indentation from the
    // neighbours), so the line numbers of the earlier parts still hold.
    let mut out = content.to_owned();
    for ((start, end), (o, n)) in spans.iter().zip(old.iter().zip(new.iter())).rev() {
        let (o, n): (String, String) = (o.concat(), n.concat());
        if o.trim_end() == n.trim_end() {
            continue;
        }
        let lines: Vec<&str> = out.split_inclusive('\n').collect();
        let before = lines[..*start].concat();
        let after = lines[*end..].concat();
        let replaced = replace(&out, &o, &n, false)?;
        let inside = replaced.len() >= before.len() + after.len()
            && replaced.starts_with(&before)
            && replaced.ends_with(&after);
        if !inside {
            return Err(refuse(
                "a part matched outside its place between the elisions",
            ));
        }
        out = replaced;
    }
    if out == content {
        return Err(EditError::Invalid(
            "this edit changes nothing: the matched text already reads like new_string".into(),
        ));
    }
    Ok(out)
}

/// Indentation width, a tab counting four.
fn width(l: &str) -> usize {
    l.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// Refuses an elided span (`file[from..to]`) that leaves the block the marker sits
/// in: a line in it shallower than both lines around the marker, or than the marker
/// itself (`marker`, its depth in the file, when known), closes that block (a `def`
/// of the next function, a closing `}`), so the part after the marker is in another
/// function or branch than the one the model wrote it in, and its change would land
/// there.
fn crosses(file: &[&str], from: usize, to: usize, marker: Option<usize>) -> Result<(), EditError> {
    let (Some(before), Some(after)) = (from.checked_sub(1).map(|i| file[i]), file.get(to)) else {
        return Ok(());
    };
    let floor = (width(before).min(width(after))).max(marker.unwrap_or(0));
    match file[from..to]
        .iter()
        .position(|l| !l.trim().is_empty() && width(l) < floor)
    {
        Some(k) => Err(refuse(&format!(
            "the elided lines leave the block the marker is in (line {} of the file, {:?}, closes it), so the part after the marker would land in another block",
            from + k + 1,
            file[from + k].trim()
        ))),
        None => Ok(()),
    }
}

/// The one window of `file` lines equal to `part` (trailing whitespace ignored, else
/// indentation ignored), as `(start, end)` line indexes.
fn find_once(file: &[&str], part: &[&str]) -> Result<(usize, usize), EditError> {
    let lines: Vec<&str> = part.iter().map(|l| l.trim_end()).collect();
    // Blank lines at the ends of a part are the model's spacing around the marker.
    let first = lines.iter().position(|l| !l.is_empty()).unwrap_or(0);
    let last = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    let core = &lines[first..last];
    for loose in [false, true] {
        let same = |a: &str, b: &str| {
            if loose {
                a.trim() == b.trim()
            } else {
                a.trim_end() == b
            }
        };
        let hits: Vec<usize> = (0..=file.len().saturating_sub(core.len()))
            .filter(|&i| {
                i + core.len() <= file.len() && core.iter().zip(&file[i..]).all(|(p, f)| same(f, p))
            })
            .collect();
        match hits.as_slice() {
            [] => continue,
            [i] => return Ok((*i, i + core.len())),
            _ => {
                return Err(refuse(&format!(
                    "the part starting {:?} occurs {} times in the file",
                    core[0].trim(),
                    hits.len()
                )));
            }
        }
    }
    Err(refuse(&format!(
        "the part starting {:?} is not in the file",
        core.first().map_or("", |l| l.trim())
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_recognised_and_code_is_not() {
        for m in [
            "...",
            "    …",
            "// ... existing code ...",
            "# ... rest unchanged ...",
            "/* ... */",
            "<!-- ... -->",
            "-- ...",
            "    // rest of the function unchanged",
            "// rest of the code remains the same",
            "# (existing methods)",
            "! ... rest unchanged",
            "' ... existing code ...",
            "REM ... rest of the script unchanged",
            "{- ... -}",
            "--[[ ... ]]",
            "<# ... #>",
            ";; ... other bindings",
        ] {
            assert!(is_elision(m), "{m}");
        }
        for code in [
            "x = y...",
            "// explain why",
            "print('...')",
            "#include <a.h>",
            "'...'",
            "!done",
        ] {
            assert!(!is_elision(code), "{code}");
        }
    }

    #[test]
    fn the_elided_span_keeps_the_files_text() {
        let file = "fn a() {\n    one();\n    two();\n    three();\n}\n";
        let old = "fn a() {\n    // ... existing code ...\n    three();\n}\n";
        let new = "fn a() {\n    // ... existing code ...\n    four();\n}\n";
        let out = elided(crate::edit::matching::search_replace, file, old, new, false)
            .unwrap()
            .unwrap();
        assert_eq!(out, "fn a() {\n    one();\n    two();\n    four();\n}\n");
    }

    #[test]
    fn a_part_found_twice_or_a_new_string_without_the_elision_is_refused() {
        let file = "a\nx\nb\nx\nc\n";
        let err = elided(
            crate::edit::matching::search_replace,
            file,
            "x\n...\nc\n",
            "x\n...\nd\n",
            false,
        )
        .unwrap()
        .unwrap_err();
        assert!(
            err.message("f").contains("repeat the unchanged lines"),
            "{err:?}"
        );
        let err = elided(
            crate::edit::matching::search_replace,
            "a\nb\nc\n",
            "a\n...\nc\n",
            "a\nz\nc\n",
            false,
        )
        .unwrap()
        .unwrap_err();
        assert!(err.message("f").contains("does not elide"), "{err:?}");
    }

    #[test]
    fn a_marker_line_that_is_in_the_file_is_code() {
        let file = "a\n// ...\nb\n";
        assert!(
            elided(
                crate::edit::matching::search_replace,
                file,
                "// ...\nb\n",
                "// ...\nc\n",
                false
            )
            .is_none()
        );
    }
}
