//! The pre-split of `cl100k_base`, by hand: the same pieces as its pattern
//! (`PATTERN` in `tokens.rs`, run by a backtracking regex engine) in one forward pass.
//! Splitting with the regex was four fifths of a count (about 45 ms per MB); this pass
//! decides each piece from the class of its first characters, as the pattern's
//! ordered alternatives do:
//!
//! 1. `'` and a contraction (`s d m t ll ve re`, any case);
//! 2. an optional character that is no letter, number, CR or LF, then letters;
//! 3. one to three numbers;
//! 4. an optional space, then characters that are no space, letter or number, then
//!    CRs and LFs;
//! 5. white space up to the end of the text;
//! 6. white space up to and including its last CR or LF;
//! 7. white space but its last character, when the run is followed by text;
//! 8. one white space character.
//!
//! Letters, numbers and white space are the regex engine's own Unicode classes
//! (`\p{L}`, `\p{N}`, `\s`), asked of that engine once per character outside ASCII,
//! so the two can never disagree on a character (`splits_as_the_pattern_does`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

/// What the pattern tells apart in a character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// `\p{L}`.
    Letter,
    /// `\p{N}`.
    Number,
    /// CR or LF.
    Newline,
    /// Any other `\s`.
    Space,
    /// Anything else: punctuation, symbols, marks, controls.
    Other,
}

impl Class {
    fn is_space(self) -> bool {
        matches!(self, Class::Newline | Class::Space)
    }
}

fn ascii_class(b: u8) -> Class {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Number,
        b'\r' | b'\n' => Class::Newline,
        b'\t' | 0x0b | 0x0c | b' ' => Class::Space,
        _ => Class::Other,
    }
}

/// Characters whose class a thread remembers at most.
const MAX_REMEMBERED: usize = 65_536;

/// The class of a character outside ASCII, from the regex engine's tables, remembered
/// per thread (a text uses few distinct characters).
fn unicode_class(c: char) -> Class {
    static CLASSES: OnceLock<Option<fancy_regex::Regex>> = OnceLock::new();
    thread_local! {
        static SEEN: RefCell<HashMap<char, Class>> = RefCell::new(HashMap::new());
    }
    if let Some(k) = SEEN.with(|s| s.borrow().get(&c).copied()) {
        return k;
    }
    let re = CLASSES.get_or_init(|| fancy_regex::Regex::new(r"^(?:(\p{L})|(\p{N})|(\s))$").ok());
    let mut buf = [0u8; 4];
    let k = match re
        .as_ref()
        .and_then(|re| re.captures(c.encode_utf8(&mut buf)).ok())
    {
        Some(Some(caps)) if caps.get(1).is_some() => Class::Letter,
        Some(Some(caps)) if caps.get(2).is_some() => Class::Number,
        Some(Some(_)) => Class::Space,
        Some(None) => Class::Other,
        // The class pattern is fixed and compiles; were it not to, Rust's own tables
        // (the same Unicode properties) decide.
        None if c.is_alphabetic() => Class::Letter,
        None if c.is_numeric() => Class::Number,
        None if c.is_whitespace() => Class::Space,
        None => Class::Other,
    };
    SEEN.with(|s| {
        let mut seen = s.borrow_mut();
        // A text of every code point must not hold megabytes per counting thread.
        if seen.len() >= MAX_REMEMBERED {
            seen.clear();
        }
        seen.insert(c, k);
    });
    k
}

/// A text walked character by character.
struct Text<'a> {
    s: &'a str,
}

