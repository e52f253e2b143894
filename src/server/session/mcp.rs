//! MCP handlers (docs/PROTOCOL.md "MCP resources and prompts"): the session's servers,
//! their resources and prompts, and a read resource stored as an attachment. Reads run
//! off the request loop (a server may take its whole timeout); what they bring back
//! is stored by the loop ([`McpDone`]), which alone changes chat state.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::mcp_state::{McpDone, Read};
use super::*;
use crate::chat::model::AttachKind;
use crate::config::mcp::{Consents, project_servers};
use crate::context::{self, attach::Attached};
use crate::mcp::{Contents, Origin, Pool};
use crate::protocol::params;
use crate::protocol::replies::{
    Ack, Deferred, McpAttached, McpPrompt, McpPrompts, McpResources, McpServers,
};
use crate::text::invisible;

impl Session {
    /// The pool for the current project, built anew when the project changed.
    fn mcp_pool(&mut self) -> Arc<Pool> {
        let root = if self.global_only {
            None
        } else {
            self.root.clone()
        };
        if let Some(pool) = &self.mcp.pool
            && self.mcp.built_for == root
        {
            return pool.clone();
        }
        let pool = Pool::new();
        pool.add(&self.config.mcp_servers, Origin::User, true);
        self.mcp.config_error = None;
        if let Some(root) = root.as_deref() {
            match project_servers(root) {
                Ok(servers) => {
                    let allowed = self
                        .dirs
                        .as_ref()
                        .is_some_and(|d| Consents::load(&d.state).allows(root, &servers));
                    pool.add(&servers, Origin::Project, allowed);
                }
                Err(e) => self.mcp.config_error = Some(e.message),
            }
        }
        pool.add(&self.mcp.client, Origin::Client, true);
        let pool = Arc::new(pool);
        self.mcp.pool = Some(pool.clone());
        self.mcp.built_for = root;
        pool
    }

    pub(super) fn mcp_servers_list(&mut self, _: params::NoParams) -> Result<McpServers> {
        let servers = self.mcp_pool().servers();
        Ok(McpServers {
            consent_needed: servers.iter().any(|s| s.needs_consent),
            servers,
            config_error: self.mcp.config_error.clone(),
        })
    }

    pub(super) fn mcp_consent(&mut self, args: params::McpConsent) -> Result<Ack> {
        let root = self.root()?.to_path_buf();
        let servers = project_servers(&root)?;
        Consents::set(&self.dirs()?.state, &root, &servers, args.allow)?;
        // Dropping the pool stops its servers; the next use builds it with the answer.
        self.mcp.pool = None;
        Ok(Ack {})
    }

    pub(super) fn mcp_servers_add(&mut self, args: params::McpServersAdd) -> Result<Ack> {
        if let Some(pool) = &self.mcp.pool {
            pool.add(&args.servers, Origin::Client, true);
        }
        self.mcp.client.extend(args.servers);
        Ok(Ack {})
    }

    pub(super) fn mcp_resources_list(
        &mut self,
        args: params::McpServerRef,
        call: &Call<'_>,
    ) -> Result<Deferred> {
        let pool = self.mcp_pool();
        let outbox = call.ctx.outbox.clone();
        let rid = call.request_id.map(str::to_owned);
        let server = args.server.0;
        tokio::spawn(async move {
            match pool.resources(&server).await {
                Ok((resources, templates)) => outbox.emit(
                    &McpResources {
                        server,
                        resources,
                        templates,
                    },
                    rid.as_deref(),
                ),
                Err(e) => outbox.send_error(&e, rid.as_deref()),
            }
        });
        Ok(Deferred)
    }

    pub(super) fn mcp_prompts_list(
        &mut self,
        args: params::McpPromptsList,
        call: &Call<'_>,
    ) -> Result<Deferred> {
        let pool = self.mcp_pool();
        let outbox = call.ctx.outbox.clone();
        let rid = call.request_id.map(str::to_owned);
        let one = args.server.map(|s| s.0);
        tokio::spawn(async move {
            let reply = match one {
                Some(server) => match pool.prompts(&server).await {
                    Ok(prompts) => McpPrompts {
                        prompts,
                        errors: Vec::new(),
                    },
                    Err(e) => return outbox.send_error(&e, rid.as_deref()),
                },
                None => {
                    let (mut prompts, mut errors) = (Vec::new(), Vec::new());
                    let names = pool.servers().into_iter();
                    for s in names.filter(|s| !s.needs_consent && s.error.is_none()) {
                        match pool.prompts(&s.name).await {
                            Ok(p) => prompts.extend(p),
                            Err(e) => errors.push(e.message),
                        }
                    }
                    McpPrompts { prompts, errors }
                }
            };
            outbox.emit(&reply, rid.as_deref());
        });
        Ok(Deferred)
    }

    /// The active chat's key (reads bring their contents back to this chat).
    fn mcp_chat(&self) -> Result<ChatKey> {
        let a = self.active()?;
        Ok(chat_key(&a.store, &a.chat.id))
    }

