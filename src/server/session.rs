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
use crate::protocol::params::NoParams;
use crate::protocol::replies::{Ack, Version};
use crate::protocol::{Encoded, Request};
use crate::turn::complete::system_message;
use crate::turn::stream::TurnOutcome;

mod archive;
mod budget;
mod chats;
mod complete;
mod config_watch;
mod edit_details;
mod estimate;
mod expected;
mod files;
mod fork;
mod gauge;
mod mcp;
mod mcp_state;
mod models;
mod path_index;
mod project;
mod queue;
mod queue_state;
mod read_edits;
mod review;
mod route;
mod send;
mod send_notices;
mod send_scans;
mod table;
mod timeouts;
mod tokens;
mod trace;
mod view;

pub use mcp_state::McpDone;
use path_index::PathIndex;

/// The chat this process drives (its lock is in `Session::locks`).
struct Active {
    store: ChatStore,
    chat: Chat,
    /// The whole-file paths in context, for `context_add`'s duplicate check.
    paths: PathIndex,
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

/// What a handler that answers later (a `send` stream, a model list being fetched)
/// needs: where to send its messages, and the request id they must carry.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The outbox and the channel for background results.
    pub ctx: &'a Ctx,
    /// The request's id, echoed on every message of the answer.
    pub request_id: Option<&'a str>,
}

/// A turn that is still streaming.
struct InFlight {
    chat: ChatKey,
    cancel: tokio_util::sync::CancellationToken,
    /// Cancelled because stdin ended, not by the user's `cancel`: the saved answer
    /// says so instead of "aborted by user".
    closed_by_exit: bool,
    /// While its file calls are planned off the loop: the answer without its calls,
    /// saved as it is when bb7 closes before the plan comes back.
    planning: Option<Box<Planning>>,
}

/// A turn's answer without its tool calls and blocks (its request body is shared):
/// what saving the answer needs when its plan never comes back.
struct Planning {
    first: TurnOutcome,
    repair: Option<TurnOutcome>,
}

/// Results of background work, handled by the server loop in arrival order.
pub enum BackgroundResult {
    /// A model turn ended (completed, failed or cancelled).
    Turn(Box<TurnOutcome>),
    /// A hidden repair round ended; `first` is the turn it repairs.
    Repair {
        /// The original turn.
        first: Box<TurnOutcome>,
        /// The repair turn.
        repair: Box<TurnOutcome>,
    },
    /// A turn's file calls were planned (off the request loop).
    Planned(Box<PlannedTurn>),
    /// A title was generated for a chat.
    Title {
        /// The chat.
        chat: ChatKey,
        /// The new name.
        title: String,
        /// The `send` or `generate_title` that asked for it (a failure to save the
        /// name is reported with it).
        request_id: Option<String>,
    },
    /// An MCP server answered a read (`mcp_resource_attach`, `mcp_prompt_get`).
    Mcp(Box<McpDone>),
}

/// A turn whose file calls were planned off the request loop, on its way back to it.
pub struct PlannedTurn {
    /// The visible response.
    pub first: Box<TurnOutcome>,
    /// The hidden repair round, if one ran.
    pub repair: Option<Box<TurnOutcome>>,
    /// The plan of the calls to apply (see `turn::complete::Ended::calls_to_plan`),
    /// or the internal error planning met.
    pub plan: Result<crate::edit::Plan>,
    /// For a local attempt of a `hybrid_auto` turn with `hybrid_validate_command`:
    /// what the command said about the plan's files (run with the plan, off the loop).
    pub validation: Option<crate::project::scratch::Validation>,
}

