//! MCP over ACP (docs/PROTOCOL.md "MCP resources and prompts"): the `mcpServers` a
//! client passes in `session/new` and `session/load` (stdio and HTTP) join the
//! session's servers; their prompts are announced as `/mcp:SERVER:PROMPT` commands
//! (`available_commands_update`) and render into the message; a `resource_link`
//! whose URI a server lists is read through it and attached. bb7 never offers the
//! model a server's tools.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, McpServer,
    SessionNotification, SessionUpdate, UnstructuredCommandInput,
};

use super::state::{Cx, Sess, invalid, rpc};
use crate::config::mcp::McpServerSpec;
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params::{self, NonEmpty};
use crate::protocol::replies::{Ack, McpAttached, McpPrompt, McpPrompts, McpResources, McpServers};

/// The client's servers in the config's shape (`sse` ones are left out: bb7 does not
/// announce that transport).
fn specs(servers: &[McpServer]) -> BTreeMap<String, McpServerSpec> {
    let mut out = BTreeMap::new();
    for s in servers {
        let (name, spec) = match s {
            McpServer::Stdio(s) => (
                s.name.clone(),
                McpServerSpec {
                    command: Some(s.command.to_string_lossy().into_owned()),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|e| (e.name.clone(), e.value.clone()))
                        .collect(),
                    ..Default::default()
                },
            ),
            McpServer::Http(h) => (
                h.name.clone(),
                McpServerSpec {
                    url: Some(h.url.clone()),
                    headers: h
                        .headers
                        .iter()
                        .map(|e| (e.name.clone(), e.value.clone()))
                        .collect(),
                    ..Default::default()
                },
            ),
            _ => continue,
        };
        out.insert(name, spec);
    }
    out
}

/// Adds the client's `mcpServers` to the session's server (none started yet), then,
/// off the request, announces every server's prompts as commands after `base` (the
/// session's own commands) when any server is configured.
pub(super) async fn start(
    sess: &Arc<Sess>,
    servers: &[McpServer],
    base: Vec<AvailableCommand>,
    cx: &Cx,
) -> Result<(), RpcError> {
    let mut c = sess.conn.lock().await;
    let servers = specs(servers);
    if !servers.is_empty() {
        c.call::<Ack>(Action::McpServersAdd(params::McpServersAdd { servers }))
            .await
            .map_err(rpc)?;
    }
    let listed: McpServers = c
        .call(Action::McpServersList(params::NoParams {}))
        .await
        .map_err(rpc)?;
    if !listed
        .servers
        .iter()
        .any(|s| !s.needs_consent && s.error.is_none())
    {
        return Ok(());
    }
    drop(c);
    let (sess, cx) = (sess.clone(), cx.clone());
    tokio::spawn(async move {
        let prompts = {
            let mut c = sess.conn.lock().await;
            c.call::<McpPrompts>(Action::McpPromptsList(params::McpPromptsList::default()))
                .await
        };
        let Ok(prompts) = prompts else { return };
        let mut list = base;
        for p in &prompts.prompts {
            let hint: Vec<String> = p
                .arguments
                .iter()
                .map(|a| format!("{}=…", a.name))
                .collect();
            let mut cmd = AvailableCommand::new(
                format!("mcp:{}:{}", p.server, p.name),
                p.description
                    .clone()
                    .unwrap_or_else(|| format!("MCP prompt of {}", p.server)),
            );
            if !hint.is_empty() {
                cmd = cmd.input(Some(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint.join(" ")),
                )));
            }
            list.push(cmd);
        }
        let _ = cx.send_notification(SessionNotification::new(
            sess.id.clone(),
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(list)),
        ));
    });
    Ok(())
}

/// A prompt's text `/mcp:SERVER:PROMPT name=value …` rendered by its server (its
/// embedded resources attached); `None` when the text is no such command.
pub(super) async fn render(c: &mut Client, text: &str) -> Result<Option<String>, RpcError> {
    let Some(line) = crate::front::mcp_line::parse_prompt_line(text) else {
        return Ok(None);
    };
    let line = line.map_err(invalid)?;
    let r: McpPrompt = c
        .call(Action::McpPromptGet(params::McpPromptGet {
            server: NonEmpty(line.server),
            name: NonEmpty(line.name),
            arguments: line.arguments,
        }))
        .await
        .map_err(rpc)?;
    Ok(Some(r.text))
}

/// Attaches the resource at `uri` when a server of the session lists it; whether one
/// did. Errors: the listing server's failure to read it.
pub(super) async fn attach_link(c: &mut Client, uri: &str) -> Result<bool, RpcError> {
    let Ok(listed) = c
        .call::<McpServers>(Action::McpServersList(params::NoParams {}))
        .await
    else {
        return Ok(false);
    };
    for s in listed
        .servers
        .iter()
        .filter(|s| !s.needs_consent && s.error.is_none())
    {
        let server = NonEmpty(s.name.clone());
        let Ok(r) = c
            .call::<McpResources>(Action::McpResourcesList(params::McpServerRef {
                server: server.clone(),
            }))
            .await
        else {
            continue;
        };
        if r.resources.iter().any(|r| r.uri == uri) {
            c.call::<McpAttached>(Action::McpResourceAttach(params::McpResourceAttach {
                server,
                uri: NonEmpty(uri.to_owned()),
            }))
            .await
            .map_err(rpc)?;
            return Ok(true);
        }
    }
    Ok(false)
}
