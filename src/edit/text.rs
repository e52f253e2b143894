//! A file as lines with their own line endings, and its indentation style.
//!
//! Edits are planned on lines so that every line the model did not change can be
//! written back byte for byte, ending included, and so that changed lines can take the
//! file's line ending and indentation instead of the model's.

/// One line of a file: its text without the line ending, and the ending itself
/// (`"\n"`, `"\r\n"`, or `""` for a last line without a final newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// The text, without the ending.
    pub text: &'a str,
    /// The line ending as it is in the file.
    pub end: &'a str,
}

/// How a file (or one line of it) indents: with tabs, or with a number of spaces per
/// level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// One tab per level.
    Tabs,
    /// This many spaces per level (at least 1).
    Spaces(usize),
}

impl Style {
    /// The indentation string for `levels` levels and `rem` extra alignment spaces.
    pub fn render(self, levels: usize, rem: usize) -> String {
        let unit = match self {
            Style::Tabs => "\t".to_owned(),
            Style::Spaces(n) => " ".repeat(n),
        };
        let mut s = unit.repeat(levels);
        s.push_str(&" ".repeat(rem));
        s
    }

    /// `indent` measured in levels of this style, plus leftover alignment spaces.
    /// A tab inside a space indentation counts as one level.
    pub fn measure(self, indent: &str) -> (usize, usize) {
        match self {
            Style::Tabs => {
                let tabs = indent.chars().take_while(|&c| c == '\t').count();
                let rest = &indent[tabs..];
                let spaces: usize = rest.chars().map(|c| if c == '\t' { 4 } else { 1 }).sum();
                // Spaces where tabs were expected: read them as levels of four.
                (tabs + spaces / 4, spaces % 4)
            }
            Style::Spaces(n) => {
                let n = n.max(1);
                let width: usize = indent.chars().map(|c| if c == '\t' { n } else { 1 }).sum();
                (width / n, width % n)
            }
        }
    }
}

/// The leading whitespace of `line`.
pub fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// A file split into lines, with what is needed to write new lines the way the file
/// writes its own.
#[derive(Debug, Clone)]
pub struct Doc<'a> {
    /// The lines, in order; empty for an empty file.
    pub lines: Vec<Line<'a>>,
    /// The line ending most lines use (`"\r\n"` or `"\n"`).
    pub eol: &'static str,
    /// Whether the file ends with a line ending (an empty file counts as ending with one).
    pub final_newline: bool,
    /// The indentation most indented lines use.
    pub style: Style,
    /// Spaces per level for space-indented lines (also in a tab-indented file).
    pub space_unit: usize,
}

impl<'a> Doc<'a> {
    /// Splits `content` into lines and infers its line ending and indentation.
    pub fn parse(content: &'a str) -> Doc<'a> {
        let mut lines = Vec::new();
        let (mut crlf, mut lf) = (0usize, 0usize);
        for raw in content.split_inclusive('\n') {
            let line = if let Some(t) = raw.strip_suffix("\r\n") {
                crlf += 1;
                Line {
                    text: t,
                    end: &raw[t.len()..],
                }
            } else if let Some(t) = raw.strip_suffix('\n') {
                lf += 1;
                Line {
                    text: t,
                    end: &raw[t.len()..],
                }
            } else {
                Line { text: raw, end: "" }
            };
            lines.push(line);
        }
        let space_unit = space_unit(lines.iter().map(|l| l.text));
        let (mut tabs, mut spaces) = (0usize, 0usize);
        for l in &lines {
            if l.text.starts_with('\t') {
                tabs += 1;
            } else if l.text.starts_with("  ") && !l.text.trim().is_empty() {
                spaces += 1;
            }
        }
        Doc {
            lines,
            eol: if crlf > lf { "\r\n" } else { "\n" },
            final_newline: content.is_empty() || content.ends_with('\n'),
            style: if tabs > 0 && tabs >= spaces {
                Style::Tabs
            } else {
                Style::Spaces(space_unit)
            },
            space_unit,
        }
    }

    /// The style of one file line: tabs when it starts with a tab, spaces otherwise.
    pub fn style_of(&self, text: &str) -> Style {
        if text.starts_with('\t') {
            Style::Tabs
        } else if text.starts_with(' ') {
            Style::Spaces(self.space_unit)
        } else {
            self.style
        }
    }

    /// The file's text with every line ending as `\n` (the text matching runs on).
    pub fn normalized(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(l.text);
            if !l.end.is_empty() {
                s.push('\n');
            }
        }
        s
    }
}

