//! The state one bb7 process owns (project, active chat and its lock, config) and the
//! handlers that turn requests into changes of it. Handlers run one at a time, in
//! arrival order (DESIGN.md invariant 8).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::chat::ids;
use crate::chat::model::{Chat, ContextFile, Message, Part, SnapshotRef};
use crate::chat::store::ChatStore;
use crate::config::{self, Config, GlobalState};
use crate::context::{self, ChatFiles, find_file};
use crate::error::{Error, Result};
use crate::llm::Provider;
use crate::output;
use crate::project::fsutil::{read_text, read_text_opt, to_lf, write_atomic};
use crate::project::lock::ChatLock;
use crate::project::paths::{Location, locate, locate_in_project};
use crate::project::{self, Project, UserDirs};
use crate::prompt::instructions;
use crate::protocol::{Request, ok};
use crate::server::Outbox;
use crate::server::turn::ChatKey;

mod review;
mod turns;

pub use turns::Internal;

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
    /// Exit at once with this status (seed 001's hard guard on out-of-project writes).
    Exit(i32),
}

/// What handlers may use beyond the session: the outbox for messages sent later, and
/// the channel that brings background results back to the server loop.
#[derive(Clone)]
pub struct Ctx {
    /// Where messages go.
    pub outbox: Outbox,
    /// Where background work reports.
    pub internal: tokio::sync::mpsc::UnboundedSender<Internal>,
}

