//! The model's reasoning (`thinking` messages, docs/PROTOCOL.md) in `bb7 chat`.
//! Collapsed by default: while it streams, the waiting indicator counts it
//! (`reasoning… 42 words`), and once the answer (or a tool step) begins a dimmed line
//! is left above it, `reasoning: 42 words (/thinking on shows it)`, so the user knows
//! the model reasoned and how to read it next time. `/thinking on` (or
//! `bb7 chat --thinking`) streams it whole, dimmed, on stderr, as `bb7 ask --thinking`
//! does; `/thinking off` collapses it again. Reasoning is long and mostly not read:
//! shown whole it would push the answer off the screen.

use super::render::{paint_err, style};
use super::session::Session;
use super::terminal;
use crate::front::client::{Failure, Res};

/// One block of reasoning (between two other stream messages) while it is collapsed:
/// its words counted as they stream, deltas that split a word included.
#[derive(Default)]
pub(super) struct Collapsed {
    /// Words so far.
    words: usize,
    /// The last delta ended inside a word.
    in_word: bool,
}

impl Collapsed {
    /// Counts `delta`.
    pub(super) fn push(&mut self, delta: &str) {
        for c in delta.chars() {
            if c.is_whitespace() {
                self.in_word = false;
            } else if !self.in_word {
                self.in_word = true;
                self.words += 1;
            }
        }
    }

    /// The waiting indicator's label while it streams.
    pub(super) fn label(&self) -> String {
        format!("reasoning… {}", words(self.words))
    }

    /// Ends the block: the dimmed line left above the answer (with its line end), or
    /// `None` when no reasoning came. The next block counts from zero.
    pub(super) fn end(&mut self) -> Option<String> {
        let n = std::mem::take(self).words;
        (n > 0).then(|| {
            let note = format!("reasoning: {} (/thinking on shows it)", words(n));
            format!("{}\n", paint_err(style::DIM, &note))
        })
    }
}

/// `n` words in words: `1 word`, `42 words`.
fn words(n: usize) -> String {
    if n == 1 {
        "1 word".to_owned()
    } else {
        format!("{n} words")
    }
}

/// A delta of reasoning shown whole: safe for the terminal, dimmed.
pub(super) fn shown(delta: &str) -> String {
    paint_err(style::DIM, &terminal::err(delta))
}

/// `/thinking [on|off]`: shows or sets whether reasoning is shown whole.
pub(super) fn command(s: &mut Session, arg: Option<&str>) -> Res<()> {
    match arg {
        Some("on") => s.show_thinking = true,
        Some("off") => s.show_thinking = false,
        Some(_) => return Err(Failure::new("use /thinking on, or /thinking off")),
        None => {}
    }
    let state = if s.show_thinking {
        "on: the model's reasoning is shown as it streams (/thinking off collapses it)"
    } else {
        "off: the model's reasoning is counted in one line (/thinking on shows it)"
    };
    eprintln!("bb7: thinking {state}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_counted_across_deltas() {
        let mut r = Collapsed::default();
        assert_eq!(r.end(), None);
        for d in ["Let me th", "ink about", " this.\n", "  Then\tact"] {
            r.push(d);
        }
        assert_eq!(r.label(), "reasoning… 7 words");
        assert_eq!(
            r.end().as_deref(),
            Some("reasoning: 7 words (/thinking on shows it)\n")
        );
        r.push("one");
        assert_eq!(r.label(), "reasoning… 1 word");
    }
}
