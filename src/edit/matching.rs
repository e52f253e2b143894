//! Finding the text an `edit_file` call means to replace (seed 004, `edit_file`).
//!
//! The pipeline tries, in order: the exact text; the lines with trailing whitespace
//! ignored; the lines with leading and trailing whitespace ignored (the replacement is
//! re-indented to the file); the same with typographic punctuation folded to ASCII
//! (models turn `'` into `’`, `--` into `–`). The first step that finds anything
//! decides: one match is applied, several are an error — an ambiguous edit is never
//! applied, and no looser step is tried after an ambiguous one.

use similar::TextDiff;

/// Why an edit could not be applied.
#[derive(Debug, Clone, PartialEq)]
pub enum EditError {
    /// `old_string` was not found. `suggestions` are the closest lines of the file,
    /// as `"<line>: <text>"`.
    NotFound {
        /// Lines in the file.
        file_lines: usize,
        /// Closest lines, best first.
        suggestions: Vec<String>,
    },
    /// `old_string` occurs more than once; `match_lines` are the 1-based first lines of
    /// each occurrence.
    NotUnique {
        /// Where each match starts.
        match_lines: Vec<usize>,
    },
    /// The edit itself is malformed (empty `old_string`, missing anchor, …).
    Invalid(String),
}

impl EditError {
    /// The message shown to the user and sent back to the model (seed 004 wording).
    pub fn message(&self, path: &str) -> String {
        match self {
            EditError::NotFound {
                file_lines,
                suggestions,
            } => {
                let mut m =
                    format!("old_string not found in {path}. File contains {file_lines} lines.");
                if !suggestions.is_empty() {
                    m.push_str(&format!(" Did you mean: {}?", suggestions.join(" | ")));
                }
                m
            }
            EditError::NotUnique { match_lines } => format!(
                "Found {} matches for old_string. Use replace_all=true or provide more context. Matches at lines: {}",
                match_lines.len(),
                match_lines
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            EditError::Invalid(m) => m.clone(),
        }
    }
}

/// How a pipeline step normalises a line before comparing.
type LineNorm = fn(&str) -> String;

/// Which pipeline step matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// The exact text.
    Exact,
    /// Lines equal up to trailing whitespace.
    TrailingWhitespace,
    /// Lines equal up to leading and trailing whitespace; replacement re-indented.
    Indentation,
    /// As `Indentation`, with typographic punctuation folded.
    Punctuation,
}

/// Replaces `old` with `new` in `content` following the pipeline above.
/// Returns the new content and the step that matched.
pub fn search_replace(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, MatchKind), EditError> {
    if old.is_empty() {
        return Err(EditError::Invalid(
            "old_string must not be empty; use write_file to create or rewrite a file".into(),
        ));
    }
    let exact: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    if replace_all && !exact.is_empty() {
        return Ok((content.replace(old, new), MatchKind::Exact));
    }
    if let [at] = exact[..] {
        let replacement = indent_continuation(content, at, old, new);
        let mut out = String::with_capacity(content.len() + replacement.len());
        out.push_str(&content[..at]);
        out.push_str(&replacement);
        out.push_str(&content[at + old.len()..]);
        return Ok((out, MatchKind::Exact));
    }
    if exact.len() > 1 {
        return Err(EditError::NotUnique {
            match_lines: exact.iter().map(|&i| line_of(content, i)).collect(),
        });
    }
    let steps: [(MatchKind, LineNorm); 3] = [
        (MatchKind::TrailingWhitespace, |l| l.trim_end().to_owned()),
        (MatchKind::Indentation, |l| l.trim().to_owned()),
        (MatchKind::Punctuation, |l| fold_punctuation(l.trim())),
    ];
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let old_lines: Vec<&str> = old.trim_end_matches('\n').split('\n').collect();
    for (kind, norm) in steps {
        let matches = find_line_windows(&lines, &old_lines, norm);
        if matches.is_empty() {
            continue;
        }
        if matches.len() > 1 && !replace_all {
            return Err(EditError::NotUnique {
                match_lines: matches.iter().map(|&i| i + 1).collect(),
            });
        }
        return Ok((
            replace_windows(&lines, &matches, &old_lines, new, kind),
            kind,
        ));
    }
    Err(not_found(content, old))
}

