//! The edit engine's input: what the model asked to change, in one typed shape whatever
//! carried it (a `write_file` / `edit_file` tool call, read in `crate::tools::file`, or a
//! SEARCH/REPLACE block in the answer text). Matching and planning start from here.

use serde_json::Value;

/// One search/replace edit.
#[derive(Debug, Clone, PartialEq)]
pub struct SrEdit {
    /// The path as the model wrote it (validated later).
    pub path: String,
    /// The file id the model gave, if any.
    pub file_id: Option<String>,
    /// Text to find.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence.
    pub replace_all: bool,
}

/// One change of the `anchored` schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Lines that start the region.
    pub start: Vec<String>,
    /// Lines that end it, if given.
    pub end: Option<Vec<String>>,
    /// The lines that replace the region.
    pub content: Vec<String>,
}

/// What the model asked to change, read from its tool call or text block.
#[derive(Debug, Clone, PartialEq)]
pub enum EditRequest {
    /// `write_file`.
    Write {
        /// Target path as given.
        path: String,
        /// Complete content.
        content: String,
    },
    /// A new file from a SEARCH/REPLACE block with an empty SEARCH part: refused when
    /// the file already has content, so a block never silently replaces a file.
    Create {
        /// Target path as given.
        path: String,
        /// Complete content.
        content: String,
    },
    /// Search/replace edits, in order (possibly across files).
    Edits(Vec<SrEdit>),
    /// Anchored changes to one file.
    Anchored {
        /// Target path as given.
        path: String,
        /// The file id the model gave, if any.
        file_id: Option<String>,
        /// The changes, in order.
        changes: Vec<Change>,
    },
}

/// One proposed change as the plan sees it: the request, or why its arguments could not
/// be read, with what the model sent for the `diff_error` report (docs/PROTOCOL.md).
#[derive(Debug, Clone)]
pub struct ProposedEdit {
    /// The tool (`write_file`, `edit_file`) the request was made as.
    pub tool: String,
    /// The arguments as a JSON object, when they were one.
    pub args: Option<Value>,
    /// The raw arguments, when they were not a JSON object.
    pub args_raw: Option<String>,
    /// The request, or the message that says why it could not be read.
    pub request: Result<EditRequest, String>,
}
