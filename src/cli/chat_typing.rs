//! `bb7 chat`: the question typed while an answer streams, shown as it is typed. The
//! terminal is read key by key (no echo, not line by line), so the line being typed is
//! kept here and drawn dimmed as `next> …` on the row below the answer; it is erased
//! before the answer writes again and drawn again after, so it never lands inside the
//! answer (the Markdown renderer of `bb7 chat` writes whole lines: the row below the
//! answer is empty between two writes). Enter hands the line to the queue
//! (`chat_queue.rs`); what is typed but not sent when the answer ends goes to the line
//! editor as the start of the next line.

use std::io::{IsTerminal, Write};

use super::render::{LABEL, paint_err, style, tail};

/// What the keys typed amount to, in the order typed.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Typed {
    /// The line as typed so far (after the keys that changed it).
    Draft(String),
    /// Enter: the whole line, which starts a new, empty one.
    Line(String),
}

/// Where an escape sequence (an arrow key, Home, a function key) is: its bytes are
/// skipped, since the line has no cursor to move.
#[derive(Default, Clone, Copy)]
enum Escape {
    #[default]
    None,
    /// After ESC.
    Start,
    /// Inside `ESC [ …` or `ESC O …`, up to its final byte (0x40–0x7E, ECMA-48 5.4).
    Sequence,
}

/// A small line editor over the bytes a terminal in non-canonical mode sends: text,
/// Backspace, Ctrl-U (the whole line), Ctrl-W (the word before), Enter; other control
/// keys are ignored. The terminal's own line discipline would do this in canonical
/// mode, but then the line cannot be read until Enter, nor shown while typed.
#[derive(Default)]
pub(super) struct Keys {
    draft: String,
    /// The bytes of a character whose UTF-8 sequence has not all arrived.
    partial: Vec<u8>,
    escape: Escape,
}

impl Keys {
    /// Starts with `draft` already typed (a line typed during the answer before).
    pub(super) fn with_draft(draft: String) -> Keys {
        Keys {
            draft,
            ..Keys::default()
        }
    }

    /// The line typed so far.
    pub(super) fn draft(&self) -> &str {
        &self.draft
    }

    /// Reads `bytes` (as they came from the terminal) and appends what they do to
    /// `out`: each Enter gives a [`Typed::Line`], and a changed line at the end a
    /// [`Typed::Draft`].
    pub(super) fn feed(&mut self, bytes: &[u8], out: &mut Vec<Typed>) {
        let mut changed = false;
        for &b in bytes {
            match self.escape {
                Escape::Start => {
                    self.escape = if b == b'[' || b == b'O' {
                        Escape::Sequence
                    } else {
                        Escape::None
                    };
                    continue;
                }
                Escape::Sequence => {
                    if (0x40..=0x7e).contains(&b) {
                        self.escape = Escape::None;
                    }
                    continue;
                }
                Escape::None => {}
            }
            if b == b'\r' || b == b'\n' {
                // The line went out whole: what it was before needs no drawing.
                changed = false;
            }
            changed |= self.key(b, out);
        }
        if changed {
            out.push(Typed::Draft(self.draft.clone()));
        }
    }

    /// One byte; whether the draft changed (and was not sent).
    fn key(&mut self, b: u8, out: &mut Vec<Typed>) -> bool {
        match b {
            b'\r' | b'\n' => {
                self.partial.clear();
                out.push(Typed::Line(std::mem::take(&mut self.draft)));
                false
            }
            0x7f | 0x08 => self.draft.pop().is_some(),
            0x15 => {
                let had = !self.draft.is_empty();
                self.draft.clear();
                had
            }
            0x17 => {
                let kept = self
                    .draft
                    .trim_end()
                    .trim_end_matches(|c: char| !c.is_whitespace());
                let len = kept.len();
                let had = len != self.draft.len();
                self.draft.truncate(len);
                had
            }
            0x1b => {
                self.escape = Escape::Start;
                false
            }
            b'\t' => {
                self.draft.push(' ');
                true
            }
            0..0x20 => false,
            _ => self.byte(b),
        }
    }

