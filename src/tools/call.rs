//! [`ToolCall`]: one tool call as the model sent it, before it is read.

use serde::Serialize;

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
