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
            } => {
                let mut m =
                    format!("old_string not found in {path}. File contains {file_lines} lines.");
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
    }
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
