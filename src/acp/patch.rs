//! The unified diff a client sends for a buffer that changed since it was shared
//! (codecompanion.nvim's `<attachment>`: `vim.diff` of the buffer as last shared against
//! the buffer now), applied to a text bb7 holds. The format is GNU diff's "unified
//! format" (hunk headers `@@ -l,s +l,s @@`, lines led by ` `, `-` or `+`); a hunk
//! applies only where its context and removed lines stand exactly (whitespace
//! included), at its line or the nearest place after the previous hunk, as `patch`
//! without fuzz does. Whatever does not apply is refused, never guessed.

/// One hunk: where it says it starts in the old text, and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    /// First old line, 1-based (0 for an insertion into an empty text).
    old_start: usize,
    /// The old side: context and removed lines, without line endings.
    old: Vec<String>,
    /// The new side: context and added lines, without line endings.
    new: Vec<String>,
}

/// The diff in a client's change note: the body of its first fenced block
/// (```` ```diff ````, any fence of three or more backticks), else everything from the
/// first hunk header. `None` when the note holds no hunk.
pub(super) fn diff_of(note: &str) -> Option<&str> {
    let mut lines = note.split_inclusive('\n');
    let mut offset = 0;
    for line in lines.by_ref() {
        let t = line.trim_start();
        let ticks = t.len() - t.trim_start_matches('`').len();
        offset += line.len();
        if ticks >= 3 && t[ticks..].trim().eq_ignore_ascii_case("diff") {
            let body = &note[offset..];
            let fence = &t[..ticks];
            let end = body
                .split_inclusive('\n')
                .scan(0, |at, l| {
                    let start = *at;
                    *at += l.len();
                    Some((start, l))
                })
                .find(|(_, l)| l.trim() == fence)
                .map_or(body.len(), |(start, _)| start);
            let diff = &body[..end];
            return diff.contains("@@ -").then_some(diff);
        }
    }
    let at = note.find("@@ -")?;
    Some(&note[at..])
}

/// The hunks of `diff`; `None` when a header or a line is malformed or a hunk's
/// lines disagree with its header's counts.
fn parse(diff: &str) -> Option<Vec<Hunk>> {
    let mut hunks: Vec<Hunk> = Vec::new();
    // Lines still expected on each side of the current hunk.
    let mut left = (0usize, 0usize);
    for line in diff.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(header) = line.strip_prefix("@@ -") {
            if left != (0, 0) {
                return None;
            }
            let (old, rest) = header.split_once(" +")?;
            let (new, _) = rest.split_once(" @@")?;
            let (old_start, old_len) = range(old)?;
            let (_, new_len) = range(new)?;
            hunks.push(Hunk {
                old_start,
                old: Vec::new(),
                new: Vec::new(),
            });
            left = (old_len, new_len);
            continue;
        }
        let Some(h) = hunks.last_mut() else {
            // `---`/`+++` file headers, or prose before the first hunk.
            continue;
        };
        if line.starts_with('\\') {
            // "\ No newline at end of file": the final newline is kept as the text has it.
            continue;
        }
        if left == (0, 0) {
            // Text after the last hunk (a fence's remains, a trailing note).
            if line.trim().is_empty() {
                continue;
            }
            return None;
        }
        // An empty context line may come without its leading space.
        let (mark, text) = match line.chars().next() {
            Some(c @ (' ' | '-' | '+')) => (c, &line[1..]),
            None => (' ', ""),
            Some(_) => return None,
        };
        if mark != '+' {
            left.0 = left.0.checked_sub(1)?;
            h.old.push(text.to_owned());
        }
        if mark != '-' {
            left.1 = left.1.checked_sub(1)?;
            h.new.push(text.to_owned());
        }
    }
    (left == (0, 0) && !hunks.is_empty()).then_some(hunks)
}