    pub(super) fn mcp_resource_attach(
        &mut self,
        args: params::McpResourceAttach,
        call: &Call<'_>,
    ) -> Result<Deferred> {
        let pool = self.mcp_pool();
        let (server, uri) = (args.server.0, args.uri.0);
        self.mcp_deferred(call, server.clone(), async move {
            pool.read(&server, &uri)
                .await
                .map(|(contents, user_only)| Read::Resource {
                    contents,
                    user_only,
                })
        })
    }

    /// Runs `read` (a call to `server`) off the request loop and hands what it brought
    /// back to the loop as [`McpDone`], for the active chat; the request's reply is
    /// [`Deferred`] until then. Errors: no active chat.
    fn mcp_deferred(
        &self,
        call: &Call<'_>,
        server: String,
        read: impl std::future::Future<Output = Result<Read>> + Send + 'static,
    ) -> Result<Deferred> {
        let chat = self.mcp_chat()?;
        let background = call.ctx.background.clone();
        let request_id = call.request_id.map(str::to_owned);
        tokio::spawn(async move {
            let done = McpDone {
                chat,
                request_id,
                server,
                what: read.await,
            };
            let _ = background.send(BackgroundResult::Mcp(Box::new(done)));
        });
        Ok(Deferred)
    }

    pub(super) fn mcp_prompt_get(
        &mut self,
        args: params::McpPromptGet,
        call: &Call<'_>,
    ) -> Result<Deferred> {
        let pool = self.mcp_pool();
        let (server, name) = (args.server.0, args.name.0);
        self.mcp_deferred(call, server.clone(), async move {
            pool.prompt(&server, &name, args.arguments)
                .await
                .map(Read::Prompt)
        })
    }

    /// Stores what a read brought back in its chat and answers its request.
    pub(super) fn finish_mcp(&mut self, done: McpDone, ctx: &Ctx) -> Flow {
        let rid = done.request_id.as_deref();
        match self.store_mcp(done.chat, &done.server, done.what) {
            Ok(Stored::Resource(reply)) => ctx.outbox.emit(&reply, rid),
            Ok(Stored::Prompt(reply)) => ctx.outbox.emit(&reply, rid),
            Err(e) => ctx.outbox.send_error(&e, rid),
        }
        Flow::Continue
    }

    fn store_mcp(&mut self, chat: ChatKey, server: &str, what: Result<Read>) -> Result<Stored> {
        let what = what?;
        if self.mcp_chat().ok() != Some(chat) {
            return Err(Error::invalid(
                "The active chat changed while the MCP server answered; nothing was attached",
            ));
        }
        match what {
            Read::Resource {
                contents,
                user_only,
            } => {
                let mut reply = McpAttached {
                    paths: Vec::new(),
                    bytes: 0,
                    truncated: false,
                    user_only,
                    invisible_warnings: Vec::new(),
                };
                for c in contents {
                    let found = match &c {
                        Contents::Text { text, .. } => invisible::find(text, usize::MAX),
                        Contents::Image { .. } => Vec::new(),
                    };
                    let done = self.attach_contents(server, c, user_only)?;
                    let named = invisible::warnings_for(&done.path, &found, |l| l);
                    reply.invisible_warnings.extend(named);
                    reply.paths.push(done.path);
                    reply.bytes += done.bytes;
                    reply.truncated |= done.truncated;
                }
                Ok(Stored::Resource(reply))
            }
            Read::Prompt(rendered) => {
                let mut attached = Vec::new();
                let mut skipped = rendered.skipped;
                for c in rendered.resources {
                    match self.attach_contents(server, c, false) {
                        Ok(done) => attached.push(done.path),
                        Err(e) => skipped.push(e.message),
                    }
                }
                Ok(Stored::Prompt(McpPrompt {
                    text: rendered.text,
                    attached,
                    skipped,
                }))
            }
        }
    }

    /// Stores one content of `server`: a text as an `mcp_resource` attachment named
    /// `{server}:{uri}` (capped like any attachment), an image by the image rules.
    fn attach_contents(&mut self, server: &str, c: Contents, user_only: bool) -> Result<Attached> {
        match c {
            Contents::Text { uri, mime, text } => {
                let mut meta = Map::new();
                meta.insert("server".into(), json!(server));
                meta.insert("uri".into(), json!(uri));
                meta.insert("mime".into(), json!(mime));
                if user_only {
                    meta.insert("audience".into(), Value::from("user"));
                }
                let name = format!("{server}:{uri}");
                self.mutate(|chat, files, _| {
                    context::attach::attach(
                        chat,
                        files,
                        AttachKind::McpResource,
                        &name,
                        &text,
                        Some(meta),
                    )
                })
            }
            Contents::Image { uri, bytes, .. } => {
                let label = format!("mcp:{server}:{uri}");
                let mut meta = Map::new();
                meta.insert("server".into(), json!(server));
                meta.insert("uri".into(), json!(uri));
                if user_only {
                    meta.insert("audience".into(), Value::from("user"));
                }
                self.mutate(|chat, files, _| {
                    context::image::add_with(chat, files, &label, &bytes, meta)
                })
            }
        }
    }
}

enum Stored {
    Resource(McpAttached),
    Prompt(McpPrompt),
}