/// All state of one bb7 process.
pub struct Session {
    dirs: Option<UserDirs>,
    config: Config,
    config_error: Option<String>,
    /// Canonical project root from `init`/`bb7_init`.
    root: Option<PathBuf>,
    /// Set when the root has `.bb7/`.
    project: Option<Project>,
    active: Option<Active>,
    /// Locks of the chats this process holds: the active one and any still streaming.
    locks: HashMap<ChatKey, ChatLock>,
    /// Turns in flight by request id.
    in_flight: HashMap<String, turns::InFlight>,
    /// The model API client, built on first use from the config.
    provider: Option<Arc<dyn Provider>>,
    /// Approvals and clarifications that running turns wait for.
    interactions: crate::server::turn::Interactions,
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
        Session {
            dirs,
            config,
            config_error,
            root: None,
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
    pub fn handle(&mut self, req: &Request, ctx: &Ctx) -> Result<(Option<Value>, Flow)> {
        let reply = match req.action.as_str() {
            "ping" => ok(),
            "version" => json!({"type": "version", "version": env!("CARGO_PKG_VERSION")}),
            "shutdown" => return Ok((Some(ok()), Flow::Shutdown)),
            "bb7_init" => self.bb7_init(req)?,
            "init" => self.init(req)?,
            "get_customization_info" => self.customization_info()?,
            "prepare_instructions" => self.prepare_instructions(req)?,
            "chat_new" => self.chat_new(req)?,
            "chat_list" => self.chat_list(req)?,
            "chat_select" => self.chat_select(req)?,
            "chat_get" => self.chat_get()?,
            "chat_active" => self.chat_active()?,
            "chat_rename" => self.chat_rename(req)?,
            "chat_delete" => self.chat_delete(req)?,
            "chat_move" => self.chat_move(req)?,
            "chat_force_unlock" => self.chat_force_unlock(req)?,
            "search_chats" => self.search_chats(req)?,
            "chat_edit" => self.chat_edit(req)?,
            "fork_chat" => self.fork_chat(req)?,
            "chat_new_with_context" => self.chat_new_with_context(req)?,
            "chat_pin" => self.chat_flag(req, "pinned")?,
            "chat_archive" => self.chat_flag(req, "archived")?,
            "save_draft" => {
                let draft = req.str("draft")?.to_owned();
                self.mutate(|chat, _, _| {
                    chat.draft = draft;
                    Ok(())
                })?;
                ok()
            }
            "save_chat_settings" => self.save_chat_settings(req)?,
            "add_system_message" => {
                let text = req.str("message")?.to_owned();
                self.mutate(|chat, _, _| {
                    chat.messages.push(system_message(text));
                    Ok(())
                })?;
                ok()
            }
            "context_add" => self.context_add(req)?,
            "context_add_section" => self.context_add_section(req)?,
            "context_update" => {
                let path = req.non_empty_str("path")?;
                let content = req.str("content")?;
                let key = self.locate(path)?.key();
                self.mutate(|chat, files, _| context::update_file(chat, files, &key, content))?;
                ok()
            }
            "sync_context" => self.sync_context(req)?,
            "context_remove" => {
                let key = self.locate(req.non_empty_str("path")?)?.key();
                self.mutate(|chat, files, _| context::remove_file(chat, files, &key))?;
                ok()
            }
            "context_remove_section" => {
                let key = self.locate(req.non_empty_str("path")?)?.key();
                let (start, end) = (req.line_number("start_line")?, req.line_number("end_line")?);
                self.mutate(|chat, files, _| {
                    context::remove_section(chat, files, &key, start, end)
                })?;
                ok()
            }
            "context_set_readonly" => {
                let key = self.locate(req.non_empty_str("path")?)?.key();
                let readonly = req.bool("readonly")?;
                self.mutate(|chat, files, _| context::set_readonly(chat, files, &key, readonly))?;
                ok()
            }
            "context_list" => {
                let active = self.active()?;
                json!({"type": "context_list", "files": active.chat.context_files})
            }
            "get_context_file" => self.get_context_file(req)?,
            "get_output_file" => self.get_output_file(req)?,
            "output_delete" => {
                let path = req.non_empty_str("path")?.to_owned();
                self.mutate(|chat, files, root| output::reject(chat, files, root, &path))?;
                ok()
            }
            "get_diff_paths" => self.get_diff_paths(req)?,
            "diff_local_done" => {
                let path = req.non_empty_str("path")?.to_owned();
                let outcome = self.mutate(|chat, files, root| {
                    output::diff_local_done(chat, files, root, &path)
                })?;
                json!({"type": "ok", "outcome": outcome})
            }
            "get_file_statuses" => {
                let root = self.root()?.to_path_buf();
                let active = self.active()?;
                let files = ChatFiles::new(&active.store, &active.chat.id);
                let contents = req.bool_or("contents", true)?;
                let rows = output::statuses(&active.chat, files, &root, contents)?;
                json!({"type": "file_statuses", "files": rows})
            }
            "apply_file" | "apply_file_as" => self.apply(req)?,
            "review_get" => self.review_get(req)?,
            "review_apply" => self.review_apply(req)?,
            "checkpoint_list" => self.checkpoint_list(req)?,
            "checkpoint_get" => self.checkpoint_get(req)?,
            "checkpoint_diff3" => self.checkpoint_diff3(req)?,
            "checkpoint_rollback" => self.checkpoint_rollback(req)?,
            "cancel" => self.cancel(req)?,
            "tool_approve" => self.answer_client(req, "approval_id", "approved")?,
            "clarify" => self.answer_client(req, "question_id", "answer")?,
            "send" => return self.send(req, ctx).map(|()| (None, Flow::Continue)),
            "generate_title" => self.generate_title(req, ctx)?,
            "get_models" => match self.get_models(req, ctx)? {
                Some(v) => v,
                None => return Ok((None, Flow::Continue)),
            },
            "get_balance" => return self.get_balance(req, ctx).map(|()| (None, Flow::Continue)),
            "estimate_tokens" => self.estimate_tokens(req)?,
            "estimate_text_tokens" => self.estimate_text_tokens(req)?,
            other => return Err(Error::invalid(format!("Unknown action: {other}"))),
        };
        Ok((Some(reply), Flow::Continue))
    }

    // ----- project and session -------------------------------------------------------

    fn dirs(&self) -> Result<&UserDirs> {
        self.dirs
            .as_ref()
            .ok_or_else(|| Error::new("io", "Cannot determine the home directory (set HOME)"))
    }

    fn root(&self) -> Result<&Path> {
        self.root.as_deref().ok_or_else(Error::not_initialized)
    }

    fn bb7_init(&mut self, req: &Request) -> Result<Value> {
        let root = project::canonical_root(req.str("project_root")?)?;
        Project::create(&root)?;
        self.open_root(root);
        Ok(ok())
    }

    fn init(&mut self, req: &Request) -> Result<Value> {
        let root = project::canonical_root(req.str("project_root")?)?;
        if let Some(dirs) = &self.dirs {
            match Config::load(&dirs.config) {
                Ok(c) => {
                    self.config = c;
                    self.config_error = None;
                }
                Err(e) => self.config_error = Some(e.message),
            }
        }
        self.open_root(root);
        // Restore the chat that was active when this store was last used; a chat
        // held by another process simply stays inactive.
        if let Ok(store) = self.store(false)
            && let Some(id) = store.read_index().active_chat_id
            && store.exists(&id)
        {
            let _ = self.activate(store, &id);
        }
        let mut reply = json!({"type": "ok"});
        if self.project.is_none() {
            reply["global_only"] = json!(true);
        }
        if let Some(m) = self.config.default_model.as_ref().filter(|m| !m.is_empty()) {
            reply["default_model"] = json!(m);
        }
        if let Some(e) = &self.config_error {
            reply["config_error"] = json!(e);
        }
        Ok(reply)
    }

    fn open_root(&mut self, root: PathBuf) {
        self.deactivate();
        self.provider = None;
        self.project = Project::is_initialized(&root).then(|| Project { root: root.clone() });
        self.root = Some(root);
    }

    fn instructions_info(&self) -> Value {
        let global_path = self.dirs.as_ref().map(|d| d.global_instructions());
        let project_path = self.project.as_ref().map(|p| p.instructions_path());
        json!({
            "global_path": global_path.as_ref().map(|p| p.to_string_lossy()).unwrap_or_default(),
            "global_exists": global_path.as_ref().is_some_and(|p| p.is_file()),
            "project_path": project_path.as_ref().map(|p| p.to_string_lossy()).unwrap_or_default(),
            "project_exists": project_path.as_ref().is_some_and(|p| p.is_file()),
            "project_error": self.project_instructions().err().unwrap_or_default(),
        })
    }

    /// The expanded project instructions (`None` when there are none), or the parse
    /// error that blocks sends.
    pub fn project_instructions(&self) -> std::result::Result<Option<String>, String> {
        let Some(project) = &self.project else {
            return Ok(None);
        };
        let path = project.instructions_path();
        match read_text_opt(&path, ".bb7/instructions") {
            Ok(None) => Ok(None),
            Ok(Some(text)) => instructions::expand_project(&project.root, &text).map(Some),
            Err(e) => Err(e.message),
        }
    }

    fn customization_info(&self) -> Result<Value> {
        let dirs = self.dirs()?;
        Ok(json!({
            "type": "customization_info",
            "system_override": dirs.system_override().is_file(),
            "global_instructions": dirs.global_instructions().is_file(),
            "project_instructions": self.project.as_ref().is_some_and(|p| p.instructions_path().is_file()),
            "project_instructions_error": self.project_instructions().err().unwrap_or_default(),
        }))
    }

    fn prepare_instructions(&self, req: &Request) -> Result<Value> {
        let level = req.str("level")?;
        let dirs = self.dirs()?;
        let (path, template) = match level {
            "project" => {
                let project = self.project.as_ref().ok_or_else(|| {
                    Error::new("not_initialized", "Not initialized. Run :BB7Init")
                })?;
                (
                    project.instructions_path(),
                    "@@ Project instructions for bb7. Lines starting with @@ are comments.\n\
                     @@ @include path/to/file includes a project file verbatim.\n",
                )
            }
            "global" => (dirs.global_instructions(), ""),
            "system" => (dirs.system_override(), ""),
            other => {
                return Err(Error::invalid(format!(
                    "Unknown instructions level: {other} (expected project, global or system)"
                )));
            }
        };
        if path.symlink_metadata().is_err() {
            write_atomic(&path, template.as_bytes())?;
        }
        Ok(json!({"type": "instructions_path", "path": path}))
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
        let loaded = ChatFiles::new(&store, id)
            .recover_staged()
            .and_then(|()| store.load(id));
        let chat = match loaded {
            Ok(c) => c,
            Err(e) => {
                self.keep_or_release(key, lock);
                return Err(e);
            }
        };
        store.set_active(Some(id))?;
        self.deactivate();
        self.locks.insert(key, lock);
        self.active = Some(Active { store, chat });
        Ok(())
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
            return Err(Error::new("busy", "Another request is already in progress"));
        }
        Ok(())
    }

