//! What a chat search shows of a hit (`ChatStore::search`): the text a message is
//! searched by and the excerpt around a match.

use crate::chat::model::Message;

/// What a content search looks at in a message: its text parts and the paths its
/// context events name.
pub(super) fn searchable_text(m: &Message) -> String {
    let mut out = String::new();
    for p in &m.parts {
        let piece = match p.kind.as_str() {
            "text" => p.content.as_deref(),
            "context_event" => p.path.as_deref(),
            _ => None,
        };
        if let Some(t) = piece {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(t);
        }
    }
    out
}

/// About 60 characters either side of the first case-insensitive match, on one line.
pub(super) fn excerpt_around(text: &str, needle: &str) -> Option<String> {
    let lower = text.to_lowercase();
    // ASCII lowering keeps byte offsets; otherwise excerpt the lowered text.
    let source = if lower.len() == text.len() {
        text
    } else {
        lower.as_str()
    };
    let at = lower.find(needle)?;
    let mut start = at.saturating_sub(60);
    while !source.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + needle.len() + 60).min(source.len());
    while !source.is_char_boundary(end) {
        end += 1;
    }
    let mut s: String = source[start..end]
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    if start > 0 {
        s.insert(0, '…');
    }
    if end < source.len() {
        s.push('…');
    }
    Some(s)
}
