//! What the command line prints is model text, reasoning and file names: data that may
//! carry terminal control sequences (ANSI colours, cursor moves, OSC 52, which writes
//! the user's clipboard) or bidi overrides that make a name read as another
//! (docs/ARCHITECTURE.md, invariant 16). Before it reaches a terminal each control
//! character (C0 and C1, which is what starts every escape sequence) and each bidi
//! embedding, override or isolate is dropped; everything printable stays, joiners and
//! other format characters of real scripts and emoji included (ZWJ, ZWNJ, ZWSP,
//! variation selectors, bidi marks). Line breaks and tabs pass.
//!
//! When the output is not a terminal, the model's answer ([`text`]) keeps every
//! printable character byte for byte (joiners, bidi marks, emoji), but no C0 or C1
//! control other than tab and line feed leaves bb7 raw: a file read later with `cat`
//! or `less -R` would run them (an OSC 52 clipboard write); each gets a visible
//! `\u{…}` escape, and a CR is dropped. Other data (names, notes,
//! reasoning on stderr) gets the escape for every neutralised character, so nothing
//! is silently lost.

use std::borrow::Cow;
use std::io::IsTerminal;

/// Where text is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

fn is_tty(sink: Sink) -> bool {
    match sink {
        Sink::Stdout => std::io::stdout().is_terminal(),
        Sink::Stderr => std::io::stderr().is_terminal(),
    }
}

/// Data (a name, a note, reasoning) made safe for `sink`: control characters and bidi
/// overrides dropped when the sink is a terminal, escaped when it is not.
pub fn safe(text: &str, sink: Sink) -> Cow<'_, str> {
    clean(text, is_tty(sink))
}

/// The model's answer for `sink`: on a terminal as [`safe`]; anywhere else every
/// printable character byte for byte, controls escaped ([`controls_escaped`]).
pub fn text(text: &str, sink: Sink) -> Cow<'_, str> {
    if is_tty(sink) {
        clean(text, true)
    } else {
        controls_escaped(text)
    }
}

/// `text` with each C0/C1 control other than tab and line feed as a visible `\u{…}`
/// escape, a CR dropped; everything else unchanged.
pub fn controls_escaped(text: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\r' {
            // CRLF answers arrive in chunks: a CR is dropped, never escaped.
            continue;
        }
        if bad(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` for standard error (see [`safe`]).
pub fn err(text: &str) -> Cow<'_, str> {
    safe(text, Sink::Stderr)
}

/// Whether `c` is neutralised: a control character other than line feed and tab (every
/// escape sequence starts with one: ESC, or a C1 control such as CSI U+009B), or a bidi
/// embedding, override or isolate (U+202A–U+202E, U+2066–U+2069), which reorder the
/// text that follows them (CVE-2021-42574, "Trojan Source").
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
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
        let hostile = "ok\u{1b}]52;c;ZXZpbA==\u{7} \u{1b}[2Jred\u{202e}txt\u{9d}\r\n\tend\u{2067}";
        assert_eq!(clean(hostile, true), "ok]52;c;ZXZpbA== [2Jredtxt\n\tend");
        assert_eq!(
            clean(hostile, false),
            "ok\\u{1b}]52;c;ZXZpbA==\\u{7} \\u{1b}[2Jred\\u{202e}txt\\u{9d}\\u{d}\n\tend\\u{2067}"
        );
        assert!(matches!(clean("plain\n", true), Cow::Borrowed(_)));
    }

    #[test]
    fn piped_answers_keep_text_and_escape_controls() {
        let t = "a\u{1b}]52;c;eA==\u{7}b\r\n\tc\u{9b}d \u{200d}\u{202e}";
        assert_eq!(
            controls_escaped(t),
            "a\\u{1b}]52;c;eA==\\u{7}b\n\tc\\u{9b}d \u{200d}\u{202e}"
        );
    }

    #[test]
    fn joiners_and_marks_of_real_text_pass() {
        // Persian with ZWNJ, Hindi with ZWJ, an emoji family (ZWJ) with a variation
        // selector, a ZWSP line-break hint, a right-to-left mark.
        for t in [
            "می\u{200c}خواهم",
            "क्\u{200d}ष",
            "👩\u{200d}👩\u{200d}👧 ❤\u{fe0f}",
            "long\u{200b}word",
            "abc \u{200f}שלום",
        ] {
            assert_eq!(clean(t, true), t);
            assert_eq!(clean(t, false), t);
        }
    }
}
