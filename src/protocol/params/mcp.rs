//! Parameters of the MCP actions (docs/PROTOCOL.md "MCP resources and prompts").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::mcp::McpServerSpec;
use crate::protocol::fields::NonEmpty;

/// `mcp_resources_list`, `mcp_prompts_list`: one server by its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpServerRef {
    /// The server's name (`mcp_servers` in the config).
    pub server: NonEmpty,
}

/// `mcp_prompts_list`: one server, or every allowed server when absent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct McpPromptsList {
    /// The server's name; absent: every server that may start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<NonEmpty>,
}

/// `mcp_resource_attach`: a resource to read and attach to the active chat.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpResourceAttach {
    /// The server's name.
    pub server: NonEmpty,
    /// The resource's URI (a listed one, or a template filled in).
    pub uri: NonEmpty,
}

/// `mcp_prompt_get`: a prompt to render.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpPromptGet {
    /// The server's name.
    pub server: NonEmpty,
    /// The prompt's name.
    pub name: NonEmpty,
    /// Its arguments, name → value.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// `mcp_consent`: allow (or stop allowing) the project's own servers to start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpConsent {
    /// `true` allows the project's current server list; `false` withdraws it.
    pub allow: bool,
}

/// `mcp_servers_add`: servers the editor supplies for this session (an ACP client's
/// `mcpServers`), in the config's shape.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McpServersAdd {
    /// Name → `{command, args, env}` or `{url, headers}`.
    pub servers: BTreeMap<String, McpServerSpec>,
}
