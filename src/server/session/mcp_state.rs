//! The MCP state a session keeps (its handlers are in `mcp.rs`): kept apart so that
//! `session.rs` names these types without importing the handlers, which import it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::chat::ChatKey;
use crate::config::mcp::McpServerSpec;
use crate::error::Result;
use crate::mcp::{Contents, Pool, Rendered};

/// The session's MCP state: the pool (built on first use for the current project),
/// and the servers the editor supplied.
#[derive(Default)]
pub struct McpState {
    pub(super) pool: Option<Arc<Pool>>,
    /// The project root the pool was built for.
    pub(super) built_for: Option<PathBuf>,
    /// What is wrong with the project's `.bb7/config.json`, if anything.
    pub(super) config_error: Option<String>,
    pub(super) client: BTreeMap<String, McpServerSpec>,
}

/// What a read brought back, on its way to the loop.
pub struct McpDone {
    pub(super) chat: ChatKey,
    pub(super) request_id: Option<String>,
    pub(super) server: String,
    pub(super) what: Result<Read>,
}

pub(super) enum Read {
    Resource {
        contents: Vec<Contents>,
        user_only: bool,
    },
    Prompt(Rendered),
}
