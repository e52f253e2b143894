//! What the model's copy changed in characters it did not mean to change: trailing
//! whitespace added to every copied line, inner tab alignment copied as spaces, a
//! line moved within the edit re-typed. The edit's lines keep the file's characters.

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

/// `n` with the file's inner whitespace where the copy `o` differs from the file `f`
/// only in its runs of spaces and tabs (tab alignment copied as spaces) and `n` keeps
/// the copy's run at that place; `None` when the three do not split alike.
pub fn file_spacing(o: &str, f: &str, n: &str) -> Option<String> {
    let runs = |s: &str| -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let space = c == ' ' || c == '\t';
            match out.last_mut() {
                Some((k, run)) if *k == space => run.push(c),
                _ => out.push((space, c.to_string())),
            }
        }
        out
    };
    let (ro, rf, rn) = (runs(o), runs(f), runs(n));
    let aligned = ro.len() == rf.len()
        && ro.len() == rn.len()
        && ro
            .iter()
            .zip(&rf)
            .all(|(a, b)| a.0 == b.0 && (a.0 || a.1 == b.1))
        && ro.iter().zip(&rn).all(|(a, b)| a.0 == b.0);
    if !aligned || ro == rf {
        return None;
    }
    let body = ro
        .iter()
        .zip(rf.iter().zip(&rn))
        .map(|(o, (f, n))| {
            if n.0 && n.1 == o.1 {
                f.1.as_str()
            } else {
                n.1.as_str()
            }
        })
        .collect();
    Some(body)
}

/// A new line that is, byte for byte, `old[o]`, the model's copy of the region line
/// `file[o]` (a line moved within the edit): the index `o`, when every such copy stands
/// for the same file text. The file's own bytes are written then, its inner tabs and
/// typography included, not the copy's.
pub fn moved_copy(old: &[String], file: &[&str], line: &str) -> Option<usize> {
    if line.trim().is_empty() {
        return None;
    }
    let mut hits = (0..file.len()).filter(|&o| old[o] == line);
    let first = hits.next()?;
    hits.all(|o| file[o] == file[first]).then_some(first)
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

    #[test]
    fn inner_tab_alignment_is_the_files_where_the_copy_kept_it() {
        let (o, f) = ("#define TX  64", "#define TX\t\t64");
        assert_eq!(
            super::file_spacing(o, f, "#define TX  128").as_deref(),
            Some("#define TX\t\t128")
        );
        // A run the model changed is its own; a different split is not read at all.
        assert_eq!(
            super::file_spacing(o, f, "#define TX 128").as_deref(),
            Some("#define TX 128")
        );
        assert_eq!(super::file_spacing(o, f, "#define TX(a) 1 2"), None);
        assert_eq!(super::file_spacing(o, o, "#define TX  128"), None);
    }

    #[test]
    fn a_moved_line_is_found_only_when_its_copies_agree() {
        let old = ["    a = 1".to_string(), "    b = 2".to_string()];
        assert_eq!(
            super::moved_copy(&old, &["\ta = 1", "\tb = 2"], "    b = 2"),
            Some(1)
        );
        assert_eq!(
            super::moved_copy(&old, &["\ta = 1", "\tb = 2"], "    c = 3"),
            None
        );
        let twice = ["x".to_string(), "x".to_string()];
        assert_eq!(super::moved_copy(&twice, &["x", " x"], "x"), None);
    }
}
