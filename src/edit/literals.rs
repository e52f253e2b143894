//! Which lines sit inside a multi-line string literal (`"""` or `'''`) or a heredoc
//! (`<<EOF` … `EOF`, also `<<-`, `<<~` and a quoted tag). Their leading whitespace is
//! part of the string, so the matcher never re-indents them and does not read the
//! model's indentation from them.
//!
//! The scan is by lines and assumes what most files do: a delimiter that opens a string
//! on one line is closed by the same delimiter on a later one, and a `<<TAG` that
//! touches its tag opens a heredoc closed by a line that is the tag alone.

/// What closes the string a line is inside: a quote delimiter or a heredoc tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Open {
    /// `"""` or `'''`.
    Quote(&'static str),
    /// The heredoc's tag, alone on its closing line.
    Heredoc(String),
}

/// For each of `lines`, whether it is inside a string (the opening line is not; the
/// closing line is), starting in `state`; with the state after the last line.
pub fn inside<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    mut state: Option<Open>,
) -> (Vec<bool>, Option<Open>) {
    let mut out = Vec::new();
    for line in lines {
        out.push(state.is_some());
        state = match state {
            Some(Open::Quote(q)) => (line.matches(q).count() % 2 == 0).then_some(Open::Quote(q)),
            Some(Open::Heredoc(tag)) => (line.trim() != tag).then_some(Open::Heredoc(tag)),
            None => opens(line),
        };
    }
    (out, state)
}

/// Whether every non-blank line of a region (`lines`, with `inside` from [`inside`])
/// is inside a string: a copy of such lines, indented otherwise than the file, says
/// nothing about where a line of code written after them goes.
pub fn strings_only(lines: &[&str], inside: &[bool]) -> bool {
    lines
        .iter()
        .zip(inside)
        .all(|(l, &i)| i || l.trim().is_empty())
}

/// The refusal of a code line `line` written after string lines only ([`strings_only`]).
pub fn unplaced(line: &str) -> super::error::EditError {
    super::error::EditError::Invalid(format!(
        "the new line {:?} follows only lines inside a multi-line string, copied with other indentation than the file's: where it goes is unsure; copy a line of code next to it too",
        line.trim()
    ))
}

/// The string a line leaves open at its end, when it opens one.
fn opens(line: &str) -> Option<Open> {
    for q in ["\"\"\"", "'''"] {
        if line.matches(q).count() % 2 == 1 {
            return Some(Open::Quote(q));
        }
    }
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches(['-', '~']);
    // `<< EOF` (a space before the tag) is a heredoc in sh, bash and Ruby too; spaced,
    // only an all-caps tag counts, so `cout << MAX;` stays an expression.
    let spaced = rest.starts_with([' ', '\t']);
    let rest = rest.trim_start_matches([' ', '\t']);
    let rest = rest.trim_start_matches(['\'', '"']);
    let tag: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let starts_well = tag
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_');
    let caps = tag.len() >= 2
        && tag
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
        && !line[at..].contains(';');
    (starts_well && (!spaced || caps) && !line[at..].starts_with("<<<"))
        .then_some(Open::Heredoc(tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_heredocs() {
        let lines = ["sql = \"\"\"", "SELECT 1", "\"\"\"", "x = 1"];
        assert_eq!(inside(lines, None).0, [false, true, true, false]);
        let sh = ["cat <<'EOF' > f", "  a", "EOF", "echo"];
        assert_eq!(inside(sh, None).0, [false, true, true, false]);
        let cpp = ["std::cout << x;", "y();"];
        assert_eq!(inside(cpp, None).0, [false, false]);
        let one = ["s = \"\"\"one line\"\"\"", "y"];
        assert_eq!(inside(one, None).0, [false, false]);
    }
}