    fn global_state(&self) -> GlobalState {
        self.dirs
            .as_ref()
            .map(|d| GlobalState::load(&d.state))
            .unwrap_or_default()
    }

    fn chat_new(&mut self, req: &Request) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let model = match req.opt_str("model")? {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => config::model_for_new_chat(&self.config, &self.global_state()),
        };
        let chat = store.create(req.opt_str("name")?, &model)?;
        let id = chat.id.clone();
        self.activate(store, &id)?;
        Ok(json!({"type": "ok", "id": id}))
    }

    fn chat_list(&self, req: &Request) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let chats = store.list(req.bool_or("include_archived", false)?)?;
        Ok(json!({"type": "chat_list", "chats": chats}))
    }

    fn chat_select(&mut self, req: &Request) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let id = req.non_empty_str("id")?;
        self.activate(store, id)?;
        Ok(ok())
    }

    fn chat_get(&self) -> Result<Value> {
        let a = self.active()?;
        let c = &a.chat;
        let mut v = json!({
            "type": "chat",
            "id": c.id,
            "name": c.name,
            "created": c.created,
            "model": c.model,
            "draft": c.draft,
            "global": a.store.global,
            "messages": c.messages,
            "context_files": c.context_files,
            "instructions_info": self.instructions_info(),
        });
        if let Some(e) = &c.reasoning_effort {
            v["reasoning_effort"] = json!(e);
        }
        v["tools"] = json!(c.tools.as_deref().unwrap_or("off"));
        Ok(v)
    }

    fn chat_active(&self) -> Result<Value> {
        self.root()?;
        Ok(match &self.active {
            Some(a) => json!({"type": "chat_active", "id": a.chat.id, "global": a.store.global}),
            None => json!({"type": "chat_active"}),
        })
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
        let root = self.root()?.to_path_buf();
        self.ensure_not_busy(store, id)?;
        if self.is_active(store, id) {
            return self.mutate(change);
        }
        if !store.exists(id) {
            return Err(Error::chat_not_found());
        }
        let _lock = ChatLock::acquire(&store.chat_dir(id)?)?;
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
        let root = self.root()?.to_path_buf();
        let active = self.active.as_mut().ok_or_else(Error::no_active_chat)?;
        let mut chat = active.chat.clone();
        let r = change(
            &mut chat,
            ChatFiles::new(&active.store, &active.chat.id),
            &root,
        )?;
        active.store.save(&chat)?;
        active.chat = chat;
        Ok(r)
    }

    fn chat_rename(&mut self, req: &Request) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let id = req.non_empty_str("id")?;
        let name = req.non_empty_str("name")?.trim().to_owned();
        if self.is_active(&store, id) {
            let active = self.active.as_mut().ok_or_else(Error::no_active_chat)?;
            let mut chat = active.chat.clone();
            store.rename(&mut chat, &name)?;
            active.chat = chat;
        } else {
            let chat = self.with_chat(&store, id, |chat, _, _| {
                chat.name = name.clone();
                Ok(chat.clone())
            })?;
            store.adopt(&chat)?;
        }
        Ok(ok())
    }

    fn chat_delete(&mut self, req: &Request) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let id = req.non_empty_str("id")?;
        if !store.exists(id) {
            return Err(Error::chat_not_found());
        }
        self.ensure_not_busy(&store, id)?;
        if self.is_active(&store, id) {
            self.deactivate();
        } else {
            // Taking the lock proves no other process drives the chat.
            let _lock = ChatLock::acquire(&store.chat_dir(id)?)?;
        }
        store.delete(id)?;
        Ok(ok())
    }

    fn chat_move(&mut self, req: &Request) -> Result<Value> {
        let id = req.non_empty_str("id")?.to_owned();
        let to_global = match req.str("to")? {
            "global" => true,
            "project" => false,
            other => {
                return Err(Error::invalid(format!(
                    "Field 'to' must be global or project, not {other}"
                )));
            }
        };
        if !to_global && self.project.is_none() {
            return Err(Error::new(
                "not_initialized",
                "Not initialized. Run :BB7Init",
            ));
        }
        let from = self.store(!to_global)?;
        let to = self.store(to_global)?;
        if !from.exists(&id) {
            return Err(Error::chat_not_found());
        }
        if to.exists(&id) {
            return Err(Error::new(
                "conflict",
                "A chat with this id already exists there",
            ));
        }
        self.ensure_not_busy(&from, &id)?;
        let was_active = self.is_active(&from, &id);
        if was_active {
            self.deactivate();
        }
        let src = from.chat_dir(&id)?;
        let lock = ChatLock::acquire(&src)?;
        let dst = to.chat_dir(&id)?;
        std::fs::create_dir_all(to.chats_dir()?).map_err(|e| Error::io("Cannot move chat", e))?;
        move_dir(&src, &dst)?;
        drop(lock);
        let chat = to.load(&id)?;
        to.adopt(&chat)?;
        from.forget(&id)?;
        if was_active {
            self.activate(to, &id)?;
        }
        Ok(ok())
    }

    fn chat_force_unlock(&mut self, req: &Request) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let id = req.non_empty_str("id")?;
        if !store.exists(id) {
            return Err(Error::chat_not_found());
        }
        if !self.is_active(&store, id) {
            store.remove_chat_file(id, "lock")?;
        }
        Ok(ok())
    }

    fn search_chats(&self, req: &Request) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let results = store.search(req.str("query")?)?;
        Ok(json!({"type": "search_results", "results": results}))
    }

    fn chat_flag(&mut self, req: &Request, field: &str) -> Result<Value> {
        let store = self.store(req.global()?)?;
        let id = req.non_empty_str("id")?;
        let on = req.bool(field)?;
        if field == "pinned" {
            store.set_pinned(id, on)?;
        } else {
            store.set_archived(id, on)?;
        }
        Ok(ok())
    }

    fn save_chat_settings(&mut self, req: &Request) -> Result<Value> {
        let model = req
            .opt_str("model")?
            .filter(|m| !m.is_empty())
            .map(str::to_owned);
        let effort = match req.fields.get("reasoning_effort") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) if s.is_empty() || s == "none" => Some(None),
            Some(Value::String(s))
                if matches!(s.as_str(), "minimal" | "low" | "medium" | "high") =>
            {
                Some(Some(s.clone()))
            }
            Some(_) => {
                return Err(Error::invalid(
                    "Field 'reasoning_effort' must be low, medium, high or none",
                ));
            }
        };
        let tools = match req.opt_str("tools")? {
            Some(t) => Some(
                crate::retrieval::ToolsMode::parse(Some(t))
                    .map_err(Error::invalid)
                    .map(|_| t.to_owned())?,
            ),
            None => None,
        };
        self.mutate(|chat, _, _| {
            if let Some(t) = tools {
                chat.tools = (t != "off").then_some(t);
            }
            if let Some(m) = &model {
                chat.model = m.clone();
            }
            if let Some(e) = effort {
                chat.reasoning_effort = e;
            }
            Ok(())
        })?;
        if let (Some(m), Some(dirs)) = (model, &self.dirs) {
            let mut state = GlobalState::load(&dirs.state);
            state.last_model = Some(m);
            state.save(&dirs.state)?;
        }
        Ok(ok())
    }

    fn chat_edit(&mut self, req: &Request) -> Result<Value> {
        let id = req.non_empty_str("chat_id")?.to_owned();
        let index = req.uint("message_index")? as usize;
        let content = req.str("content")?.to_owned();
        let store = self.find_store(&id)?;
        let warnings = self.with_chat(&store, &id, |chat, files, root| {
            let msg = chat
                .messages
                .get(index)
                .ok_or_else(|| Error::invalid(format!("Message {index} does not exist")))?;
            let refs = msg.context_snapshot.clone();
            let mut warnings = Vec::new();
            if let Some(refs) = refs {
                let (restored, w) = restore_context(chat, index, &refs, root);
                warnings = w;
                replace_context(chat, files, restored)?;
            }
            chat.messages.truncate(index);
            chat.draft = content;
            add_warning_events(chat, &warnings);
            Ok(warnings)
        })?;
        Ok(json!({"type": "ok", "context_warnings": warnings}))
    }

    fn fork_chat(&mut self, req: &Request) -> Result<Value> {
        let id = req.non_empty_str("chat_id")?.to_owned();
        let index = req.uint("fork_message_index")? as usize;
        let store = self.find_store(&id)?;
        let root = self.root()?.to_path_buf();
        let source = if self.is_active(&store, &id) {
            self.active()?.chat.clone()
        } else {
            store.load(&id)?
        };
        let msg = source
            .messages
            .get(index)
            .ok_or_else(|| Error::invalid(format!("Message {index} does not exist")))?;
        if msg.role != "user" {
            return Err(Error::invalid(format!(
                "Message {index} is not a user message"
            )));
        }
        let content = msg.text();
        let refs = msg.context_snapshot.clone().unwrap_or_default();
        let (restored, warnings) = restore_context(&source, index, &refs, &root);
        let mut fork = store.create(Some(&format!("Fork of {}", source.name)), &source.model)?;
        fork.reasoning_effort = source.reasoning_effort.clone();
        fork.messages = source.messages[..index].to_vec();
        fork.draft = content.clone();
        let fork_files = ChatFiles::new(&store, &fork.id);
        for (cf, text) in &restored {
            fork_files.write_snapshot(cf, text)?;
        }
        fork.context_files = restored.into_iter().map(|(cf, _)| cf).collect();
        add_warning_events(&mut fork, &warnings);
        store.save(&fork)?;
        let new_id = fork.id.clone();
        self.activate(store, &new_id)?;
        Ok(json!({
            "type": "fork_result",
            "new_chat_id": new_id,
            "fork_message_content": content,
            "context_warnings": warnings,
        }))
    }

    fn chat_new_with_context(&mut self, req: &Request) -> Result<Value> {
        let id = req.non_empty_str("source_chat_id")?.to_owned();
        let store = self.find_store(&id)?;
        let source = if self.is_active(&store, &id) {
            self.active()?.chat.clone()
        } else {
            store.load(&id)?
        };
        let src_files = ChatFiles::new(&store, &id);
        let mut chat = store.create(None, &source.model)?;
        chat.reasoning_effort = source.reasoning_effort.clone();
        let new_id = chat.id.clone();
        let files = ChatFiles::new(&store, &new_id);
        for cf in &source.context_files {
            let text = src_files.read_snapshot(cf)?;
            files.write_snapshot(cf, &text)?;
            chat.context_files.push(cf.clone());
            context::push_event(&mut chat, context::event_for(add_action(cf), cf));
        }
        store.save(&chat)?;
        self.activate(store, &new_id)?;
        Ok(json!({"type": "ok", "id": new_id}))
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

    fn locate(&self, path: &str) -> Result<Location> {
        locate(self.root()?, path)
    }

    /// Resolves a path for adding to context: a project path that leads outside the
    /// project through a symlink is taken as the external file it really is.
    fn locate_for_context(&self, path: &str) -> Result<Location> {
        match self.locate(path) {
            Err(e) if e.code == "path_escape" && !path.starts_with(".bb7") => {
                let abs = self.root()?.join(path);
                match std::fs::canonicalize(&abs) {
                    Ok(real) if !real.starts_with(self.root()?) => {
                        Ok(Location::External { abs: real })
                    }
                    _ => Err(e),
                }
            }
            other => other,
        }
    }

    fn context_add(&mut self, req: &Request) -> Result<Value> {
        let loc = self.locate_for_context(req.non_empty_str("path")?)?;
        let content = req.str("content")?;
        let readonly = req.bool_or("readonly", false)?;
        self.mutate(|chat, files, _| context::add_file(chat, files, &loc, content, readonly))?;
        Ok(ok())
    }

    fn context_add_section(&mut self, req: &Request) -> Result<Value> {
        let loc = self.locate_for_context(req.non_empty_str("path")?)?;
        let content = req.str("content")?;
        let (start, end) = (req.line_number("start_line")?, req.line_number("end_line")?);
        self.mutate(|chat, files, _| context::add_section(chat, files, &loc, content, start, end))?;
        Ok(ok())
    }

    fn sync_context(&mut self, req: &Request) -> Result<Value> {
        let loc = self.locate_for_context(req.non_empty_str("path")?)?;
        let key = loc.key();
        let text = read_text(loc.abs(), &key)?;
        self.mutate(|chat, files, _| context::update_file(chat, files, &key, &text))?;
        Ok(ok())
    }

    fn get_context_file(&self, req: &Request) -> Result<Value> {
        let key = self.locate_for_context(req.non_empty_str("path")?)?.key();
        let start = req.fields.get("start_line").and_then(Value::as_u64);
        let end = req.fields.get("end_line").and_then(Value::as_u64);
        let a = self.active()?;
        let cf = a
            .chat
            .context_files
            .iter()
            .find(|c| {
                c.path == key && c.start_line == start && (start.is_none() || c.end_line == end)
            })
            .or_else(|| a.chat.context_files.iter().find(|c| c.path == key))
            .ok_or_else(|| Error::not_found("File not in context"))?;
        let content = ChatFiles::new(&a.store, &a.chat.id).read_snapshot(cf)?;
        Ok(json!({"type": "file_content", "path": key, "content": content}))
    }

    fn get_output_file(&self, req: &Request) -> Result<Value> {
        let (rel, _) = locate_in_project(self.root()?, req.non_empty_str("path")?)?;
        let a = self.active()?;
        let content = ChatFiles::new(&a.store, &a.chat.id)
            .read_output(&rel)?
            .ok_or_else(|| Error::not_found(format!("No output for {rel}")))?;
        Ok(json!({"type": "file_content", "path": rel, "content": content}))
    }

    fn get_diff_paths(&self, req: &Request) -> Result<Value> {
        let (rel, abs) = locate_in_project(self.root()?, req.non_empty_str("path")?)?;
        let a = self.active()?;
        let output_path = ChatFiles::new(&a.store, &a.chat.id).output_path(&rel)?;
        Ok(
            json!({"type": "diff_paths", "path": rel, "output_path": output_path, "local_path": abs}),
        )
    }

    fn apply(&mut self, req: &Request) -> Result<Value> {
        let path = req.non_empty_str("path")?.to_owned();
        let destination = if req.action == "apply_file_as" {
            Some(req.non_empty_str("destination")?.to_owned())
        } else {
            None
        };
        let applied = self.mutate(|chat, files, root| {
            output::apply(chat, files, root, &path, destination.as_deref())
        })?;
        let checkpoint_id = self.checkpoint_apply(&req.action, &applied)?;
        Ok(
            json!({"type": "ok", "path": applied.path, "content": applied.content, "checkpoint_id": checkpoint_id}),
        )
    }
}

