//! The state one bb7 process owns (project, active chat and its lock, config) and the
//! handlers that turn requests into changes of it. Handlers run one at a time, in
//! arrival order (invariant 8 in docs/ARCHITECTURE.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::chat::ChatKey;
use crate::chat::model::Chat;
use crate::chat::store::ChatStore;
use crate::config::{Config, GlobalState};
use crate::context::ChatFiles;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::llm::Provider;
use crate::project::lock::ChatLock;
use crate::project::paths::{Location, locate};
use crate::project::{Project, UserDirs};
use crate::protocol::action::Action;
use crate::protocol::outbox::Outbox;
use crate::protocol::replies::Reply;
use crate::protocol::{Encoded, Request, ok};
use crate::turn::complete::system_message;

mod chats;
mod complete;
mod files;
mod fork;
mod models;
mod project;
mod review;
mod send;
mod tokens;

pub use send::BackgroundResult;

/// The chat this process drives (its lock is in `Session::locks`).
struct Active {
    store: ChatStore,
    chat: Chat,
}

/// What the server loop should do after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep serving.
    Continue,
    /// Exit with status 0 once the reply is written.
    Shutdown,
}

/// What handlers may use beyond the session: the outbox for messages sent later, and
/// the channel that brings background results back to the server loop.
#[derive(Clone)]
pub struct Ctx {
    /// Where messages go.
    pub outbox: Outbox,
    /// Where background work reports.
    pub background: tokio::sync::mpsc::UnboundedSender<BackgroundResult>,
}

/// All state of one bb7 process.
pub struct Session {
    dirs: Option<UserDirs>,
    config: Config,
    config_error: Option<String>,
    /// Canonical project root from `init`/`bb7_init`; in global-only mode a
    /// directory that is never created (see [`Session::global_only`]).
    root: Option<PathBuf>,
    /// `init` without a project root: only global chats, every file external.
    global_only: bool,
    /// Set when the root has `.bb7/`.
    project: Option<Project>,
    active: Option<Active>,
    /// Locks of the chats this process holds: the active one and any still streaming.
    locks: HashMap<ChatKey, ChatLock>,
    /// Turns in flight by request id.
    in_flight: HashMap<String, send::InFlight>,
    /// The model API client, built on first use from the config.
    provider: Option<Arc<dyn Provider>>,
    /// Approvals and clarifications that running turns wait for.
    interactions: crate::turn::stream::Interactions,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A session before `init`. User directories come from the environment; when they
    /// cannot be found, actions that need them fail with a clear error.
    pub fn new() -> Session {
        let dirs = UserDirs::from_env().ok();
        let (config, config_error) = match dirs.as_ref().map(|d| Config::load(&d.config)) {
            Some(Ok(c)) => (c, None),
            Some(Err(e)) => (Config::default(), Some(e.message)),
            None => (Config::default(), None),
        };
        crate::project::flush_queue::set_synchronous(config.sync_writes);
        Session {
            dirs,
            config,
            config_error,
            root: None,
            global_only: false,
            project: None,
            active: None,
            locks: HashMap::new(),
            in_flight: HashMap::new(),
            provider: None,
            interactions: Default::default(),
        }
    }

    /// Handles one request and returns the reply message (without `request_id`), or
    /// `None` when the reply comes later from background work (a `send` stream).
    /// Errors: the request's parameters ([`Action::from_request`]) or its handler's.
    pub fn handle(&mut self, req: &Request, ctx: &Ctx) -> Result<(Option<Encoded>, Flow)> {
        let action = Action::from_request(req)?;
        self.dispatch(action, req.request_id.as_deref(), ctx)
    }

