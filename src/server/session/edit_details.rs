//! The per-edit part of an `edit` change payload (docs/PROTOCOL.md, "typed change
//! payloads"): for each search/replace edit of the response on a file, its old and
//! new text, the lines its old text covers in the version the model saw, and how it
//! is found there — as it is, or with which tolerance, tried strictest first in the
//! order the edit matcher tries them (`edit::matching`).

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::edit::{CallReport, CallStatus};
use crate::protocol::events::EditDetail;
use crate::text::model_lines;

/// One search/replace edit as `edit_file`'s arguments give it (either shape).
#[derive(Deserialize)]
struct RawEdit {
    path: Option<String>,
    old_string: Option<String>,
    new_string: Option<String>,
    #[serde(default)]
    replace_all: bool,
}

/// `edit_file`'s arguments: `{"edits":[…]}` or one edit at the top level.
#[derive(Deserialize)]
struct RawCall {
    #[serde(default)]
    edits: Vec<RawEdit>,
    #[serde(flatten)]
    single: RawEdit,
}

/// The edits of the calls in `reports` that applied to `path`, described against
/// `base`, the version of the file the model saw.
pub(super) fn edit_details(path: &str, base: &str, reports: &[CallReport]) -> Vec<EditDetail> {
    let mut out = Vec::new();
    for r in reports {
        if r.status != CallStatus::Ok || r.tool != "edit_file" {
            continue;
        }
        let Some(call) = r
            .args
            .clone()
            .and_then(|a| serde_json::from_value::<RawCall>(a).ok())
        else {
            continue;
        };
        let edits = if call.edits.is_empty() {
            vec![call.single]
        } else {
            call.edits
        };
        for e in edits {
            let named = e.path.as_deref().or(r.path.as_deref());
            if named.map(|p| p.trim_start_matches("./")) != Some(path) {
                continue;
            }
            if let (Some(old), Some(new)) = (e.old_string, e.new_string) {
                out.push(detail(base, &old, &new, e.replace_all));
            }
        }
    }
    out
}

fn detail(base: &str, old: &str, new: &str, replace_all: bool) -> EditDetail {
    let (matched, tolerance, lines) = locate(base, old);
    let text = |t: &str| (t.len() <= EditDetail::TEXT_LIMIT).then(|| t.to_owned());
    let hash = |t: &str| {
        (t.len() > EditDetail::TEXT_LIMIT).then(|| hex::encode(Sha256::digest(t.as_bytes())))
    };
    EditDetail {
        start_line: lines.map(|l| l.0),
        end_line: lines.map(|l| l.1),
        matched: matched.to_owned(),
        tolerance: tolerance.map(str::to_owned),
        replace_all,
        old_text: text(old),
        new_text: text(new),
        old_bytes: old.len(),
        new_bytes: new.len(),
        old_sha256: hash(old),
        new_sha256: hash(new),
    }
}

type Located = (&'static str, Option<&'static str>, Option<(usize, usize)>);

/// A tolerance: its name and how it makes a line comparable.
type Tolerance = (&'static str, fn(&str) -> String);

/// How `old` is found in `base`, and its first and last line there (1-based).
fn locate(base: &str, old: &str) -> Located {
    let old_lf = old.replace("\r\n", "\n");
    let wanted = model_lines(&old_lf);
    if let Some(pos) = base.find(&old_lf).filter(|_| !old_lf.is_empty()) {
        let start = base[..pos].matches('\n').count() + 1;
        let end = start + wanted.len().saturating_sub(1);
        return ("exact", None, Some((start, end)));
    }
    let lines: Vec<&str> = base.lines().collect();
    let norms: [Tolerance; 3] = [
        ("trailing_whitespace", |l| l.trim_end().to_owned()),
        ("indentation", |l| l.trim().to_owned()),
        ("whitespace", loose),
    ];
    if !wanted.is_empty() && wanted.len() <= lines.len() {
        for (name, norm) in norms {
            let want: Vec<String> = wanted.iter().map(|l| norm(l)).collect();
            let found = lines
                .windows(want.len())
                .position(|w| w.iter().zip(&want).all(|(a, b)| norm(a) == *b));
            if let Some(i) = found {
                return ("tolerant", Some(name), Some((i + 1, i + want.len())));
            }
        }
    }
    ("tolerant", Some("other"), None)
}

/// A line with its whitespace runs made one space and typographic quotes and dashes
/// made ASCII.
fn loose(line: &str) -> String {
    line.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            '\u{2013}' | '\u{2014}' => '-',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_each_tolerance() {
        let base = "fn a() {\n    one();\n    two();\n}\n";
        assert_eq!(locate(base, "    two();\n"), ("exact", None, Some((3, 3))));
        assert_eq!(
            locate(base, "one();\ntwo();"),
            ("tolerant", Some("indentation"), Some((2, 3)))
        );
        assert_eq!(
            locate(base, "    one();   \n"),
            ("tolerant", Some("trailing_whitespace"), Some((2, 2)))
        );
        assert_eq!(locate(base, "three();"), ("tolerant", Some("other"), None));
    }
}
