//! The model's tools, as offered in a chat request and as read back from its tool
//! calls (docs/PROTOCOL.md, "The model's file tools" and "approved retrieval tools"):
//!
//! - [`file`]: `write_file` and `edit_file`, whose schema the config's `diff_mode`
//!   selects ([`DiffMode`]), and the reading of their arguments with the variants
//!   models send. The edit engine ([`crate::edit`]) plans and applies the calls.
//! - [`retrieval`]: the read-only `list_files`, `search_project`, `read_file` and
//!   `clarify_user`, offered when the chat's `tools` setting ([`ToolsMode`]) is not
//!   `off`.

pub mod file;
mod reads;
pub mod retrieval;

use serde::Serialize;
use serde_json::Value;

pub use file::DiffMode;
pub use retrieval::{ToolsMode, is_retrieval};

/// One complete tool call from the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The provider's call id.
    pub id: String,
    /// Function name.
    pub name: String,
    /// The JSON arguments, as streamed (may be invalid).
    pub arguments: String,
}

/// The `tools` array a turn sends: the file tools in the schema of `diff_mode`, and the
/// retrieval tools unless `tools_mode` is `off`.
pub fn definitions(diff_mode: DiffMode, tools_mode: ToolsMode) -> Vec<Value> {
    let mut tools = file::definitions(diff_mode);
    if tools_mode != ToolsMode::Off {
        tools.extend(retrieval::definitions());
    }
    tools
}