    /// The dispatch table: one handler per action.
    fn dispatch(
        &mut self,
        action: Action,
        request_id: Option<&str>,
        ctx: &Ctx,
    ) -> Result<(Option<Encoded>, Flow)> {
        let later = |r: Result<()>| r.map(|()| (None, Flow::Continue));
        let reply = match action {
            Action::Ping => ok(),
            Action::Version => Reply::Version {
                version: env!("CARGO_PKG_VERSION"),
            }
            .json()?,
            Action::Shutdown => return Ok((Some(ok()), Flow::Shutdown)),
            Action::Bb7Init(p) => self.bb7_init(p)?,
            Action::Init(p) => self.init(p)?,
            Action::GetCustomizationInfo => to_value(self.customization_info()?)?,
            Action::PrepareInstructions(p) => self.prepare_instructions(p)?,
            Action::ChatNew(p) => self.chat_new(p)?,
            Action::ChatList(p) => self.chat_list(p)?,
            Action::ChatSelect(p) => self.chat_select(p)?,
            Action::ChatGet => self.chat_get()?,
            Action::ChatActive => self.chat_active()?,
            Action::ChatRename(p) => self.chat_rename(p)?,
            Action::ChatDelete(p) => self.chat_delete(p)?,
            Action::ChatMove(p) => self.chat_move(p)?,
            Action::ChatForceUnlock(p) => self.chat_force_unlock(p)?,
            Action::SearchChats(p) => self.search_chats(p)?,
            Action::ChatEdit(p) => self.chat_edit(p)?,
            Action::ForkChat(p) => self.fork_chat(p)?,
            Action::ChatNewWithContext(p) => self.chat_new_with_context(p)?,
            Action::ChatPin(p) => self.chat_flag(p, "pinned")?,
            Action::ChatArchive(p) => self.chat_flag(p, "archived")?,
            Action::SaveDraft(p) => self.save_draft(p)?,
            Action::SaveChatSettings(p) => self.save_chat_settings(p)?,
            Action::AddSystemMessage(p) => self.add_system_message(p)?,
            Action::ContextAdd(p) => self.context_add(p)?,
            Action::ContextAddSection(p) => self.context_add_section(p)?,
            Action::ContextUpdate(p) => self.context_update(p)?,
            Action::SyncContext(p) => self.sync_context(p)?,
            Action::ContextRemove(p) => self.context_remove(p)?,
            Action::ContextRemoveSection(p) => self.context_remove_section(p)?,
            Action::ContextSetReadonly(p) => self.context_set_readonly(p)?,
            Action::ContextList => self.context_list()?,
            Action::GetContextFile(p) => self.get_context_file(p)?,
            Action::GetOutputFile(p) => self.get_output_file(p)?,
            Action::OutputDelete(p) => self.output_delete(p)?,
            Action::GetDiffPaths(p) => self.get_diff_paths(p)?,
            Action::DiffLocalDone(p) => self.diff_local_done(p)?,
            Action::GetFileStatuses(p) => self.get_file_statuses(p)?,
            Action::ApplyFile(p) => self.apply(p, false)?,
            Action::ApplyFileAs(p) => self.apply(p, true)?,
            Action::ReviewGet(p) => self.review_get(p)?,
            Action::ReviewApply(p) => self.review_apply(p)?,
            Action::CheckpointList(p) => self.checkpoint_list(p)?,
            Action::CheckpointGet(p) => self.checkpoint_get(p)?,
            Action::CheckpointDiff3(p) => self.checkpoint_diff3(p)?,
            Action::CheckpointRollback(p) => self.checkpoint_rollback(p)?,
            Action::Cancel(p) => self.cancel(p)?,
            Action::ToolApprove(p) => self.tool_approve(p)?,
            Action::Clarify(p) => self.clarify(p)?,
            Action::Send(p) => return later(self.send(p, request_id, ctx)),
            Action::GenerateTitle(p) => self.generate_title(p, ctx)?,
            Action::GetModels(p) => match self.get_models(p, request_id, ctx)? {
                Some(v) => v,
                None => return Ok((None, Flow::Continue)),
            },
            Action::GetBalance => return later(self.get_balance(request_id, ctx)),
            Action::EstimateTokens(p) => self.estimate_tokens(p)?,
            Action::EstimateTextTokens(p) => self.estimate_text_tokens(p)?,
        };
        Ok((Some(reply), Flow::Continue))
    }

