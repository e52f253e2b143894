//! bb7 as an MCP client for resources and prompts only (docs/PROTOCOL.md "MCP
//! resources and prompts"), through the official Rust SDK (`rmcp`). bb7 declares no
//! client capability (no roots, no sampling, no elicitation) and never calls or lists
//! a server's tools: the model never talks to MCP, the user picks what is read.
//!
//! A [`Pool`] holds one session's servers. Each starts on first use (never at bb7's
//! start); every request, the start included, has the server's timeout, and a server
//! that fails, hangs or dies is an error naming it; a dead connection is dropped so
//! the next request starts the server again. Dropping the pool stops its servers
//! (the SDK kills a child process when its transport is dropped).

pub mod content;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use serde::{Deserialize, Serialize};

pub use content::{Contents, PromptInfo, Rendered, ResourceInfo, TemplateInfo};

use crate::config::mcp::{McpServerSpec, Transport};
use crate::error::{Error, ErrorCode, Result};

/// The most contents one read attaches (a resource may have several parts).
pub const MAX_CONTENTS: usize = 32;

/// Where a server's entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `~/.config/bb7/config.json`.
    User,
    /// `{project}/.bb7/config.json`: starts only once the user allowed it.
    Project,
    /// The editor (an ACP client's `session/new` `mcpServers`, or `mcp_servers_add`).
    Client,
}

/// A server as `mcp_servers_list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Its name in the config.
    pub name: String,
    /// `stdio` or `http`; absent when the entry is malformed (`error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Where the entry came from.
    pub origin: Origin,
    /// A project server the user has not allowed: it is not started.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_consent: bool,
    /// Running now.
    #[serde(default)]
    pub running: bool,
    /// What is wrong with the entry, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

type Client = RunningService<RoleClient, ()>;

/// A running server: its client, and for a child process its process group.
struct Conn {
    client: Arc<Client>,
    group: Option<u32>,
}

impl Conn {
    /// Ends the server's process group (a launcher such as `npx` and the server it
    /// started), SIGTERM as a shell's job control would. The SDK kills its own child
    /// when the transport drops, but only as a task of a runtime that may be ending,
    /// and never the child's children.
    fn stop(&self) {
        if let Some(pgid) = self.group.and_then(|g| i32::try_from(g).ok())
            && pgid > 0
        {
            // SAFETY: kill(2) with a negative pid signals that process group only.
            unsafe {
                libc::kill(-pgid, libc::SIGTERM);
            }
        }
    }
}

struct Slot {
    spec: McpServerSpec,
    origin: Origin,
    allowed: bool,
    conn: Arc<tokio::sync::Mutex<Option<Conn>>>,
}

/// One session's MCP servers (see the module's comment).
#[derive(Default)]
pub struct Pool {
    slots: Mutex<BTreeMap<String, Arc<Slot>>>,
}

/// The error of server `name`: an `api` error whose message names it.
fn failed(name: &str, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::Api, format!("MCP server {name}: {what}"))
}

impl Pool {
    /// An empty pool.
    pub fn new() -> Pool {
        Pool::default()
    }