/// All state of one bb7 process.
pub struct Session {
    dirs: Option<UserDirs>,
    config: Config,
    config_error: Option<String>,
    /// `config.json`'s modification time and size when `config_watch` last read it
    /// (`None` before its first request: the config is then read once more).
    config_stamp: Option<(std::time::SystemTime, u64)>,
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
    in_flight: HashMap<String, InFlight>,
    /// The model API client, built on first use from the config.
    provider: Option<Arc<dyn Provider>>,
    /// The model API client being built off the request path since `init`
    /// ([`Session::warm_provider`]).
    warming: Option<std::thread::JoinHandle<Result<Arc<dyn Provider>>>>,
    /// The `local` provider's client, built on first use.
    local_provider: Option<Arc<dyn Provider>>,
    /// The `local` provider's context window as its server reports it, asked once
    /// when its client is built and `context_window` is not configured.
    local_window: Arc<std::sync::Mutex<Option<u64>>>,
    /// Approvals and clarifications that running turns wait for.
    interactions: crate::turn::stream::Interactions,
    /// Set at shutdown or end of input: no turn starts another round or attempt.
    closing: bool,
    /// The laid-out context part of the last `estimate_tokens`, reused while nothing
    /// it was made from changed.
    estimates: Arc<estimate::LayoutCache>,
    /// The event trace: the appender, and whether a client follows it on stdout.
    tracer: crate::protocol::trace::Tracer,
    /// The writer's outbox, kept from the first request, for trace events of
    /// handlers that answer at once (applies, rollbacks).
    outbox: Option<Outbox>,
    /// Sends queued while their chat streams (`queue.rs`).
    queues: queue_state::Queues,
    /// The active chat was opened without its lock (`chat_select` with `read_only`):
    /// only actions that read it are served.
    read_only: bool,
    /// The MCP servers, started on first use and stopped with the session.
    mcp: mcp_state::McpState,
    /// Chats a client of this process set to `hybrid_auto` (`save_chat_settings`):
    /// with the config's `agent_mode`, the only ways the validation command runs, so a
    /// planted chat file never makes bb7 run it (docs/ARCHITECTURE.md, invariant 17).
    hybrid_chosen: std::collections::HashSet<ChatKey>,
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
            config_stamp: None,
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
            warming: None,
            local_provider: None,
            local_window: Default::default(),
            interactions: Default::default(),
            closing: false,
            estimates: Default::default(),
            tracer: Default::default(),
            outbox: None,
            queues: Default::default(),
            read_only: false,
            mcp: Default::default(),
            hybrid_chosen: Default::default(),
        }
    }

    /// Handles one request and returns the reply message (without `request_id`), or
    /// `None` when the reply comes later from background work (a `send` stream).
    /// Errors: the request's parameters ([`Action::from_request`]) or its handler's.
    pub fn handle(&mut self, req: &Request, ctx: &Ctx) -> Result<(Option<Encoded>, Flow)> {
        if self.outbox.is_none() {
            self.outbox = Some(ctx.outbox.clone());
        }
        let action = Action::from_request(req)?;
        self.reload_config_if_changed();
        if self.read_only && !allowed_read_only(action.name()) {
            let id = self
                .active
                .as_ref()
                .map(|a| a.chat.id.as_str())
                .unwrap_or("");
            return Err(Error::new(
                ErrorCode::Locked,
                format!(
                    "Chat {id} is open read-only here (another process holds it); {} \
                     needs the chat's holder",
                    action.name()
                ),
            ));
        }
        let flow = match action {
            Action::Shutdown(_) => Flow::Shutdown,
            _ => Flow::Continue,
        };
        let call = Call {
            ctx,
            request_id: req.request_id.as_deref(),
        };
        let traced = self.trace_start(&action);
        let reply = self.dispatch(action, &call);
        if let Some(t) = traced {
            self.trace_end(t, &reply);
        }
        Ok((reply?, flow))
    }

    /// The active chat and its folder, for the holder socket (`server::guests`);
    /// `None` when no chat is held (one opened read-only, or taken over by another
    /// process since, is not).
    pub fn active_chat(&self) -> Option<(ChatKey, PathBuf)> {
        if self.read_only {
            return None;
        }
        let a = self.active.as_ref()?;
        let key = chat_key(&a.store, &a.chat.id);
        // A chat taken over by another process is that one's to serve.
        self.locks.get(&key)?.check_still_held().ok()?;
        let dir = a.store.chat_dir(&a.chat.id).ok()?;
        Some((key, dir))
    }

    /// Whether the turn of `send` request `request_id` still runs.
    pub fn is_in_flight(&self, request_id: &str) -> bool {
        self.in_flight.contains_key(request_id)
    }

    /// Cancels the turns whose request ids `owned` says belong to a client that left
    /// (a guest that closed its connection); each saves what it has, as on `cancel`.
    pub fn cancel_where(&mut self, owned: impl Fn(&str) -> bool) {
        for (id, f) in &self.in_flight {
            if owned(id) {
                f.cancel.cancel();
            }
        }
    }

    // ----- session ------------------------------------------------------------------

    fn ping(&mut self, _: NoParams) -> Result<Ack> {
        Ok(Ack {})
    }

    fn version(&mut self, _: NoParams) -> Result<Version<'static>> {
        Ok(Version {
            version: env!("CARGO_PKG_VERSION").into(),
        })
    }

    /// `ok`; the server loop exits once it is written ([`Flow::Shutdown`]).
    fn shutdown(&mut self, _: NoParams) -> Result<Ack> {
        Ok(Ack {})
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
        if self.is_active(&store, id) && !self.read_only {
            let key = chat_key(&store, id);
            match self.locks.get(&key).map(ChatLock::check_still_held) {
                Some(Err(_)) => {
                    // Taken over since: open it anew under a lock of its own.
                    self.locks.remove(&key);
                    self.active = None;
                }
                _ => return Ok(()),
            }
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
        self.locks.insert(key, lock);
        self.activate_open(store, chat)
    }

    /// Makes chat `id` the active chat without its lock, as it is on disk (nothing
    /// half-done is finished: that is its holder's work), for reading only; the index
    /// is not changed.
    fn activate_read_only(&mut self, store: ChatStore, id: &str) -> Result<()> {
        if !store.exists(id) {
            return Err(Error::chat_not_found());
        }
        let chat = store.load(id)?;
        self.deactivate();
        self.active = Some(Active {
            store,
            chat,
            paths: PathIndex::default(),
        });
        self.read_only = true;
        Ok(())
    }

    /// Makes `chat`, opened under the lock this session holds in `locks`, the active
    /// chat: recorded in the index, the previous one let go.
    fn activate_open(&mut self, store: ChatStore, chat: Chat) -> Result<()> {
        let key = chat_key(&store, &chat.id);
        let lock = self.locks.remove(&key);
        if let Err(e) = self.record_active(&store, &chat.id) {
            if let Some(lock) = lock {
                self.keep_or_release(key, lock);
            }
            return Err(e);
        }
        self.deactivate();
        if let Some(lock) = lock {
            self.locks.insert(key, lock);
        }
        self.active = Some(Active {
            store,
            chat,
            paths: PathIndex::default(),
        });
        self.read_only = false;
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
    /// Folds the active chat's context journal into its `chat.json`
    /// (`chat::journal`), so the next reader (the reference BB-7 too) finds one file:
    /// when the chat is let go and at the end of input. A failure leaves the journal,
    /// which the next open replays. A chat opened without its lock (`read_only`), or
    /// taken over by another process since (invariant 7), is never saved: its journal
    /// belongs to the process that holds it.
    pub fn fold_journal(&self) {
        if !self.read_only
            && let Some(a) = &self.active
            && a.store.has_journal(&a.chat.id)
            && self.check_active_held().is_ok()
        {
            let _ = a.store.save(&a.chat);
        }
    }

    /// Adds of the active chat journaled and not yet folded into its `chat.json`.
    pub fn journal_adds(&self) -> usize {
        self.active
            .as_ref()
            .map_or(0, |a| a.store.journal_adds(&a.chat.id))
    }

    fn deactivate(&mut self) {
        self.fold_journal();
        self.read_only = false;
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
        // A chat taken over by another process is never saved over its messages
        // (invariant 7): the save is refused and says so.
        if let Some(lock) = self.locks.get(&chat_key(store, id)) {
            lock.check_still_held()?;
        }
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

    /// Errors (`locked`) when the active chat was taken over by another process since
    /// this one opened it (invariant 7): a change that is journaled instead of saved
    /// (`context_add`) checks it as [`Session::update_chat`] does before a save.
    pub(super) fn check_active_held(&self) -> Result<()> {
        if let Some(a) = &self.active
            && let Some(lock) = self.locks.get(&chat_key(&a.store, &a.chat.id))
        {
            lock.check_still_held()?;
        }
        Ok(())
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

/// Whether action `name` may run while the active chat is open read-only: actions
/// that read, and those that leave it (another chat, a new one, another project, a
/// fork or a copy of its context, which read the viewed chat and make a new one).
fn allowed_read_only(name: &str) -> bool {
    use super::guests::{Policy, policy};
    matches!(policy(name), Policy::Read | Policy::Leave)
        || matches!(
            name,
            "init"
                | "bb7_init"
                | "chat_new"
                | "chat_force_unlock"
                | "chat_select"
                | "fork_chat"
                | "chat_new_with_context"
        )
}

fn chat_key(store: &ChatStore, id: &str) -> ChatKey {
    ChatKey {
        global: store.global,
        id: id.to_owned(),
    }
}