    // ----- project and session -------------------------------------------------------

    fn dirs(&self) -> Result<&UserDirs> {
        self.dirs.as_ref().ok_or_else(|| {
            Error::new(
                ErrorCode::Io,
                "Cannot determine the home directory (set HOME)",
            )
        })
    }

    fn root(&self) -> Result<&Path> {
        self.root.as_deref().ok_or_else(Error::not_initialized)
    }

    // ----- chats ---------------------------------------------------------------------

    /// The store addressed by a request: global chats with `global: true` or when the
    /// project has no `.bb7/` (global-only mode), else the project's.
    fn store(&self, global: bool) -> Result<ChatStore> {
        self.root()?;
        match (&self.project, global) {
            (Some(p), false) => Ok(ChatStore::new(p.state_dir(), false)),
            _ => Ok(ChatStore::new(self.dirs()?.state.clone(), true)),
        }
    }

    fn active(&self) -> Result<&Active> {
        self.root()?;
        self.active.as_ref().ok_or_else(Error::no_active_chat)
    }

    fn is_active(&self, store: &ChatStore, id: &str) -> bool {
        self.active
            .as_ref()
            .is_some_and(|a| a.chat.id == id && a.store.global == store.global)
    }

    fn activate(&mut self, store: ChatStore, id: &str) -> Result<()> {
        if self.is_active(&store, id) {
            return Ok(());
        }
        let dir = store.chat_dir(id)?;
        if !store.exists(id) {
            return Err(Error::chat_not_found());
        }
        let key = chat_key(&store, id);
        let lock = match self.locks.remove(&key) {
            Some(held) => held,
            None => ChatLock::acquire(&dir)?,
        };
        // Finishes or discards what a crash left half-done (Durability 4).
        let loaded = crate::recovery::open_chat(&store, id);
        let chat = match loaded {
            Ok(c) => c,
            Err(e) => {
                self.keep_or_release(key, lock);
                return Err(e);
            }
        };
        self.record_active(&store, id)?;
        self.deactivate();
        self.locks.insert(key, lock);
        self.active = Some(Active { store, chat });
        Ok(())
    }

    /// Records chat `id` as the active one of its store and, in a project, which
    /// store it is in, so `init` in a new process restores a global chat too.
    fn record_active(&self, store: &ChatStore, id: &str) -> Result<()> {
        match &self.project {
            Some(p) if store.global => {
                store.set_active(Some(id))?;
                ChatStore::new(p.state_dir(), false).set_active_global(Some(id))
            }
            Some(_) => store.update_index(|idx| {
                idx.active_chat_id = Some(id.to_owned());
                idx.active_global_chat_id = None;
            }),
            None => store.set_active(Some(id)),
        }
    }

    /// Leaves the active chat; its lock is released unless a turn still streams in it.
    fn deactivate(&mut self) {
        if let Some(a) = self.active.take() {
            let key = chat_key(&a.store, &a.chat.id);
            if let Some(lock) = self.locks.remove(&key) {
                self.keep_or_release(key, lock);
            }
        }
    }

    fn keep_or_release(&mut self, key: ChatKey, lock: ChatLock) {
        if self.is_busy(&key) {
            self.locks.insert(key, lock);
        }
    }

    fn is_busy(&self, key: &ChatKey) -> bool {
        self.in_flight.values().any(|f| &f.chat == key)
    }

    fn ensure_not_busy(&self, store: &ChatStore, id: &str) -> Result<()> {
        if self.is_busy(&chat_key(store, id)) {
            return Err(Error::new(
                ErrorCode::Busy,
                "Another request is already in progress",
            ));
        }
        Ok(())
    }

    fn global_state(&self) -> GlobalState {
        self.dirs
            .as_ref()
            .map(|d| GlobalState::load(&d.state))
            .unwrap_or_default()
    }

