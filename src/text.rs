//! Plain text as bb7 handles it, on the ground floor so every room uses the same rules:
//! line endings (snapshots and outputs hold LF; the user's file keeps its own style),
//! final newlines, splitting into lines, sections by line number, and the model's
//! strings as lines. Knows strings only.

use std::borrow::Cow;

/// Likely secrets replaced with `[REDACTED:kind]` (`bb7 export`).
pub mod redact;

/// Zero-width characters, bidi controls and Tags: found, named and shown visibly.
pub mod invisible;

use crate::error::{Error, Result};

/// Converts CRLF line endings to LF. Snapshots and outputs hold LF text; the ending
/// style of the user's file is restored on apply (see [`uses_crlf`]).
pub fn to_lf(text: &str) -> Cow<'_, str> {
    if text.contains("\r\n") {
        Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Whether a file's text uses CRLF for most of its line breaks.
pub fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count();
    crlf > 0 && crlf * 2 >= lf
}

/// Writes `text` with CRLF endings when `crlf` is true (LF text in, any text out).
pub fn with_line_endings(text: &str, crlf: bool) -> String {
    if crlf {
        to_lf(text).replace('\n', "\r\n")
    } else {
        text.to_owned()
    }
}

/// Lines of `text`, each with its `\n` (the last may lack one).
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Number of lines of `text` (a last line without newline counts).
pub fn line_count(text: &str) -> usize {
    lines(text).len()
}

/// Whether the merged file ends with a newline: as the disk file (`ours`) does, unless
/// the model changed the end (its output `theirs` and the snapshot `base` differ there).
pub fn final_newline(base: Option<&str>, theirs: &str, ours: Option<&str>) -> bool {
    match (base, ours) {
        (Some(b), _) if b.ends_with('\n') != theirs.ends_with('\n') => theirs.ends_with('\n'),
        (_, Some(o)) if !o.is_empty() => o.ends_with('\n'),
        _ => theirs.ends_with('\n'),
    }
}

/// `t` with a final newline (an empty text stays empty), so that a missing final
/// newline is not seen as a change of the last line.
pub fn with_nl(t: &str) -> String {
    if t.is_empty() || t.ends_with('\n') {
        t.to_owned()
    } else {
        format!("{t}\n")
    }
}

/// `t` with its final newline added or removed.
pub fn set_final_newline(mut t: String, on: bool) -> String {
    if on {
        if !t.is_empty() && !t.ends_with('\n') {
            t.push('\n');
        }
    } else if t.ends_with('\n') {
        t.pop();
    }
    t
}

/// Whether two texts are the same file content once a missing final newline is
/// normalised: the reference plugin sends buffers joined with `\n`, without the
/// file's last newline, so `"a\n"` and `"a"` are the same file.
pub fn same_text(a: &str, b: &str) -> bool {
    a.strip_suffix('\n').unwrap_or(a) == b.strip_suffix('\n').unwrap_or(b)
}

/// The text of lines `start..=end` (1-based). `content` is either exactly the
/// section (`end - start + 1` lines) or a whole file that has line `end`.
/// Errors (`invalid_request`): a range the content cannot cover.
pub fn section_text(content: &str, start: u64, end: u64) -> Result<String> {
    // Line numbers also come from chat.json, which a cloned repository may carry.
    if start == 0 || end < start {
        return Err(Error::invalid(format!("Invalid line range {start}-{end}")));
    }
    let want = (end - start + 1) as usize;
    let lines = lines(content);
    if lines.len() == want {
        return Ok(content.to_owned());
    }
    if (end as usize) > lines.len() {
        return Err(Error::invalid(format!(
            "Invalid line range {start}-{end}: the content has {} lines",
            lines.len()
        )));
    }
    Ok(lines[(start - 1) as usize..end as usize].concat())
}

/// Splits a model's string into lines: `\r` dropped, one trailing newline ignored.
/// An empty string has no lines.
pub fn model_lines(s: &str) -> Vec<String> {
    let s = s.replace("\r\n", "\n");
    if s.is_empty() {
        return Vec::new();
    }
    let s = s.strip_suffix('\n').unwrap_or(&s);
    s.split('\n').map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_round_trip() {
        assert!(uses_crlf("a\r\nb\r\n"));
        assert!(!uses_crlf("a\nb\n"));
        assert_eq!(with_line_endings("a\nb", true), "a\r\nb");
        assert_eq!(to_lf("a\r\nb\r\n"), "a\nb\n");
    }

    #[test]
    fn sections_by_line_number() {
        assert_eq!(section_text("a\nb\nc\n", 2, 3).unwrap(), "b\nc\n");
        assert_eq!(section_text("b\n", 2, 2).unwrap(), "b\n");
        assert!(section_text("a\n", 0, 1).is_err());
        assert!(section_text("a\n", 3, 2).is_err());
        assert!(section_text("a\nb\n", 5, 9).is_err());
    }

    #[test]
    fn a_missing_final_newline_is_the_same_text() {
        assert!(same_text("a\nb\n", "a\nb"));
        assert!(same_text("a\nb", "a\nb\n"));
        assert!(same_text("", ""));
        assert!(!same_text("a\nb\n\n", "a\nb"));
        assert!(!same_text("a\nb", "a\nc"));
    }

    #[test]
    fn model_strings_as_lines() {
        assert_eq!(model_lines("a\r\nb\n"), vec!["a", "b"]);
        assert!(model_lines("").is_empty());
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(set_final_newline("a".into(), true), "a\n");
    }
}