    /// Adds (or replaces) the servers of `origin`; `allowed` false keeps them from
    /// starting (a project the user has not allowed). A replaced server is stopped.
    pub fn add(&self, servers: &BTreeMap<String, McpServerSpec>, origin: Origin, allowed: bool) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        for (name, spec) in servers {
            slots.insert(
                name.clone(),
                Arc::new(Slot {
                    spec: spec.clone(),
                    origin,
                    allowed,
                    conn: Default::default(),
                }),
            );
        }
    }

    /// The servers, by name.
    pub fn servers(&self) -> Vec<ServerInfo> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .iter()
            .map(|(name, s)| {
                let transport = s.spec.transport();
                let running = s
                    .conn
                    .try_lock()
                    .map(|c| c.as_ref().is_some_and(|c| !c.client.is_closed()))
                    .unwrap_or(true);
                ServerInfo {
                    name: name.clone(),
                    transport: transport.as_ref().ok().map(|t| t.as_str().to_owned()),
                    origin: s.origin,
                    needs_consent: !s.allowed,
                    running,
                    error: transport.err(),
                }
            })
            .collect()
    }

    fn slot(&self, name: &str) -> Result<Arc<Slot>> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let Some(slot) = slots.get(name) else {
            let names: Vec<&str> = slots.keys().map(String::as_str).collect();
            let known = if names.is_empty() {
                "none is configured (mcp_servers in ~/.config/bb7/config.json)".to_owned()
            } else {
                format!("configured: {}", names.join(", "))
            };
            return Err(Error::not_found(format!("No MCP server {name} ({known})")));
        };
        if !slot.allowed {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                format!(
                    "MCP server {name} comes from this project's .bb7/config.json and runs a \
                     command: allow the project's servers first (`bb7 mcp allow`, or the \
                     mcp_consent action)"
                ),
            ));
        }
        Ok(slot.clone())
    }

    /// The running client of `name`, started when it is not running.
    async fn client(&self, name: &str) -> Result<(Arc<Client>, std::time::Duration)> {
        let slot = self.slot(name)?;
        let timeout = slot.spec.timeout();
        let mut conn = slot.conn.lock().await;
        if let Some(c) = conn.as_ref().filter(|c| !c.client.is_closed()) {
            return Ok((c.client.clone(), timeout));
        }
        if let Some(old) = conn.take() {
            old.stop();
        }
        let started = tokio::time::timeout(timeout, start(name, &slot.spec))
            .await
            .map_err(|_| {
                failed(
                    name,
                    format!("did not start within {} s", timeout.as_secs()),
                )
            })??;
        let (client, group) = started;
        let client = Arc::new(client);
        *conn = Some(Conn {
            client: client.clone(),
            group,
        });
        Ok((client, timeout))
    }

    /// Runs `request` against `name` within its timeout; on failure the connection is
    /// dropped (a server that hung or died is started afresh next time).
    async fn call<T, F, Fut>(&self, name: &str, what: &str, request: F) -> Result<T>
    where
        F: FnOnce(Arc<Client>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, rmcp::ServiceError>>,
    {
        let (client, timeout) = self.client(name).await?;
        let outcome = tokio::time::timeout(timeout, request(client)).await;
        let err = match outcome {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(rmcp::ServiceError::McpError(e))) => {
                // The server answered with an error: it is alive.
                return Err(failed(name, format!("{what}: {}", e.message)));
            }
            Ok(Err(e)) => failed(name, format!("{what}: {e}")),
            Err(_) => failed(
                name,
                format!("{what} got no answer within {} s", timeout.as_secs()),
            ),
        };
        if let Ok(slot) = self.slot(name)
            && let Some(old) = slot.conn.lock().await.take()
        {
            old.stop();
        }
        Err(err)
    }

    /// `name`'s resources and resource templates (empty for a server without the
    /// resources capability).
    pub async fn resources(&self, name: &str) -> Result<(Vec<ResourceInfo>, Vec<TemplateInfo>)> {
        let (client, _) = self.client(name).await?;
        let has = client
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some());
        if !has {
            return Ok((Vec::new(), Vec::new()));
        }
        let resources = self
            .call(name, "resources/list", |c| async move {
                c.list_all_resources().await
            })
            .await?;
        // Templates are optional: a server that lists resources but no templates
        // answers "method not found", which means none.
        let templates = self
            .call(name, "resources/templates/list", |c| async move {
                c.list_all_resource_templates().await
            })
            .await
            .unwrap_or_default();
        Ok((
            resources
                .into_iter()
                .map(ResourceInfo::from_model)
                .collect(),
            templates
                .into_iter()
                .map(TemplateInfo::from_model)
                .collect(),
        ))
    }

    /// Reads `uri` from `name`: its contents, and whether the server's listing marks
    /// it for the user alone (`annotations.audience`). Errors: the server's, or no
    /// content that can be attached (a binary blob, named with its MIME type).
    pub async fn read(&self, name: &str, uri: &str) -> Result<(Vec<Contents>, bool)> {
        let params = ReadResourceRequestParams::new(uri);
        let result = self
            .call(name, "resources/read", |c| async move {
                c.read_resource(params).await
            })
            .await?;
        let mut out = Vec::new();
        let mut refused = Vec::new();
        // One read is one resource: a server that answers with more parts than a
        // directory listing needs is cut rather than flooding the context.
        for c in result.contents.into_iter().take(MAX_CONTENTS) {
            match content::from_read(c) {
                Ok(c) => out.push(c),
                Err(e) => refused.push(e),
            }
        }
        if out.is_empty() {
            let why = refused
                .into_iter()
                .next()
                .unwrap_or_else(|| format!("{uri} has no contents"));
            return Err(Error::invalid(format!("MCP server {name}: {why}")));
        }
        // The audience is an annotation of the listing, not of the read: asked once.
        let listed = self
            .call(name, "resources/list", |c| async move {
                c.list_all_resources().await
            })
            .await
            .unwrap_or_default();
        let user_only = listed
            .iter()
            .find(|r| r.uri == uri)
            .is_some_and(|r| content::user_only(r.annotations.as_ref()));
        Ok((out, user_only))
    }

    /// `name`'s prompts (none for a server without the prompts capability).
    pub async fn prompts(&self, name: &str) -> Result<Vec<PromptInfo>> {
        let (client, _) = self.client(name).await?;
        let has = client
            .peer_info()
            .is_some_and(|i| i.capabilities.prompts.is_some());
        if !has {
            return Ok(Vec::new());
        }
        let prompts = self
            .call(name, "prompts/list", |c| async move {
                c.list_all_prompts().await
            })
            .await?;
        Ok(prompts
            .into_iter()
            .map(|p| PromptInfo::from_model(name, p))
            .collect())
    }

    /// Renders prompt `prompt` of `name` with `arguments`.
    pub async fn prompt(
        &self,
        name: &str,
        prompt: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<Rendered> {
        let mut params = GetPromptRequestParams::new(prompt);
        if !arguments.is_empty() {
            let args = arguments
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
            params = params.with_arguments(args);
        }
        let result = self
            .call(name, "prompts/get", |c| async move {
                c.get_prompt(params).await
            })
            .await?;
        Ok(content::render(name, result.messages))
    }
}