    /// Runs `change` on chat `id` of `store`: on the active chat in memory, or on a
    /// loaded copy when the chat is not held by another process. Saved only when
    /// `change` succeeds, so a failure leaves the chat as it was.
    fn with_chat<R>(
        &mut self,
        store: &ChatStore,
        id: &str,
        change: impl FnOnce(&mut Chat, ChatFiles, &Path) -> Result<R>,
    ) -> Result<R> {
        self.ensure_not_busy(store, id)?;
        self.update_chat(store, id, change)
    }

    /// The one way a chat changes (invariant 12): `change` runs on a copy, the copy is
    /// saved, and only then replaces the active chat in memory. A chat that is not
    /// active is loaded under its lock: the one this process holds while the chat
    /// streams, else taken for the change. Errors: `Chat not found`, `locked`, and
    /// whatever `change` or the save returns (memory and disk then stay as they were).
    fn update_chat<R>(
        &mut self,
        store: &ChatStore,
        id: &str,
        change: impl FnOnce(&mut Chat, ChatFiles, &Path) -> Result<R>,
    ) -> Result<R> {
        let root = self.root()?.to_path_buf();
        if let Some(active) = self.active.as_mut()
            && active.chat.id == id
            && active.store.global == store.global
        {
            let mut chat = active.chat.clone();
            let r = change(&mut chat, ChatFiles::new(&active.store, id), &root)?;
            active.store.save(&chat)?;
            active.chat = chat;
            return Ok(r);
        }
        if !store.exists(id) {
            return Err(Error::chat_not_found());
        }
        let _lock = match self.locks.contains_key(&chat_key(store, id)) {
            true => None,
            false => Some(ChatLock::acquire(&store.chat_dir(id)?)?),
        };
        let mut chat = store.load(id)?;
        let r = change(&mut chat, ChatFiles::new(store, id), &root)?;
        store.save(&chat)?;
        Ok(r)
    }

    /// Runs `change` on a copy of the active chat and saves it; the in-memory chat is
    /// replaced only when both succeed.
    fn mutate<R>(
        &mut self,
        change: impl FnOnce(&mut Chat, ChatFiles, &Path) -> Result<R>,
    ) -> Result<R> {
        let active = self.active.as_ref().ok_or_else(Error::no_active_chat)?;
        let (store, id) = (active.store.clone(), active.chat.id.clone());
        self.update_chat(&store, &id, change)
    }

    /// The store holding chat `id`: the active chat's, else the project's, else global.
    fn find_store(&self, id: &str) -> Result<ChatStore> {
        if let Some(a) = &self.active
            && a.chat.id == id
        {
            return Ok(a.store.clone());
        }
        let project = self.store(false)?;
        if project.exists(id) {
            return Ok(project);
        }
        let global = self.store(true)?;
        if global.exists(id) {
            return Ok(global);
        }
        Err(Error::chat_not_found())
    }

    // ----- context and output --------------------------------------------------------

    /// Resolves a client path. In global-only mode there is no project for a
    /// relative path to be relative to, so only absolute paths (external files) are
    /// accepted.
    fn locate(&self, path: &str) -> Result<Location> {
        if self.global_only && !Path::new(path).is_absolute() {
            // No project: a relative path names a file under bb7's working directory
            // (the editor's), kept as an external, read-only file.
            let cwd = std::env::current_dir()
                .map_err(|e| Error::io("Cannot read the working directory", e))?;
            let abs = cwd.join(path);
            return Ok(locate(self.root()?, &abs.to_string_lossy())?);
        }
        Ok(locate(self.root()?, path)?)
    }
}

/// A reply struct as a message object.
fn to_value(reply: impl serde::Serialize) -> Result<Encoded> {
    Encoded::encode(&reply)
}

fn chat_key(store: &ChatStore, id: &str) -> ChatKey {
    ChatKey {
        global: store.global,
        id: id.to_owned(),
    }
}