/// When an exact match starts right after a line's indentation and `old` carries no
/// indentation of its own, the model wrote the edit relative to that line: the later
/// lines of a multi-line `new` get the same indentation.
fn indent_continuation(content: &str, at: usize, old: &str, new: &str) -> String {
    let line_start = content[..at].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let indent = &content[line_start..at];
    if indent.is_empty()
        || !indent.chars().all(|c| c == ' ' || c == '\t')
        || old.starts_with([' ', '\t'])
        || !new.contains('\n')
    {
        return new.to_owned();
    }
    let mut out = String::new();
    for (i, line) in new.split_inclusive('\n').enumerate() {
        if i > 0 && !line.trim().is_empty() {
            out.push_str(indent);
        }
        out.push_str(line);
    }
    out
}

fn find_line_windows(lines: &[&str], old: &[&str], norm: LineNorm) -> Vec<usize> {
    let k = old.len();
    if k == 0 || k > lines.len() {
        return Vec::new();
    }
    let want: Vec<String> = old.iter().map(|l| norm(l.trim_end_matches('\r'))).collect();
    if want.iter().all(String::is_empty) {
        return Vec::new();
    }
    let have: Vec<String> = lines
        .iter()
        .map(|l| norm(l.trim_end_matches('\n').trim_end_matches('\r')))
        .collect();
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

fn replace_windows(
    lines: &[&str],
    starts: &[usize],
    old: &[&str],
    new: &str,
    kind: MatchKind,
) -> String {
    let k = old.len();
    let mut out = String::new();
    let mut i = 0;
    for &s in starts {
        out.extend(lines[i..s].iter().copied());
        let block_ends_with_newline = lines[s + k - 1].ends_with('\n');
        let mut replacement = match kind {
            MatchKind::Indentation | MatchKind::Punctuation => {
                reindent(new, old, lines[s..s + k].as_ref())
            }
            _ => new.to_owned(),
        };
        if block_ends_with_newline && !replacement.is_empty() && !replacement.ends_with('\n') {
            replacement.push('\n');
        }
        out.push_str(&replacement);
        i = s + k;
    }
    out.extend(lines[i..].iter().copied());
    out
}

/// Shifts `new` from the indentation of `old`'s first non-blank line to that of the
/// matched file line.
fn reindent(new: &str, old: &[&str], matched: &[&str]) -> String {
    let Some(pos) = old.iter().position(|l| !l.trim().is_empty()) else {
        return new.to_owned();
    };
    let old_indent = indent_of(old[pos]);
    let file_indent = indent_of(matched[pos]);
    if old_indent == file_indent {
        return new.to_owned();
    }
    new.split_inclusive('\n')
        .map(|l| {
            if l.trim().is_empty() {
                l.to_owned()
            } else if let Some(rest) = l.strip_prefix(old_indent) {
                format!("{file_indent}{rest}")
            } else {
                format!("{file_indent}{}", l.trim_start())
            }
        })
        .collect()
}

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

fn fold_punctuation(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201B}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201F}' | '\u{2033}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2007}' | '\u{202F}' => ' ',
            '\u{2026}' => '.',
            other => other,
        })
        .collect()
}

/// 1-based line number of byte offset `at`.
pub fn line_of(content: &str, at: usize) -> usize {
    content.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn not_found(content: &str, old: &str) -> EditError {
    let probe = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let file_lines = content.lines().count();
    EditError::NotFound {
        file_lines,
        suggestions: closest_lines(content, probe, 3),
    }
}

/// Up to `n` lines of `content` most similar to `probe` (similarity ≥ 0.5), as
/// `"<line>: <text>"`, best first.
pub fn closest_lines(content: &str, probe: &str, n: usize) -> Vec<String> {
    if probe.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f32, usize, &str)> = content
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (TextDiff::from_chars(probe, l.trim()).ratio(), i + 1, l))
        .filter(|(r, _, _)| *r >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(n)
        .map(|(_, line, text)| format!("{line}: {}", text.trim()))
        .collect()
}