impl Drop for Pool {
    /// Stops every server still running (the session ends, or its project changed).
    fn drop(&mut self) {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        for slot in slots.values() {
            if let Ok(conn) = slot.conn.try_lock()
                && let Some(c) = conn.as_ref()
            {
                c.stop();
            }
        }
    }
}

/// Starts server `name` and completes the MCP handshake; the client, and the process
/// group of a child process.
async fn start(name: &str, spec: &McpServerSpec) -> Result<(Client, Option<u32>)> {
    let transport = spec
        .transport()
        .map_err(|e| Error::invalid(format!("MCP server {name}: {e}")))?;
    match transport {
        Transport::Stdio => {
            let program = spec.command.as_deref().unwrap_or_default();
            let mut cmd = tokio::process::Command::new(program);
            // Its own process group: a terminal's Ctrl-C is bb7's to handle, and
            // stopping the server stops what it started ([`Conn::stop`]).
            cmd.args(&spec.args).envs(&spec.env).process_group(0);
            let (proc, _) = rmcp::transport::TokioChildProcess::builder(cmd)
                // A server's log is not bb7's: stdout is the protocol, stderr dropped.
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| failed(name, format!("cannot start {program}: {e}")))?;
            let group = proc.id();
            let client = ().serve(proc).await.map_err(|e| {
                if let Some(pgid) = group.and_then(|g| i32::try_from(g).ok()) {
                    // SAFETY: kill(2) with a negative pid signals that group only.
                    unsafe {
                        libc::kill(-pgid, libc::SIGTERM);
                    }
                }
                failed(name, format!("no MCP handshake: {e}"))
            })?;
            Ok((client, group))
        }
        Transport::Http => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let url = spec.url.as_deref().unwrap_or_default();
            let mut headers = std::collections::HashMap::new();
            for (k, v) in &spec.headers {
                let k = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| Error::invalid(format!("MCP server {name}: bad header {k}")))?;
                // The value is never echoed: it is often a token.
                let v = reqwest::header::HeaderValue::from_str(v).map_err(|_| {
                    Error::invalid(format!("MCP server {name}: bad value of header {k}"))
                })?;
                headers.insert(k, v);
            }
            let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
            let transport =
                StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
            let client = ()
                .serve(transport)
                .await
                .map_err(|e| failed(name, format!("no MCP handshake at {url}: {e}")))?;
            Ok((client, None))
        }
    }
}