fn chat_key(store: &ChatStore, id: &str) -> ChatKey {
    ChatKey {
        global: store.global,
        id: id.to_owned(),
    }
}

fn system_message(text: String) -> Message {
    Message {
        role: "system".into(),
        parts: vec![Part::text(text)],
        timestamp: Some(ids::now_rfc3339()),
        ..Message::default()
    }
}

fn add_action(cf: &ContextFile) -> &'static str {
    if cf.is_section() {
        "UserAddSection"
    } else {
        "UserAddFile"
    }
}

/// Moves a chat directory; across file systems it is copied, then removed.
fn move_dir(src: &Path, dst: &Path) -> Result<()> {
    if std::fs::rename(src, dst).is_ok() {
        return Ok(());
    }
    copy_dir(src, dst)?;
    std::fs::remove_dir_all(src).map_err(|e| Error::io("Cannot remove the moved chat", e))
}

fn copy_dir(src: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst).map_err(|e| Error::io("Cannot copy chat", e))?;
    for entry in std::fs::read_dir(src)
        .map_err(|e| Error::io("Cannot copy chat", e))?
        .flatten()
    {
        let Ok(ft) = entry.file_type() else { continue };
        let to = dst.join(entry.file_name());
        if ft.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &to).map_err(|e| Error::io("Cannot copy chat", e))?;
        }
    }
    Ok(())
}

