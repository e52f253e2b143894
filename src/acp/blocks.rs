//! The context forms editors write into a prompt's text blocks, told apart from what
//! the user typed. ACP clients that predate (or skip) `resource` blocks send context as
//! text:
//!
//! - codecompanion.nvim: `Sharing the following file as context: <absolute path>` for a
//!   shared buffer or file, and `<attachment filepath="…" buffer_number="…">…</attachment>`
//!   when a shared buffer changed since (its body a unified diff from the buffer as
//!   last shared to the buffer now, [`super::patch`]);
//! - avante.nvim: `<selected_code><path>…</path><snippet>…</snippet></selected_code>` for
//!   a selection, `<previous_user_message>…</previous_user_message>` for each of the last
//!   few user messages (the new one among them, newest first), and
//!   `<system_context>Continuing from previous session…</system_context>`.
//!
//! Everything else in a text block is the user's own text.

/// One piece of a prompt's text blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    /// A file the editor shares (an absolute or project path).
    File(String),
    /// A shared buffer that changed since: its path and the unified diff from the text
    /// the editor last shared to the buffer now.
    Changed {
        /// The file's path as the editor wrote it.
        path: String,
        /// The unified diff (hunks only).
        diff: String,
    },
    /// A selection: the file's path and the selected text.
    Selection {
        /// The file's path as the editor wrote it.
        path: String,
        /// The selected lines.
        snippet: String,
    },
    /// One of the user messages avante repeats with each prompt.
    Previous(String),
    /// Text the user typed (or any text bb7 does not know as a context form).
    Text(String),
}

/// The prefix codecompanion gives a shared file's block.
const SHARING: &str = "Sharing the following file as context:";

/// The tags whose blocks are context, not typed text.
const TAGS: [&str; 4] = [
    "attachment",
    "selected_code",
    "previous_user_message",
    "system_context",
];

/// The pieces of one text block, in order.
pub(super) fn split(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix(SHARING) {
        let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
        let path = line.trim();
        if !path.is_empty() {
            out.push(Piece::File(path.to_owned()));
        }
        out.extend(split(after));
        return out;
    }
    let mut rest = text;
    while let Some((start, tag)) = next_tag(rest) {
        let open_end = match rest[start..].find('>') {
            Some(i) => start + i + 1,
            None => break,
        };
        let close = format!("</{tag}>");
        let Some(body_len) = rest[open_end..].find(&close) else {
            break;
        };
        push_text(&mut out, &rest[..start]);
        let open = &rest[start..open_end];
        let body = &rest[open_end..open_end + body_len];
        match tag {
            "attachment" => match attribute(open, "filepath") {
                Some(path) => match super::patch::diff_of(body) {
                    Some(diff) => out.push(Piece::Changed {
                        path,
                        diff: diff.to_owned(),
                    }),
                    None => out.push(Piece::File(path)),
                },
                None => push_text(&mut out, &rest[start..open_end + body_len + close.len()]),
            },
            "selected_code" => match (inner(body, "path"), inner(body, "snippet")) {
                (Some(path), Some(snippet)) => out.push(Piece::Selection {
                    path: path.trim().to_owned(),
                    snippet: snippet.to_owned(),
                }),
                _ => push_text(&mut out, body),
            },
            "previous_user_message" => out.push(Piece::Previous(body.trim().to_owned())),
            // avante's note that it repeats earlier messages: nothing for the model.
            _ => {}
        }
        rest = &rest[open_end + body_len + close.len()..];
    }
    push_text(&mut out, rest);
    out
}

/// The first of [`TAGS`] opening in `s`: its offset and name.
fn next_tag(s: &str) -> Option<(usize, &'static str)> {
    TAGS.iter()
        .filter_map(|t| {
            let mut from = 0;
            while let Some(i) = s[from..].find(&format!("<{t}")) {
                let at = from + i;
                let next = s[at + 1 + t.len()..].chars().next();
                if matches!(next, Some('>') | Some(' ') | Some('\n') | Some('\t')) {
                    return Some((at, *t));
                }
                from = at + 1;
            }
            None
        })
        .min_by_key(|(i, _)| *i)
}

/// Non-blank `s` as a text piece.
fn push_text(out: &mut Vec<Piece>, s: &str) {
    if !s.trim().is_empty() {
        out.push(Piece::Text(s.trim().to_owned()));
    }
}

