//! `bb7 acp`: bb7 as an Agent Client Protocol agent (ACP v1, JSON-RPC 2.0 over
//! stdin/stdout, <https://agentclientprotocol.com>). The official crate
//! `agent-client-protocol` owns the wire: the schema's types, the JSON-RPC framing and
//! its errors (-32700 for a line that is not JSON, -32600 for an invalid request,
//! -32601 for an unknown method, -32602 for bad params).
//!
//! Each ACP session is a bb7 chat driven by its own in-process stdio server
//! ([`crate::front::Client`]), so the ACP front has no session or turn logic of its own:
//! every ACP method becomes the bb7 actions docs/PROTOCOL.md ("bb7 acp") maps it to,
//! and every guarantee of those actions holds here too. `state.rs` is what the
//! handlers share; `session.rs` opens a session (the project, `.bb7/` made on first
//! use, the chat, its config options); `prompt.rs` runs a prompt (the stream, cancel),
//! with `context.rs` for the files it brings and `commands.rs` for slash commands;
//! `changes.rs` turns the files a turn wrote into reviewed tool calls and applies the
//! allowed ones; `replay.rs` replays a loaded chat and lists the project's chats.

mod auth;
mod blocks;
mod changes;
mod commands;
mod context;
mod export;
mod fallback;
mod gather;
mod images;
mod invisible;
mod mcp;
mod patch;
mod prompt;
mod replay;
mod rewrite;
mod session;
mod state;
mod state_warnings;
mod stdio;

use std::sync::Arc;

use agent_client_protocol::Agent;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CloseSessionRequest, DeleteSessionRequest, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LoadSessionRequest, NewSessionRequest,
    PromptCapabilities, PromptRequest, ResumeSessionRequest, SessionCapabilities,
    SessionCloseCapabilities, SessionDeleteCapabilities, SessionListCapabilities,
    SessionResumeCapabilities, SetSessionConfigOptionRequest,
};

use state::Shared;

pub use auth::login;

/// The agent's name in `initialize`'s `agentInfo`.
pub const AGENT_NAME: &str = "bb7";

/// The `initialize` answer: protocol v1 (the one bb7 speaks, whatever the client
/// asked for), sessions that load and list, embedded context and images, and the authentication
/// method `caps` allow (`auth.rs`).
fn initialize(caps: &agent_client_protocol::v1::schema::ClientCapabilities) -> InitializeResponse {
    InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .auth_methods(auth::methods(caps))
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
                // MCP servers for their resources and prompts (acp/mcp.rs).
                .mcp_capabilities(
                    agent_client_protocol::v1::schema::McpCapabilities::new().http(true),
                )
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .delete(SessionDeleteCapabilities::new()),
                ),
        )
        .agent_info(Implementation::new(AGENT_NAME, env!("CARGO_PKG_VERSION")).title("bb7"))
}

/// Serves ACP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio() -> Result<(), String> {
    let shared = Arc::new(Shared::default());
    let [s1, s2, s3, s4, s5, s6, s7, s8, s9, s10] = std::array::from_fn(|_| shared.clone());
    Agent
        .v1()
        .name("bb7")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                if let Ok(mut caps) = s1.caps.lock() {
                    *caps = req.client_capabilities.clone();
                }
                responder.respond(initialize(&req.client_capabilities))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx| {
                let st = s2.clone();
                tokio::spawn(async move {
                    let r = match auth::ready() {
                        Ok(()) => session::new_session(&st, req, &cx).await,
                        Err(why) => Err(auth::required(why)),
                    };
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx| {
                let st = s3.clone();
                tokio::spawn(async move {
                    let r = session::load_session(&st, req, &cx).await;
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, _cx| {
                let st = s4.clone();
                tokio::spawn(async move {
                    let r = replay::list_sessions(&st, req).await;
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx| {
                let st = s5.clone();
                // Read here, in the order messages arrive: a cancel sent after this
                // prompt cancels it, also while it waits for the one before it.
                let cancels = prompt::cancels(&st, &req).await;
                tokio::spawn(async move {
                    let r = prompt::prompt(&st, req, cancels, &cx).await;
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest, responder, _cx| {
                let st = s6.clone();
                tokio::spawn(async move {
                    let r = session::set_config_option(&st, req).await;
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest, responder, cx| {
                let st = s8.clone();
                tokio::spawn(async move {
                    let r = session::resume_session(&st, req, &cx).await;
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CloseSessionRequest, responder, _cx| {
                let st = s9.clone();
                tokio::spawn(async move {
                    let r = session::close_session(&st, req).await;
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: DeleteSessionRequest, responder, _cx| {
                let st = s10.clone();
                tokio::spawn(async move {
                    let r = session::delete_session(&st, req).await;
                    let _ = responder.respond_with_result(r);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: AuthenticateRequest, responder, _cx| {
                responder.respond_with_result(
                    auth::authenticate(&req.method_id.0).map(|()| AuthenticateResponse::new()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                // Answered by the prompt it stops (`stopReason: cancelled`).
                if let Ok(s) = s7.session(&n.session_id.0).await {
                    s.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(stdio::transport())
        .await
        .map_err(|e| e.message)
}