/// A fork/edit warning: `{"path","issue":"modified"|"deleted","original_version"}`.
type Warning = Value;

/// Rebuilds the context recorded in a user message's `context_snapshot` (seed 001,
/// "Chat Forking") from the files as they are now: a file whose content changed since
/// gives a `modified` warning (and its current content), a file that is gone gives
/// `deleted` and is left out.
fn restore_context(
    chat: &Chat,
    upto: usize,
    refs: &[SnapshotRef],
    root: &Path,
) -> (Vec<(ContextFile, String)>, Vec<Warning>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for r in refs {
        let is_section = r.start_line.is_some();
        let current = chat
            .context_files
            .iter()
            .find(|c| c.path == r.path && c.start_line == r.start_line && c.end_line == r.end_line);
        let (readonly, external) = flags_at(chat, upto, r, current);
        let mut cf = ContextFile {
            path: r.path.clone(),
            readonly: readonly || is_section || external,
            external,
            version: r.file_id.clone(),
            start_line: r.start_line,
            end_line: r.end_line,
        };
        let disk = locate(root, &r.path)
            .ok()
            .and_then(|loc| read_text(loc.abs(), &r.path).ok())
            .map(|t| to_lf(&t).into_owned());
        let Some(disk) = disk else {
            warnings
                .push(json!({"path": r.path, "issue": "deleted", "original_version": r.file_id}));
            continue;
        };
        let text = match (r.start_line, r.end_line) {
            (Some(s), Some(e)) => {
                match context::section_text(&disk, s, e) {
                    Ok(t) => t,
                    Err(_) => {
                        warnings.push(json!({"path": r.path, "issue": "deleted", "original_version": r.file_id}));
                        continue;
                    }
                }
            }
            _ => disk,
        };
        cf.version = match (r.start_line, r.end_line) {
            (Some(s), Some(e)) => ids::section_version(&r.path, s, e, &text),
            _ => ids::file_version(&r.path, &text),
        };
        if cf.version != r.file_id {
            warnings
                .push(json!({"path": r.path, "issue": "modified", "original_version": r.file_id}));
        }
        out.push((cf, text));
    }
    (out, warnings)
}