/// The value of attribute `name="…"` (or `'…'`) of an opening tag.
fn attribute(open: &str, name: &str) -> Option<String> {
    let at = open.find(&format!("{name}="))? + name.len() + 1;
    let quote = open[at..]
        .chars()
        .next()
        .filter(|c| *c == '"' || *c == '\'')?;
    let value = &open[at + 1..];
    let end = value.find(quote)?;
    Some(value[..end].to_owned())
}

/// The text between `<name>` and `</name>` in `body`.
fn inner<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find(&format!("</{name}>"))?;
    let s = &body[start..start + end];
    // A snippet usually sits on lines of its own.
    let s = s.strip_prefix('\n').unwrap_or(s);
    Some(s.strip_suffix('\n').unwrap_or(s))
}

/// The repeated messages of `previous` (newest first, as avante sends them) that
/// `held` (the chat's user messages, oldest first) does not hold yet, oldest first:
/// each held message accounts for one repetition, so a message typed twice in a row
/// still arrives once more.
pub(super) fn new_messages(previous: &[String], held: &[String]) -> Vec<String> {
    let mut pool: Vec<&str> = held.iter().map(|s| s.trim()).collect();
    let mut out = Vec::new();
    for p in previous.iter().rev() {
        match pool.iter().rposition(|h| *h == p.trim()) {
            Some(i) => {
                pool.remove(i);
            }
            None => out.push(p.clone()),
        }
    }
    out
}

/// Where `snippet` lies in `text`: its first and last line (1-based), when it is
/// there once or more (the first place).
pub(super) fn find_lines(text: &str, snippet: &str) -> Option<(u64, u64)> {
    let s = snippet.trim_end_matches('\n');
    if s.trim().is_empty() {
        return None;
    }
    let at = text.find(s)?;
    let start = text[..at].matches('\n').count() as u64 + 1;
    let end = start + s.matches('\n').count() as u64;
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecompanion_forms() {
        assert_eq!(
            split("Sharing the following file as context: /p/a.txt"),
            vec![Piece::File("/p/a.txt".into())]
        );
        let a = "<attachment filepath=\"/p/a.txt\" buffer_number=\"1\">The file changed:\n````diff\n@@ -1 +1 @@\n-x\n+y\n````</attachment>";
        let changed = Piece::Changed {
            path: "/p/a.txt".into(),
            diff: "@@ -1 +1 @@\n-x\n+y\n".into(),
        };
        assert_eq!(split(a), vec![changed.clone()]);
        assert_eq!(
            split(&format!("{a}Do it")),
            vec![changed, Piece::Text("Do it".into())]
        );
        // A note without a diff: the file is read again.
        assert_eq!(
            split("<attachment filepath=\"/p/a.txt\">The file changed.</attachment>"),
            vec![Piece::File("/p/a.txt".into())]
        );
    }

    #[test]
    fn avante_forms() {
        let s = "<selected_code>\n<path>a.rs</path>\n<snippet>fn a() {}\n</snippet>\n</selected_code>\nExplain";
        assert_eq!(
            split(s),
            vec![
                Piece::Selection {
                    path: "a.rs".into(),
                    snippet: "fn a() {}".into()
                },
                Piece::Text("Explain".into())
            ]
        );
        assert_eq!(
            split("<system_context>Continuing from previous session</system_context>"),
            vec![]
        );
        let prev = vec!["ok".to_owned(), "ok".to_owned(), "hi".to_owned()];
        assert_eq!(
            new_messages(&prev, &["hi".into(), "ok".into()]),
            vec!["ok".to_owned()]
        );
        assert_eq!(find_lines("a\nb\nc\n", "b\nc\n"), Some((2, 3)));
    }

    #[test]
    fn odd_text_never_panics() {
        let odd = [
            "é<attachment filepath=\"é\">ü</attachment>ß",
            "<attachment filepath='x'",
            "<attachment>no path</attachment>",
            "<selected_code><path>ö</path>",
            "<selected_code><snippet>x</snippet></selected_code>",
            "<previous_user_message>",
            "<previous_user_messageX>y</previous_user_messageX>",
            "Sharing the following file as context:",
            "Sharing the following file as context: \n",
            "<<<>>>\u{1F600}<system_context",
        ];
        for t in odd {
            let _ = split(t);
            let _ = find_lines(t, "ü");
        }
        assert_eq!(
            split("<attachment>no path</attachment>"),
            vec![Piece::Text("<attachment>no path</attachment>".into())]
        );
    }
}