/// The most common step between the indentation of consecutive space-indented lines
/// (2, 3, 4 or 8); 4 when the lines say nothing.
pub fn space_unit<'s>(lines: impl Iterator<Item = &'s str>) -> usize {
    space_unit_of(lines).unwrap_or(4)
}

/// As [`space_unit`], `None` when no two lines show a step.
pub fn space_unit_of<'s>(lines: impl Iterator<Item = &'s str>) -> Option<usize> {
    let mut counts = [0usize; 9];
    let mut prev: Option<usize> = None;
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let indent = indent_of(line);
        if indent.contains('\t') {
            prev = None;
            continue;
        }
        let w = indent.len();
        if let Some(p) = prev
            && w > p
            && matches!(w - p, 2 | 3 | 4 | 8)
        {
            counts[w - p] += 1;
        }
        prev = Some(w);
    }
    let best = [4usize, 2, 8, 3]
        .into_iter()
        .max_by_key(|&n| (counts[n], n == 4))
        .unwrap_or(4);
    (counts[best] > 0).then_some(best)
}

/// Whether `c` is part of a name: a letter, digit or `_`.
pub(super) fn word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Whether `old`, found at byte `at` of `text`, starts and ends on token boundaries
/// there: it does not cut a word of the file unless its own first (last) character is
/// not a word character.
pub(super) fn on_token_boundaries(text: &str, at: usize, old: &str) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at + old.len()..].chars().next();
    let cuts_start = word(before) && word(old.chars().next());
    let cuts_end = word(after) && word(old.chars().next_back());
    // A hyphen between letters joins one name in CSS, HTML attributes, Lisp, shell
    // options and package names: `width` is not found in `max-width`, nor `color:` in
    // `background-color:`.
    let alpha = |c: Option<char>| c.is_some_and(char::is_alphabetic);
    let mut back = text[..at].chars().rev();
    let joins_start = back.next() == Some('-') && alpha(back.next()) && alpha(old.chars().next());
    let mut ahead = text[at + old.len()..].chars();
    let joins_end =
        ahead.next() == Some('-') && alpha(ahead.next()) && alpha(old.chars().next_back());
    !(cuts_start || cuts_end || joins_start || joins_end)
}

/// Whether a model indentation in `model` style can be written as it is where the file
/// uses `target`: tabs where the file has tabs, its own number of spaces where it has
/// spaces.
pub(super) fn style_matches(model: Style, target: Style, indent: &str) -> bool {
    if indent.is_empty() {
        return true;
    }
    match (model, target) {
        (Style::Tabs, Style::Tabs) => indent.starts_with('\t'),
        (Style::Spaces(a), Style::Spaces(b)) => a == b && !indent.contains('\t'),
        _ => false,
    }
}

/// A model's indentation of tabs then spaces (`"\t  "`) where the file indents with
/// spaces: the tabs may be its shift or its levels, and the spaces alignment or levels;
/// no one reading of its depth is certain.
pub(super) fn tabs_then_spaces(indent: &str, target: Style) -> bool {
    let spaces = indent.trim_start_matches('\t');
    matches!(target, Style::Spaces(_))
        && indent.starts_with('\t')
        && !spaces.is_empty()
        && !spaces.contains('\t')
}

/// The most frequent value (the earliest on ties).
pub(super) fn mode(values: &[isize]) -> Option<isize> {
    let mut best: Option<(isize, usize)> = None;
    for &v in values {
        let n = values.iter().filter(|&&x| x == v).count();
        if best.is_none_or(|(_, bn)| n > bn) {
            best = Some((v, n));
        }
    }
    best.map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_endings() {
        let d = Doc::parse("a\r\nb\r\nc");
        assert_eq!(d.eol, "\r\n");
        assert!(!d.final_newline);
        assert_eq!(d.lines[2], Line { text: "c", end: "" });
        assert_eq!(d.normalized(), "a\nb\nc");
        assert_eq!(Doc::parse("").lines.len(), 0);
    }

    #[test]
    fn indentation_style_is_inferred() {
        assert_eq!(Doc::parse("f {\n\tx\n\t\ty\n}\n").style, Style::Tabs);
        assert_eq!(Doc::parse("a:\n  b:\n    c: 1\n").style, Style::Spaces(2));
        assert_eq!(Style::Spaces(4).measure("      "), (1, 2));
        assert_eq!(Style::Tabs.render(2, 1), "\t\t ");
    }
}