/// `l,s` or `l` of a hunk header: start line and length (1 when omitted).
fn range(s: &str) -> Option<(usize, usize)> {
    match s.split_once(',') {
        Some((l, n)) => Some((l.parse().ok()?, n.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

/// `text` with `diff` applied: `None` when the diff is malformed or a hunk's old side
/// does not stand in `text`. The text's line endings (LF or CRLF, by its first line)
/// and final newline are kept; added lines take its ending.
pub(super) fn apply(text: &str, diff: &str) -> Option<String> {
    let hunks = parse(diff)?;
    let crlf = text
        .split_once('\n')
        .is_some_and(|(l, _)| l.ends_with('\r'));
    let final_newline = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut out: Vec<String> = Vec::new();
    // Old lines already copied or replaced.
    let mut done = 0;
    for h in &hunks {
        let at = place(&lines, h, done)?;
        out.extend(lines[done..at].iter().map(|l| (*l).to_owned()));
        out.extend(h.new.iter().cloned());
        done = at + h.old.len();
    }
    out.extend(lines[done..].iter().map(|l| (*l).to_owned()));
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut s = out.join(eol);
    if final_newline && !out.is_empty() {
        s.push_str(eol);
    }
    Some(s)
}

/// Where hunk `h` applies in `lines`, at or after line `from` (0-based): its stated
/// place when its old side stands there, else the nearest place that holds it.
fn place(lines: &[&str], h: &Hunk, from: usize) -> Option<usize> {
    // `@@ -0,0` inserts before the first line; `@@ -5,0` after line 5.
    let stated = if h.old.is_empty() {
        h.old_start
    } else {
        h.old_start.saturating_sub(1)
    };
    let fits = |at: usize| {
        at >= from
            && at + h.old.len() <= lines.len()
            && lines[at..at + h.old.len()]
                .iter()
                .zip(&h.old)
                .all(|(a, b)| *a == b)
    };
    let last = lines.len().saturating_sub(h.old.len());
    (0..=lines.len()).find_map(|d| {
        [stated.checked_add(d), stated.checked_sub(d)]
            .into_iter()
            .flatten()
            .filter(|at| *at <= last)
            .find(|at| fits(*at))
    })
}

/// Whether `text` already holds what `diff` makes: its new side applies backwards
/// (the buffer was saved, or the change reached bb7 another way).
pub(super) fn applied(text: &str, diff: &str) -> bool {
    let Some(hunks) = parse(diff) else {
        return false;
    };
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut from = 0;
    for h in hunks {
        let back = Hunk {
            old_start: h.old_start,
            old: h.new,
            new: h.old,
        };
        match place(&lines, &back, from) {
            Some(at) => from = at + back.old.len(),
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// codecompanion 19.22.0's note for a buffer changed since it was shared.
    const NOTE: &str = "The file `/p/a.txt`, has been modified. Here are the changes:\n````diff\n@@ -1,4 +1,4 @@\n alpha\n beta\n gamma\n-delta\n+delta (unsaved)\n````";

    #[test]
    fn a_recorded_note_applies_to_the_text_it_was_made_from() {
        let diff = diff_of(NOTE).unwrap();
        assert_eq!(
            apply("alpha\nbeta\ngamma\ndelta\n", diff).as_deref(),
            Some("alpha\nbeta\ngamma\ndelta (unsaved)\n")
        );
        assert_eq!(
            apply("alpha\r\nbeta\r\ngamma\r\ndelta\r\n", diff).as_deref(),
            Some("alpha\r\nbeta\r\ngamma\r\ndelta (unsaved)\r\n")
        );
        assert_eq!(apply("alpha\nbeta\ngamma\nDELTA\n", diff), None);
        assert!(applied("alpha\nbeta\ngamma\ndelta (unsaved)\n", diff));
        assert!(!applied("alpha\nbeta\ngamma\ndelta\n", diff));
    }

    #[test]
    fn hunks_move_to_where_their_lines_stand() {
        let diff = "@@ -2,2 +2,3 @@\n b\n-c\n+C\n+c2\n@@ -9,1 +10,1 @@\n-i\n+I\n";
        let text = "x\na\nb\nc\nd\ne\nf\ng\nh\ni\n";
        assert_eq!(
            apply(text, diff).as_deref(),
            Some("x\na\nb\nC\nc2\nd\ne\nf\ng\nh\nI\n")
        );
        // Added at the end, into an empty text, an empty context line without its space.
        assert_eq!(
            apply("a\n\nb\n", "@@ -1,3 +1,4 @@\n a\n\n b\n+c\n").as_deref(),
            Some("a\n\nb\nc\n")
        );
        assert_eq!(
            apply("", "@@ -0,0 +1,1 @@\n+new\n").as_deref(),
            Some("new\n")
        );
        assert_eq!(apply("a", "@@ -1 +1 @@\n-a\n+b\n").as_deref(), Some("b"));
    }

    #[test]
    fn malformed_diffs_apply_nowhere_and_never_panic() {
        for d in [
            "",
            "@@ -1,2 +1,2 @@\n a\n",
            "@@ -x +1 @@\n a\n",
            "@@ -1,1 +1,1 @@\n a\n b\n",
            "@@ -1,1 +1,1 @@\n*a\n",
            "@@ -99999999999999999999,1 +1 @@\n-a\n",
            "@@ -5,1 +5,1 @@\n-\u{1F600}\n+é\n",
        ] {
            assert_eq!(apply("a\nb\n", d), None, "{d:?}");
            let _ = applied("a\nb\n", d);
        }
        assert_eq!(diff_of("no changes here"), None);
        assert_eq!(diff_of("```diff\nnot a diff\n```"), None);
    }
}
