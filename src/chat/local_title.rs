//! A chat's title made from its first question without a model (config `title_model`
//! unset, or until the title model answers): the question's first line of prose,
//! without Markdown markers, code or a polite opening, cut at a word boundary.

/// Most words a local title keeps.
const MAX_WORDS: usize = 8;
/// Most characters a local title keeps (before the ellipsis).
const MAX_CHARS: usize = 50;

/// Openings that say nothing about the subject ("please", "can you", …), dropped
/// from the start of the title, longest first.
const OPENINGS: &[&str] = &[
    "could you please ",
    "can you please ",
    "would you please ",
    "could you ",
    "can you ",
    "would you ",
    "please ",
    "hi, ",
    "hi ",
    "hey, ",
    "hey ",
];

/// The title for a chat whose first question is `question`; `None` when it has no
/// line of prose (only code, or blank), so the chat keeps its default name.
pub fn from_question(question: &str) -> Option<String> {
    let mut in_fence = false;
    let line = question.lines().find_map(|l| {
        let t = l.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            return None;
        }
        let t = t.trim_start_matches(['#', '>', '-', '*', '+', ' ']).trim();
        (!in_fence && t.chars().any(char::is_alphanumeric)).then_some(t)
    })?;
    let mut text: String = line.replace('`', "");
    for o in OPENINGS {
        if text.len() > o.len()
            && text.is_char_boundary(o.len())
            && text[..o.len()].eq_ignore_ascii_case(o)
        {
            text = text[o.len()..].to_owned();
            break;
        }
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut title = String::new();
    let mut cut = false;
    for (i, w) in words.iter().enumerate() {
        let next = title.chars().count() + w.chars().count() + usize::from(i > 0);
        if i >= MAX_WORDS || (i > 0 && next > MAX_CHARS) {
            cut = true;
            break;
        }
        if i > 0 {
            title.push(' ');
        }
        title.push_str(w);
    }
    if title.chars().count() > MAX_CHARS {
        title = title.chars().take(MAX_CHARS).collect();
        cut = true;
    }
    let title = title.trim_end_matches(['?', '.', '!', ':', ',', ';', ' ']);
    let mut chars = title.chars();
    let first = chars.next()?;
    let mut out: String = first.to_uppercase().chain(chars).collect();
    if cut {
        out.push('…');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::from_question;

    #[test]
    fn the_first_line_of_prose_becomes_a_short_title() {
        let cases = [
            (
                "why does parse() fail on empty input?",
                "Why does parse() fail on empty input",
            ),
            ("Can you rename `foo` to `bar`?", "Rename foo to bar"),
            (
                "please explain how the retry loop in the SSE client decides when to give up and what it logs",
                "Explain how the retry loop in the SSE…",
            ),
            (
                "```rust\nfn main() {}\n```\nwhat does this print",
                "What does this print",
            ),
            ("# Bug\nthe server hangs", "Bug"),
        ];
        for (q, want) in cases {
            assert_eq!(from_question(q).as_deref(), Some(want), "{q}");
        }
    }

    #[test]
    fn a_question_without_prose_keeps_the_default_name() {
        assert_eq!(from_question("   \n"), None);
        assert_eq!(from_question("```\nlet x = 1;\n```"), None);
        assert_eq!(from_question("???"), None);
    }
}