/// Replaces the block from the line equal to `start` through the next line equal to
/// `end` (both compared with surrounding whitespace ignored, both inclusive) with
/// `replacement` (the `anchored` diff mode). The start anchor must be unique.
pub fn anchored(
    content: &str,
    start: &str,
    end: &str,
    replacement: &str,
) -> Result<String, EditError> {
    let (start, end) = (start.trim(), end.trim());
    if start.is_empty() || end.is_empty() {
        return Err(EditError::Invalid(
            "start_anchor and end_anchor must not be empty".into(),
        ));
    }
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim() == start)
        .map(|(i, _)| i)
        .collect();
    let s = match starts.as_slice() {
        [] => return Err(not_found(content, start)),
        [one] => *one,
        many => {
            return Err(EditError::NotUnique {
                match_lines: many.iter().map(|i| i + 1).collect(),
            });
        }
    };
    let e = (s..lines.len())
        .find(|&i| lines[i].trim() == end)
        .ok_or_else(|| {
            EditError::Invalid(format!("end_anchor not found after line {}: {end}", s + 1))
        })?;
    let mut out: String = lines[..s].concat();
    out.push_str(replacement);
    if lines[e].ends_with('\n') && !replacement.is_empty() && !replacement.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&lines[e + 1..].concat());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_of_the_pipeline() {
        let file = "fn a() {\n    let x = 1;   \n    let y = 2;\n}\n";
        let (out, k) = search_replace(file, "let y = 2;", "let y = 3;", false).unwrap();
        assert_eq!(
            (out.as_str(), k),
            (
                "fn a() {\n    let x = 1;   \n    let y = 3;\n}\n",
                MatchKind::Exact
            )
        );
        let (out, k) = search_replace(
            file,
            "    let x = 1;\n    let y = 2;",
            "    let x = 5;\n    let y = 6;",
            false,
        )
        .unwrap();
        assert_eq!(k, MatchKind::TrailingWhitespace);
        assert_eq!(out, "fn a() {\n    let x = 5;\n    let y = 6;\n}\n");
        let (out, k) = search_replace(
            file,
            "let x = 1;\nlet y = 2;",
            "let x = 7;\nif x {\n    y();\n}",
            false,
        )
        .unwrap();
        assert_eq!(k, MatchKind::Indentation);
        assert_eq!(
            out,
            "fn a() {\n    let x = 7;\n    if x {\n        y();\n    }\n}\n"
        );
        let quoted = "say('hi');\n";
        let (out, k) =
            search_replace(quoted, "say(\u{2018}hi\u{2019});", "say('bye');", false).unwrap();
        assert_eq!((out.as_str(), k), ("say('bye');\n", MatchKind::Punctuation));
    }

    #[test]
    fn a_mid_line_exact_match_indents_continuation_lines() {
        let file = "fn f() {\n    return s;\n}\n";
        let (out, _) = search_replace(
            file,
            "return s;",
            "if x {\n    return 0;\n}\nreturn s;",
            false,
        )
        .unwrap();
        assert_eq!(
            out,
            "fn f() {\n    if x {\n        return 0;\n    }\n    return s;\n}\n"
        );
        let (out, _) = search_replace("a = f(1)\n", "f(1)", "f(\n  2)", false).unwrap();
        assert_eq!(out, "a = f(\n  2)\n");
    }

    #[test]
    fn ambiguity_and_absence_are_errors() {
        let file = "a = 1\nb = 2\na = 1\n";
        assert_eq!(
            search_replace(file, "a = 1", "x", false),
            Err(EditError::NotUnique {
                match_lines: vec![1, 3]
            })
        );
        assert_eq!(
            search_replace(file, "a = 1", "x", true).unwrap().0,
            "x\nb = 2\nx\n"
        );
        match search_replace(file, "b = 3", "x", false) {
            Err(EditError::NotFound {
                suggestions,
                file_lines,
            }) => {
                assert_eq!(file_lines, 3);
                assert_eq!(suggestions[0], "2: b = 2");
            }
            other => panic!("{other:?}"),
        }
        // Ambiguous after whitespace folding is still refused.
        assert!(matches!(
            search_replace("  a\n a\n", "a  ", "b", false),
            Err(EditError::NotUnique { .. })
        ));
        assert!(matches!(
            search_replace(file, "", "x", false),
            Err(EditError::Invalid(_))
        ));
    }

    #[test]
    fn anchored_blocks() {
        let file = "fn a() {\n    1\n}\nfn b() {\n    2\n}\n";
        assert_eq!(
            anchored(file, "fn b() {", "}", "fn b() {\n    3\n}").unwrap(),
            "fn a() {\n    1\n}\nfn b() {\n    3\n}\n"
        );
        assert!(matches!(
            anchored(file, "}", "}", ""),
            Err(EditError::NotUnique { .. })
        ));
        assert!(matches!(
            anchored(file, "fn c() {", "}", ""),
            Err(EditError::NotFound { .. })
        ));
    }
}
