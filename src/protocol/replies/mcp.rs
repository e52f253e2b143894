//! Replies of the MCP actions (docs/PROTOCOL.md "MCP resources and prompts").

use crate::mcp::{PromptInfo, ResourceInfo, ServerInfo, TemplateInfo};

reply_types! {
    /// `mcp_servers_list`.
    McpServers = "mcp_servers" {
        /// Every configured server, by name.
        pub servers: Vec<ServerInfo>,
        /// The project's `.bb7/config.json` names servers the user has not allowed
        /// (`mcp_consent`).
        pub consent_needed: bool,
        /// What is wrong with the project's config, if anything.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub config_error: Option<String>,
    }

    /// `mcp_resources_list`.
    McpResources = "mcp_resources" {
        /// The server asked.
        pub server: String,
        /// Its resources.
        pub resources: Vec<ResourceInfo>,
        /// Its resource templates.
        pub templates: Vec<TemplateInfo>,
    }

    /// `mcp_prompts_list`.
    McpPrompts = "mcp_prompts" {
        /// The prompts, server by server.
        pub prompts: Vec<PromptInfo>,
        /// Servers that could not be asked, each as `name: why` (when every server
        /// was asked).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub errors: Vec<String>,
    }

    /// `mcp_resource_attach`: the attachments stored (a resource may hold several
    /// contents).
    McpAttached = "mcp_attached" {
        /// Each attachment's context path.
        pub paths: Vec<String>,
        /// Bytes read, all contents together.
        pub bytes: usize,
        /// A text was longer than the attachment cap (64 KiB) and was cut.
        pub truncated: bool,
        /// The server marks the resource for the user alone: kept and shown, never
        /// sent to the model.
        pub user_only: bool,
        /// Lines of the text holding invisible characters (zero-width, bidi
        /// controls, Tags), named for the user: docs/PROTOCOL.md "Invisible characters".
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub invisible_warnings: Vec<crate::text::invisible::InvisibleWarning>,
    }

    /// `mcp_prompt_get`: the rendered prompt, to send as the user's message.
    McpPrompt = "mcp_prompt" {
        /// The messages' text.
        pub text: String,
        /// Context paths of its embedded resources, attached to the active chat.
        pub attached: Vec<String>,
        /// Embedded contents not kept, each with why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub skipped: Vec<String>,
    }
}
