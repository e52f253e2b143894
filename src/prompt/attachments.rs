//! How attachments (`context_attach`, images) appear in a request: the attributes of
//! their `<attachment>` tag, and the images sent as parts after the block that names
//! them (docs/PROTOCOL.md, "Extension: rules files and attachments").

use std::fmt::Write as _;

use serde_json::Value;

use super::ledger::ShownFile;
use super::quote::attr;
use crate::chat::model::ContextFile;

/// An image sent after a block: its media type and its bytes as base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockImage {
    /// `image/png`, …
    pub media_type: String,
    /// The bytes, base64.
    pub data: String,
}

/// The images among `files`, in order.
pub(super) fn images_of(files: &[ShownFile]) -> Vec<BlockImage> {
    files
        .iter()
        .filter_map(|f| {
            Some(BlockImage {
                media_type: f.image.as_ref()?.media_type.clone(),
                data: f.text.clone(),
            })
        })
        .collect()
}

/// The attributes of an attachment's tag: `kind`, `name` and each meta entry, in the
/// order it was sent (docs/PROTOCOL.md, `context_attach`), escaped.
pub(super) fn attachment_attrs(entry: &ContextFile) -> String {
    let kind = entry.kind.map_or("text", |k| k.as_str());
    let name = entry
        .path
        .strip_prefix(kind)
        .and_then(|n| n.strip_prefix(':'))
        .unwrap_or(&entry.path);
    let mut attrs = format!("kind=\"{kind}\" name=\"{}\"", attr(name));
    for (k, v) in entry.meta.iter().flatten() {
        let v = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = write!(attrs, " {k}=\"{}\"", attr(&v));
    }
    attrs
}
