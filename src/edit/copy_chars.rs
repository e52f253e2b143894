//! Trailing whitespace the model's copy adds to every copied line: the edit's changed
//! and new lines keep the file's line ends, not the copy's.

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