/// The read-only and external flags a file had at message `upto`: from the current
/// entry, else the last context event about it before that message.
fn flags_at(
    chat: &Chat,
    upto: usize,
    r: &SnapshotRef,
    current: Option<&ContextFile>,
) -> (bool, bool) {
    if let Some(c) = current {
        return (c.readonly, c.external);
    }
    let event = chat.messages[..upto.min(chat.messages.len())]
        .iter()
        .rev()
        .flat_map(|m| m.parts.iter().rev())
        .find(|p| {
            p.kind == "context_event"
                && p.path.as_deref() == Some(&r.path)
                && p.start_line == r.start_line
        });
    match event {
        Some(p) => (p.readonly.unwrap_or(false), p.external.unwrap_or(false)),
        None => (false, Path::new(&r.path).is_absolute()),
    }
}

/// Replaces a chat's context with `restored`, removing snapshots no longer used.
fn replace_context(
    chat: &mut Chat,
    files: ChatFiles,
    restored: Vec<(ContextFile, String)>,
) -> Result<()> {
    for old in &chat.context_files {
        let _ = crate::project::fsutil::remove_file_if_exists(&files.snapshot_path(old)?);
    }
    chat.context_files.clear();
    for (cf, text) in restored {
        files.write_snapshot(&cf, &text)?;
        chat.context_files.push(cf);
    }
    Ok(())
}

/// Records fork/edit warnings as `ForkWarningModified` / `ForkWarningDeleted` events
/// so the model learns that a file differs from what the earlier turn saw.
fn add_warning_events(chat: &mut Chat, warnings: &[Warning]) {
    for w in warnings {
        let path = w["path"].as_str().unwrap_or_default();
        let action = if w["issue"] == "deleted" {
            "ForkWarningDeleted"
        } else {
            "ForkWarningModified"
        };
        let mut part = Part::event(action, path);
        part.prev_version = w["original_version"].as_str().map(str::to_owned);
        if let Some(i) = find_file(chat, path) {
            part.version = Some(chat.context_files[i].version.clone());
        }
        context::push_event(chat, part);
    }
}
