//! Makefile recipe lines: where make requires a tab (the GNU make manual, "Rule
//! Syntax": each recipe line starts with a tab), so a new line there keeps one.

use super::error::EditError;
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

/// A new line placed at column 0 between a Makefile recipe's tab-indented lines: make
/// reads it as a comment or variable line of the makefile, or, after a line ending in
/// `\\`, as part of that shell command, where the model may have meant a recipe line.
/// Refused, since the readings differ. `file` holds the region's lines from file line
/// `start`; `anchor` indexes it; `placed` is the new line as it would be written.
pub fn tab_kept(
    doc: &Doc,
    start: usize,
    file: &[&str],
    anchor: usize,
    placed: &str,
) -> Result<(), EditError> {
    let recipe_line = |t: &str| t.starts_with('\t') && !t.trim().is_empty();
    let after = doc.lines.get(start + anchor + 1).map(|l| l.text);
    let between = file.get(anchor).is_some_and(|t| recipe_line(t))
        && after.is_some_and(recipe_line)
        && in_recipe(doc, start + anchor);
    if between && !placed.trim().is_empty() && !placed.starts_with(['\t', ' ']) {
        return Err(EditError::Invalid(format!(
            "the new line {:?} would start at column 0 between tab-indented recipe lines of this Makefile, where make reads it otherwise than a recipe line; write it with the recipe's tab if it belongs to the recipe",
            placed.trim()
        )));
    }
    Ok(())
}
