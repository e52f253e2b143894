//! The invisible characters of what a context-only prompt adds (resources, embedded
//! files, links read through the editor, attachments), told to the user as an agent
//! message. A prompt with text goes to the model, and the send's `invisible` notice
//! names them (`server::session::send_notices`); one with context only is no send, so
//! without this the user would never hear of a bidi override in a file they added
//! (docs/PROTOCOL.md "Invisible characters").

use super::context::ContextItem;
use crate::text::invisible::{self, InvisibleWarning, MAX_WARNINGS};

/// The warnings of `items` and `attachments` (kind, name, text; named `kind:name` as
/// bb7 stores them), sections numbered as their file; at most [`MAX_WARNINGS`] + 1, so
/// a caller can tell that more were left out.
pub(super) fn warnings(
    items: &[ContextItem],
    attachments: &[(&'static str, String, String)],
) -> Vec<InvisibleWarning> {
    let mut out = Vec::new();
    for item in items {
        if out.len() > MAX_WARNINGS {
            return out;
        }
        let found = invisible::find(&item.content, MAX_WARNINGS + 1);
        let first = item
            .range
            .map_or(1, |(s, _)| usize::try_from(s).unwrap_or(1));
        out.extend(invisible::warnings_for(&item.rel, &found, |l| {
            l + first - 1
        }));
    }
    for (kind, name, text) in attachments {
        if out.len() > MAX_WARNINGS {
            return out;
        }
        out.extend(invisible::warnings(&format!("{kind}:{name}"), text));
    }
    out
}

/// The agent message for `warnings` (non-empty): each `path:line: …`, at most
/// [`MAX_WARNINGS`] named, as the send's notice words it.
pub(super) fn message(warnings: &[InvisibleWarning]) -> String {
    let named: Vec<&str> = warnings
        .iter()
        .take(MAX_WARNINGS)
        .map(|w| w.message.as_str())
        .collect();
    let more = if warnings.len() > MAX_WARNINGS {
        "; and more lines"
    } else {
        ""
    };
    format!(
        "\n\n(bb7: This context holds invisible characters the model reads and you may \
         not see: {}{more})\n\n",
        named.join("; ")
    )
}
