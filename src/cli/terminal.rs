//! What the command line prints is model text, reasoning and file names: data that may
//! carry terminal control sequences (ANSI colours, cursor moves, OSC 52, which writes
//! the user's clipboard) or bidi controls that make a name read as another. Before it
//! reaches a terminal every such character is dropped; when the output is piped it is
//! written as a visible `\u{…}` escape instead, so nothing is silently lost from a file.
//! Line breaks and tabs pass.

use std::borrow::Cow;
use std::io::IsTerminal;

use crate::edit::paths::is_invisible_or_bidi;

/// Where text is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// `text` made safe for `sink`: control, bidi and invisible characters dropped when
/// the sink is a terminal, escaped when it is not.
pub fn safe(text: &str, sink: Sink) -> Cow<'_, str> {
    let tty = match sink {
        Sink::Stdout => std::io::stdout().is_terminal(),
        Sink::Stderr => std::io::stderr().is_terminal(),
    };
    clean(text, tty)
}

/// `text` for standard error (see [`safe`]).
pub fn err(text: &str) -> Cow<'_, str> {
    safe(text, Sink::Stderr)
}

fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_invisible_or_bidi(c)
}

/// Drops (`tty`) or escapes every unsafe character of `text`.
pub fn clean(text: &str, tty: bool) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if !tty {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_never_reach_a_terminal() {
        let hostile = "ok\u{1b}]52;c;ZXZpbA==\u{7} \u{1b}[2Jred\u{202e}txt\u{9d}\r\n\tend";
        assert_eq!(clean(hostile, true), "ok]52;c;ZXZpbA== [2Jredtxt\n\tend");
        assert_eq!(
            clean(hostile, false),
            "ok\\u{1b}]52;c;ZXZpbA==\\u{7} \\u{1b}[2Jred\\u{202e}txt\\u{9d}\\u{d}\n\tend"
        );
        assert!(matches!(clean("plain\n", true), Cow::Borrowed(_)));
    }
}
