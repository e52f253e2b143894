//! Why an edit could not be applied ([`EditError`]), with the text the model and the
//! user see, and the closest lines of the file offered as suggestions.

use serde::{Deserialize, Serialize};
use similar::TextDiff;

/// Why a tool call failed, as `diff_error.tool_calls[].code` says it
/// (docs/PROTOCOL.md, "the model's file tools").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallCode {
    /// The path leaves the project or names a protected directory.
    PathEscape,
    /// The path is empty or not a file path.
    InvalidPath,
    /// The arguments are not JSON or not of the tool's schema.
    InvalidArguments,
    /// The file is read-only (a section, an external file, a global chat).
    ReadOnly,
    /// An edit of a file the model was not shown.
    NotInContext,
    /// The edit names another version of the file.
    FileIdMismatch,
    /// The text to replace is not in the file.
    NotFound,
    /// The text to replace is in the file more than once.
    NotUnique,
    /// The edit itself is unusable (e.g. an empty search text).
    InvalidEdit,
    /// The edit was planned but its output could not be stored (a name the file
    /// system refuses, a full disk).
    StoreFailed,
}

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
        /// 1-based lines where `old_string` occurs only as part of a longer word (a
        /// name cut at its start or end), which is never taken as a match.
        inside_words: Vec<usize>,
        /// Where the copy parts from the file: the file line that starts like a line
        /// of `old_string` longest, and a note naming the column (1-based, in
        /// characters) where they differ and what each has there.
        diverges: Option<(usize, String)>,
    },
    /// `old_string` occurs more than once; `match_lines` are the 1-based first lines of
    /// each occurrence.
    NotUnique {
        /// Where each match starts.
        match_lines: Vec<usize>,
    },
    /// The edit itself is malformed or cannot be placed safely.
    Invalid(String),
}

impl EditError {
    /// The message shown to the user and sent back to the model.
    pub fn message(&self, path: &str) -> String {
        match self {
            EditError::NotFound {
                file_lines,
                suggestions,
                inside_words,
                diverges,
            } => {
                let mut m =
                    format!("old_string not found in {path}. File contains {file_lines} lines.");
                if let Some((_, note)) = diverges {
                    m.push(' ');
                    m.push_str(note);
                }
                if !inside_words.is_empty() {
                    m.push_str(&format!(
                        " It occurs only inside longer names (line {}): old_string must start and end at whole names.",
                        inside_words
                            .iter()
                            .map(usize::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
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

    /// The machine-readable code of this error.
    pub fn code(&self) -> CallCode {
        match self {
            EditError::NotFound { .. } => CallCode::NotFound,
            EditError::NotUnique { .. } => CallCode::NotUnique,
            EditError::Invalid(_) => CallCode::InvalidEdit,
        }
    }
}

/// The error for an `old` that matched nowhere, with the closest lines.
pub(crate) fn not_found(content: &str, old: &str) -> EditError {
    let probe = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    EditError::NotFound {
        file_lines: content.lines().count(),
        suggestions: closest_lines(content, probe, 3),
        inside_words: inside_words(content, old),
        diverges: divergence(content, old),
    }
}

/// Characters of a copy's line that must agree with a file line before the copy is
/// said to "start like" it: fewer would name unrelated lines that share a keyword.
const DIVERGENCE_MIN: usize = 8;

/// Lines of `old` examined for where the copy parts from the file; a copy is read
/// from its top, and its first wrong line is what the model must fix.
const DIVERGENCE_PROBES: usize = 64;

/// Where the copy parts from the file: the first line of `old` (after its
/// indentation) that is no line of the file, the file line sharing the longest start
/// with it (at least [`DIVERGENCE_MIN`] characters), and a sentence naming that line,
/// the 1-based column (in characters, counting the file line's indentation) where
/// they differ and what each has from there. Without it, a long line copied with
/// one character changed is hard to find: the suggestions show only lines' starts.
fn divergence(content: &str, old: &str) -> Option<(usize, String)> {
    let file: std::collections::HashSet<&str> = content
        .lines()
        .map(|l| l.trim_start().trim_end_matches('\r'))
        .collect();
    let probe = old
        .lines()
        .map(|l| l.trim_start().trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .take(DIVERGENCE_PROBES)
        .find(|l| !file.contains(l))?;
    let mut best: Option<(usize, usize, usize, &str)> = None;
    for (i, line) in content.lines().enumerate() {
        let body = line.trim_start();
        let same = body
            .chars()
            .zip(probe.chars())
            .take_while(|(a, b)| a == b)
            .count();
        if same >= DIVERGENCE_MIN && best.is_none_or(|b| same > b.1) {
            let indent = line.chars().count() - body.chars().count();
            best = Some((i + 1, same, indent, body));
        }
    }
    let (line, same, indent, body) = best?;
    let from = |s: &str| -> String {
        let rest: String = s
            .trim_end_matches('\r')
            .chars()
            .skip(same)
            .take(24)
            .collect();
        if rest.is_empty() {
            "the end of the line".to_owned()
        } else {
            format!("{rest:?}")
        }
    };
    Some((
        line,
        format!(
            "Line {line} starts like old_string but differs at column {}: the file has {}, old_string has {}.",
            indent + same + 1,
            from(body),
            from(probe)
        ),
    ))
}

/// Lines (1-based, at most 5) where `old` occurs cutting a word of `content`, when it
/// occurs nowhere else (an occurrence between words was refused for another reason,
/// which the suggestions cover).
fn inside_words(content: &str, old: &str) -> Vec<usize> {
    if old.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for (at, _) in content.match_indices(old) {
        if super::text::on_token_boundaries(content, at, old) {
            return Vec::new();
        }
        if lines.len() < 5 {
            lines.push(memchr::memchr_iter(b'\n', &content.as_bytes()[..at]).count() + 1);
        }
    }
    lines.dedup();
    lines
}

/// Characters of a line compared when looking for suggestions. A character diff
/// costs the product of the lengths in the worst case, so one 20 MB line would stall
/// the process for minutes (invariant 15): suggestions are judged on each line's
/// start.
const SUGGESTION_CHARS: usize = 400;

/// Up to `n` lines of `content` most similar to `probe` (similarity ≥ 0.5, judged on
/// the first [`SUGGESTION_CHARS`] characters), as `"<line>: <text>"`, best first.
pub fn closest_lines(content: &str, probe: &str, n: usize) -> Vec<String> {
    let probe = prefix_chars(probe, SUGGESTION_CHARS);
    if probe.is_empty() {
        return Vec::new();
    }
    let probe_len = probe.chars().count();
    let mut scored: Vec<(f32, usize, &str)> = content
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .filter_map(|(i, l)| {
            let line = prefix_chars(l.trim(), SUGGESTION_CHARS);
            let len = line.chars().count();
            // The ratio is at most 2·min/(min+max): below 0.5 when one is over three
            // times the other, so such pairs need no diff.
            if len.min(probe_len) * 3 < len.max(probe_len) {
                return None;
            }
            Some((TextDiff::from_chars(probe, line).ratio(), i + 1, l))
        })
        .filter(|(r, _, _)| *r >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(n)
        .map(|(_, line, text)| format!("{line}: {}", prefix_chars(text.trim(), SUGGESTION_CHARS)))
        .collect()
}

/// The first `n` characters of `s`.
fn prefix_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}