impl Text<'_> {
    /// The class and byte length of the character at byte `i`; `None` at the end.
    fn at(&self, i: usize) -> Option<(Class, usize)> {
        let b = *self.s.as_bytes().get(i)?;
        if b < 0x80 {
            return Some((ascii_class(b), 1));
        }
        let c = self.s[i..].chars().next()?;
        Some((unicode_class(c), c.len_utf8()))
    }

    /// The end of the run of characters from `i` whose class passes `keep`.
    fn run(&self, mut i: usize, keep: impl Fn(Class) -> bool) -> usize {
        while let Some((k, n)) = self.at(i) {
            if !keep(k) {
                break;
            }
            i += n;
        }
        i
    }

    /// The end of a contraction after the `'` ending at `i`, if one follows.
    fn contraction(&self, i: usize) -> Option<usize> {
        let rest = &self.s[i..];
        let mut chars = rest.chars();
        let first = chars.next()?;
        // Case-insensitive as the regex engine folds: `ſ` (long s) is an `s`.
        if matches!(first, 's' | 'S' | 'ſ' | 'd' | 'D' | 'm' | 'M' | 't' | 'T') {
            return Some(i + first.len_utf8());
        }
        let second = chars.next()?;
        let pair = [first.to_ascii_lowercase(), second.to_ascii_lowercase()];
        matches!(pair, ['l', 'l'] | ['v', 'e'] | ['r', 'e']).then_some(i + 2)
    }

    /// The end of the piece that starts at byte `i` (not the end of the text).
    fn piece_end(&self, i: usize) -> usize {
        let Some((first, n)) = self.at(i) else {
            return i;
        };
        if self.s.as_bytes()[i] == b'\''
            && let Some(end) = self.contraction(i + 1)
        {
            return end;
        }
        match first {
            Class::Letter => return self.run(i, |k| k == Class::Letter),
            Class::Number => {
                let mut end = i + n;
                for _ in 0..2 {
                    match self.at(end) {
                        Some((Class::Number, m)) => end += m,
                        _ => break,
                    }
                }
                return end;
            }
            _ => {}
        }
        if first != Class::Newline && matches!(self.at(i + n), Some((Class::Letter, _))) {
            return self.run(i + n, |k| k == Class::Letter);
        }
        let symbols_from = if self.s.as_bytes()[i] == b' ' {
            i + 1
        } else {
            i
        };
        if matches!(self.at(symbols_from), Some((Class::Other, _))) {
            let end = self.run(symbols_from, |k| k == Class::Other);
            return self.run(end, |k| k == Class::Newline);
        }
        // White space from here on.
        let end = self.run(i, Class::is_space);
        if end == self.s.len() {
            return end;
        }
        let run = &self.s.as_bytes()[i..end];
        if let Some(last) = memchr::memrchr2(b'\r', b'\n', run) {
            return i + last + 1;
        }
        let last_char = self.s[i..end].char_indices().last().map_or(0, |(at, _)| at);
        if last_char > 0 {
            return i + last_char;
        }
        i + n
    }
}

/// The pieces of `text` under `cl100k_base`'s pre-split, in order; together they are
/// the whole text.
pub(super) fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let t = Text { s: text };
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= t.s.len() {
            return None;
        }
        let end = t.piece_end(at).max(at + 1);
        let end = (end..=t.s.len())
            .find(|&e| t.s.is_char_boundary(e))
            .unwrap_or(t.s.len());
        let piece = &t.s[at..end];
        at = end;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_pattern(text: &str) -> Vec<&str> {
        static RE: OnceLock<fancy_regex::Regex> = OnceLock::new();
        let re = RE.get_or_init(|| fancy_regex::Regex::new(super::super::PATTERN).unwrap());
        re.find_iter(text).map(|m| m.unwrap().as_str()).collect()
    }

    /// A small generator (xorshift) so the test needs no crate and is reproducible.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn splits_as_the_pattern_does() {
        // Characters chosen for the pattern's edges: contractions in both cases and the
        // long s, every kind of white space, numbers outside ASCII, marks, CJK, emoji.
        let alphabet: Vec<char> = "'sSdDmMtTlLvVeErRſx  \t\r\n\u{0b}\u{0c}\u{85}\u{a0}\u{2028}\u{3000}09٣Ⅻ½.,;(){}-_/\\\"#@\u{301}é日本ß🎉\u{0}\u{7f}".chars().collect();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..20_000 {
            let len = (rng.next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
                .collect();
            let ours: Vec<&str> = pieces(&text).collect();
            assert_eq!(ours, by_pattern(&text), "case {case}: {text:?}");
        }
        for text in [
            "",
            "fn main() {\n    println!(\"{}\", 1234567 + 89);\n}\n\n\n",
            "I'm sure they'll say we've done what they're asking, don't you?",
            "   trailing spaces   \n\t\tindent\n",
            "tail without newline   ",
            include_str!("split.rs"),
        ] {
            assert_eq!(
                pieces(text).collect::<Vec<_>>(),
                by_pattern(text),
                "{text:?}"
            );
        }
    }
}
