//! The retry context: what the next request tells the model when the edits of its
//! previous response could not be applied. Its own module because both the prompt
//! (`assemble.rs`) and the check of a ledger read from disk (`ledger.rs`) derive it
//! from the history.

use crate::chat::model::Message;

/// The retry context after a response whose edits failed: the failures recorded on the
/// last assistant message (`diff_error.errors`), when no user message came after it.
pub fn retry_context(history: &[Message]) -> Option<String> {
    let last = history
        .iter()
        .rev()
        .find(|m| m.role == "user" || m.role == "assistant")?;
    if last.role != "assistant" {
        return None;
    }
    let failure = last.diff_error.as_ref()?;
    let listed: Vec<String> = failure.errors.iter().map(|e| format!("- {e}")).collect();
    Some(format!(
        "Your file changes in the previous response could not be applied, so none of them were written:\n{}\nRepeat all changes of that response, with corrected edits.",
        listed.join("\n")
    ))
}
