//! Text saved in one Unicode normal form and copied in another: a file written on macOS
//! may hold `é` decomposed (`e` + U+0301, NFD) while a model writes it composed (U+00E9,
//! NFC). The two read the same, so an edit whose `old_string` differs from the file only
//! in its normal form means those lines (Unicode Standard Annex #15, canonical
//! equivalence).
//!
//! The rules (docs/PROTOCOL.md, "The model's file tools"): the edit is read a second
//! time with the file and `old_string` both in NFC; it applies across forms only when
//! that reading agrees with the byte-for-byte one (same region, or the byte-for-byte
//! one found nothing); lines the edit leaves unchanged keep the file's bytes, its form
//! included; lines the edit writes are the model's text as it sent them (in NFC when
//! its `old_string` was not: a model that copies decomposed text writes it so too;
//! unless the file's changed region holds decomposed text itself).

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::is_nfc;

use super::error::EditError;

/// A reading of one edit: `(content, old, new, replace_all)` to the new content.
pub(crate) type Reading = dyn Fn(&str, &str, &str, bool) -> Result<String, EditError>;

/// The edit read across normal forms, given `first`, the byte-for-byte reading's
/// outcome: `None` when no second reading applies (the file and `old` are both in
/// NFC), else the outcome to use. A byte-for-byte success the second reading does not
/// confirm (other lines read the same in another form) is refused as ambiguous.
pub(crate) fn across_forms(
    read: &Reading,
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    first: Result<String, EditError>,
) -> Result<String, EditError> {
    if is_nfc(content) && is_nfc(old) {
        return first;
    }
    let file = content
        .split_inclusive('\n')
        .map(|l| l.nfc().collect::<String>());
    let file: Vec<String> = file.collect();
    let composed = file.concat();
    // A model that copied old_string decomposed wrote new_string so too: its kept lines
    // are compared with old_string's in the same form.
    let sent = new;
    let new = if is_nfc(old) {
        new.to_owned()
    } else {
        new.nfc().collect()
    };
    let second = read(&composed, &old.nfc().collect::<String>(), &new, replace_all)
        .and_then(|out| restore(content, &file, &out, sent));
    match (first, second) {
        (Ok(a), Ok(b)) if a == b => Ok(a),
        (Ok(_), Ok(_)) => Err(ambiguous(
            "it would change other lines too, which read the same in another normal form",
        )),
        (Ok(_), Err(EditError::NotUnique { match_lines })) => Err(ambiguous(&format!(
            "it reads the same as the lines starting at {} in another normal form",
            match_lines
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        (Ok(a), Err(_)) => Ok(a),
        (Err(EditError::NotFound { .. }), Ok(b)) => Ok(b),
        (Err(e), _) => Err(e),
    }
}

fn ambiguous(why: &str) -> EditError {
    EditError::Invalid(format!(
        "old_string matches the file only when its Unicode normal form (NFC or NFD) is set aside, and {why}; nothing was changed: copy old_string with more of its surrounding lines"
    ))
}

/// `out`, the result of the edit on the file in NFC (`composed`, line by line), with
/// every line the edit left unchanged in the file's own bytes again. The lines before
/// and after the changed region are the file's by position; inside it, a line whose
/// text (in NFC) is a line of the file there takes that line's bytes, when the file
/// writes that text one way only there (else the reading is refused as ambiguous).
/// A line the edit writes is in NFC where the file's changed region is, else as the
/// model sent it in `sent` (its new_string): a region the file holds decomposed keeps
/// the model's decomposed text rather than take another form than its neighbours.
fn restore(content: &str, composed: &[String], out: &str, sent: &str) -> Result<String, EditError> {
    let original: Vec<&str> = content.split_inclusive('\n').collect();
    let got: Vec<&str> = out.split_inclusive('\n').collect();
    let p = composed
        .iter()
        .zip(&got)
        .take_while(|(a, b)| a.as_str() == **b)
        .count();
    let s = composed[p..]
        .iter()
        .rev()
        .zip(got[p..].iter().rev())
        .take_while(|(a, b)| a.as_str() == **b)
        .count();
    let mut forms: HashMap<&str, Option<&str>> = HashMap::new();
    for (c, o) in composed[p..composed.len() - s]
        .iter()
        .zip(&original[p..original.len() - s])
    {
        forms
            .entry(c.as_str())
            .and_modify(|f| {
                if *f != Some(*o) {
                    *f = None;
                }
            })
            .or_insert(Some(*o));
    }
    let decomposed = original[p..original.len() - s].iter().any(|l| !is_nfc(l));
    let as_sent: HashMap<String, &str> = sent
        .split_inclusive('\n')
        .map(|l| (l.nfc().collect::<String>(), l))
        .collect();
    let mut result = original[..p].concat();
    for line in &got[p..got.len() - s] {
        match forms.get(line.nfc().collect::<String>().as_str()) {
            Some(Some(o)) => result.push_str(o),
            Some(None) => {
                return Err(ambiguous(&format!(
                    "the file writes the line {:?} in more than one form there",
                    line.trim()
                )));
            }
            None => match as_sent.get(*line).filter(|_| decomposed) {
                Some(model) => result.push_str(model),
                None => result.push_str(line),
            },
        }
    }
    result.push_str(&original[original.len() - s..].concat());
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(content: &str, old: &str, new: &str, _all: bool) -> Result<String, EditError> {
        match content.matches(old).count() {
            1 => Ok(content.replacen(old, new, 1)),
            0 => Err(super::super::error::not_found(content, old)),
            n => Err(EditError::NotUnique {
                match_lines: (1..=n).collect(),
            }),
        }
    }

    #[test]
    fn a_kept_line_keeps_the_files_form_and_a_written_line_the_models() {
        let nfd = "cafe\u{301}\n";
        let file = format!("a\n{nfd}b\n");
        let first = read(&file, "café\nb\n", "café\nc\n", false);
        let out = across_forms(&read, &file, "café\nb\n", "café\nc\n", false, first).unwrap();
        assert_eq!(out, format!("a\n{nfd}c\n"));
    }

    #[test]
    fn a_written_line_in_a_decomposed_region_keeps_the_models_decomposed_text() {
        let file = "# cafe\u{301}\nx = 'e\u{301}'\ny\n";
        let (old, new) = ("# café\nx = 'e\u{301}'\n", "# café\nx = 'e\u{301}' # z\n");
        let first = read(file, old, new, false);
        let out = across_forms(&read, file, old, new, false, first).unwrap();
        assert_eq!(out, "# cafe\u{301}\nx = 'e\u{301}' # z\ny\n");
    }

    #[test]
    fn a_line_written_both_ways_is_ambiguous() {
        let file = "cafe\u{301}\ncafé\n";
        let first = read(file, "café\n", "tea\n", false);
        let err = across_forms(&read, file, "café\n", "tea\n", false, first).unwrap_err();
        assert!(err.message("f").contains("normal form"), "{err:?}");
    }
}