    /// A byte of text: a whole character is added once its UTF-8 sequence is complete;
    /// a byte that cannot be part of one is dropped.
    fn byte(&mut self, b: u8) -> bool {
        self.partial.push(b);
        match std::str::from_utf8(&self.partial) {
            Ok(c) => {
                self.draft.push_str(c);
                self.partial.clear();
                true
            }
            Err(e) if e.error_len().is_some() || self.partial.len() >= 4 => {
                self.partial.clear();
                false
            }
            Err(_) => false,
        }
    }

    /// The line typed and not sent.
    pub(super) fn into_draft(self) -> String {
        self.draft
    }
}

/// Whether the typed line can be drawn: stderr is a terminal.
pub(super) fn drawable() -> bool {
    std::io::stderr().is_terminal()
}

/// Draws `draft` on the current row (the empty row below the answer) as `next> …`,
/// its end when it is wider than the terminal: a row that wrapped could not be erased
/// with one `\r`.
pub(super) fn draw(draft: &str) {
    let columns = super::render::stderr_columns().unwrap_or(80);
    let room = columns.saturating_sub(LABEL.len() + 2).max(8);
    let shown = tail(draft, room);
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{}{shown}", paint_err(style::DIM, LABEL));
    let _ = err.flush();
}

/// Erases the row [`draw`] drew.
pub(super) fn erase() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::render::beside;

    fn typed(bytes: &[u8]) -> (Vec<Typed>, String) {
        let mut k = Keys::default();
        let mut out = Vec::new();
        k.feed(bytes, &mut out);
        (out, k.into_draft())
    }

    #[test]
    fn text_backspace_and_enter() {
        let (out, left) = typed(b"helo\x7flo\rnext");
        assert_eq!(
            out,
            vec![Typed::Line("hello".into()), Typed::Draft("next".into())]
        );
        assert_eq!(left, "next");
        // A line sent whole is not drawn as typed too.
        assert_eq!(typed(b"all\r").0, vec![Typed::Line("all".into())]);
    }

    #[test]
    fn ctrl_u_ctrl_w_and_arrow_keys() {
        assert_eq!(typed(b"one two  \x17").1, "one ");
        assert_eq!(typed(b"one two\x15three").1, "three");
        // Left arrow, Home (`ESC O H`), Alt-b: nothing typed.
        assert_eq!(typed(b"a\x1b[Db\x1bOHc\x1bbd").1, "abcd");
    }

    #[test]
    fn utf8_split_across_reads_and_bad_bytes() {
        let mut k = Keys::default();
        let mut out = Vec::new();
        let e = "é".as_bytes();
        k.feed(&e[..1], &mut out);
        assert!(out.is_empty());
        k.feed(&e[1..], &mut out);
        assert_eq!(out, vec![Typed::Draft("é".into())]);
        assert_eq!(typed(b"a\xffb").1, "ab");
        // Backspace takes a whole character.
        assert_eq!(typed("né\x7f".as_bytes()).1, "n");
    }

    #[test]
    fn the_typed_line_beside_the_spinner_keeps_its_end_within_the_row() {
        let plain = |s: String| s.replace("\x1b[2m", "").replace("\x1b[0m", "");
        let row = plain(beside("| waiting for the model 3s", "hello", 80));
        assert_eq!(row, "| waiting for the model 3s  next> hello");
        let long = "x".repeat(100) + "END";
        let row = plain(beside("| waiting for the model 3s", &long, 40));
        assert_eq!(row.chars().count(), 39, "{row}");
        assert!(row.starts_with("| waiting"), "{row}");
        assert!(row.ends_with("xEND"), "{row}");
    }

    #[test]
    fn control_keys_are_ignored() {
        let (out, left) = typed(b"\x04\x01");
        assert!(out.is_empty());
        assert_eq!(left, "");
    }
}
