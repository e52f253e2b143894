//! Makefile recipe lines: where make requires a tab (the GNU make manual, "Rule
//! Syntax": each recipe line starts with a tab), so a new line there keeps one.

use super::text::Doc;

/// Whether a tab-indented line after file line `at` is a Makefile recipe line: the
/// nearest non-blank line at or above it is a rule (`target: prerequisites`, at column
/// 0) or a recipe line (starting with a tab). make requires the tab there, whatever
/// the lines further up (a variable's continuation, say) are indented with.
/// Only in a file that shows make's convention: a tab-indented line right under a rule.
pub fn in_recipe(doc: &Doc, at: usize) -> bool {
    let above = |at: usize| {
        (0..=at.min(doc.lines.len().saturating_sub(1)))
            .rev()
            .map(|i| doc.lines[i].text)
            .find(|t| !t.trim().is_empty())
    };
    let Some(line) = above(at) else {
        return false;
    };
    if !line.starts_with('\t') && !is_rule(line) {
        return false;
    }
    (1..doc.lines.len())
        .any(|i| doc.lines[i].text.starts_with('\t') && above(i - 1).is_some_and(is_rule))
}

/// A make rule line: `target: prerequisites` at column 0 (not `VAR := value`).
fn is_rule(line: &str) -> bool {
    line.split_once(':').is_some_and(|(target, rest)| {
        !target.is_empty()
            && !target.starts_with([' ', '\t', '#'])
            && !target.contains(['=', '(', '{', '"', '\''])
            && !rest.starts_with('=')
            && !line.trim_end().ends_with(['{', ';', ','])
    })
}
