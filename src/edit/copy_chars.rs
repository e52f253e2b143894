//! Characters of the model's copy that the file does not have: typographic
//! punctuation folded to ASCII, and trailing whitespace added to every copied line.
//! The edit's changed lines keep the file's characters, not the copy's.

use super::replay::Norm;
use super::text::indent_of;

/// A changed line whose copy in old_string differs from the file's line beyond
/// whitespace (typographic characters folded to ASCII): the model's change is replayed
/// on the file's line, so the characters it did not touch stay as the file has them.
/// Unrelated pairs and changes that touch those characters keep the model's line.
pub fn keep_file_characters(old: &str, file: &str, new: &str) -> String {
    let (o, f, n) = (old.trim(), file.trim(), new.trim());
    if o == f || Norm::Loose.apply(o) != Norm::Loose.apply(f) {
        return new.to_owned();
    }
    if similar::TextDiff::from_chars(o, n).ratio() < 0.5 {
        return new.to_owned();
    }
    match super::combine::merge3_chars(o, f, n) {
        Some(body) => format!("{}{body}", indent_of(new)),
        None => new.to_owned(),
    }
}

/// Trailing whitespace that the model's copy adds to every copied line the file has
/// without it (a copy with a space after each line): the new lines it writes carry the
/// same addition, which is the copy's and not the file's. Empty when the copy keeps the
/// file's line ends.
#[derive(Debug, Default)]
pub struct CopyTrailing(String);

impl CopyTrailing {
    /// `line` without the copy's added trailing whitespace.
    pub fn strip<'l>(&self, line: &'l str) -> &'l str {
        if self.0.is_empty() {
            return line;
        }
        line.strip_suffix(self.0.as_str())
            .filter(|rest| !rest.ends_with([' ', '\t']))
            .unwrap_or(line)
    }
}

/// The trailing whitespace every non-blank line of `old` (the model's copy) adds to its
/// line of `file`, when all of them add the same and the file's lines end without any.
pub fn copy_trailing(old: &[String], file: &[&str]) -> CopyTrailing {
    let mut common: Option<&str> = None;
    for (o, f) in old.iter().zip(file) {
        if o.trim().is_empty() {
            continue;
        }
        let added = &o[o.trim_end().len()..];
        if added.is_empty() || f.trim_end() != *f || o.trim_end() != f.trim_end() {
            return CopyTrailing::default();
        }
        match common {
            Some(c) if c != added => return CopyTrailing::default(),
            _ => common = Some(added),
        }
    }
    CopyTrailing(common.unwrap_or("").to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_that_adds_a_space_to_every_line_is_seen_and_only_then() {
        let old = vec!["[log] ".to_owned(), "level = 1 ".to_owned()];
        let trail = copy_trailing(&old, &["[log]", "level = 1"]);
        assert_eq!(trail.strip("level = 2 "), "level = 2");
        assert_eq!(trail.strip("level = 2"), "level = 2");
        assert_eq!(trail.strip("level = 2  "), "level = 2  ");
        let mixed = copy_trailing(&old, &["[log] ", "level = 1"]);
        assert_eq!(mixed.strip("level = 2 "), "level = 2 ");
    }
}
