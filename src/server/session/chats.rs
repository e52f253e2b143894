//! Chat handlers: create, list, select, get, rename, delete, move, unlock, search, pins,
//! archive and chat settings.

use super::*;
use crate::chat::model::Message;
use crate::config::{self, GlobalState};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::lock::ChatLock;
use crate::protocol::params;
use crate::protocol::replies::*;
use std::borrow::Cow;
use std::path::Path;

impl Session {
    pub(super) fn save_draft(&mut self, args: params::SaveDraft) -> Result<Ack> {
        let draft = args.draft.as_str().to_owned();
        self.mutate(|chat, _, _| {
            chat.draft = draft;
            Ok(())
        })?;
        Ok(Ack {})
    }
    pub(super) fn add_system_message(&mut self, args: params::AddSystemMessage) -> Result<Ack> {
        let text = args.message.as_str().to_owned();
        self.mutate(|chat, _, _| {
            chat.messages.push(system_message(text));
            Ok(())
        })?;
        Ok(Ack {})
    }

    pub(super) fn chat_new(&mut self, args: params::ChatNew) -> Result<Created<'_>> {
        let store = self.store(args.scope.is_global())?;
        let model = match args.model.as_deref() {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => config::model_for_new_chat(&self.config, &self.global_state()),
        };
        let (chat, lock) = store.create_locked(args.name.as_deref(), &model)?;
        let id = chat.id.clone();
        self.locks.insert(chat_key(&store, &id), lock);
        // Made by this process a moment ago under its lock: nothing to recover.
        self.activate_open(store, chat)?;
        Ok(Created { id: id.into() })
    }

    pub(super) fn chat_list(&self, args: params::ChatList) -> Result<ChatListing<'_>> {
        let store = self.store(args.scope.is_global())?;
        let chats = store.list(args.include_archived.unwrap_or(false))?;
        Ok(ChatListing {
            chats: chats.into(),
        })
    }

    pub(super) fn chat_select(&mut self, args: params::ChatSelect) -> Result<Selected> {
        let store = self.store(args.scope.is_global())?;
        let id = args.id.as_str();
        // What reading the chat found wrong is told here, once; the send then does not
        // repeat it (`chat::journal_skips`).
        let dir = store.chat_dir(id)?;
        if args.read_only == Some(true) {
            self.activate_read_only(store, id)?;
        } else {
            self.activate(store, id)?;
        }
        let state_warnings = crate::chat::journal_skips::take(&dir)
            .map(|n| n.message)
            .into_iter()
            .collect();
        Ok(Selected { state_warnings })
    }

    pub(super) fn chat_get(&self, _: params::NoParams) -> Result<ChatView<'_>> {
        let a = self.active()?;
        let c = &a.chat;
        Ok(ChatView {
            id: c.id.as_str().into(),
            name: c.name.as_str().into(),
            created: c.created.as_str().into(),
            model: c.model.as_str().into(),
            reasoning_effort: c.reasoning_effort.as_deref().map(Into::into),
            draft: c.draft.as_str().into(),
            global: a.store.global,
            tools: c.tools.as_deref().unwrap_or("off").into(),
            edit_format: c.edit_format,
            agent_mode: self.agent_mode_of(c).as_str().into(),
            agent_mode_set: c.agent_mode.is_some(),
            forked_from: c.forked_from.clone(),
            messages: wire_messages(&c.messages),
            context_files: c.context_files.as_slice().into(),
            instructions_info: self.instructions_info(),
        })
    }

    pub(super) fn chat_active(&self, _: params::NoParams) -> Result<ChatActive<'_>> {
        self.root()?;
        Ok(match &self.active {
            Some(a) => ChatActive {
                id: Some(a.chat.id.as_str().into()),
                global: Some(a.store.global),
                read_only: self.read_only.then_some(true),
            },
            None => ChatActive {
                id: None,
                global: None,
                read_only: None,
            },
        })
    }

    pub(super) fn chat_rename(&mut self, args: params::ChatRename) -> Result<Ack> {
        let store = self.store(args.scope.is_global())?;
        let id = args.id.as_str();
        let name = args.name.as_str().trim().to_owned();
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
        Ok(Ack {})
    }

    pub(super) fn chat_delete(&mut self, args: params::ChatRef) -> Result<Ack> {
        let store = self.store(args.scope.is_global())?;
        let id = args.id.as_str();
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
        // Nothing queued for the flush may name a directory about to go (Durability 8).
        crate::project::flush_queue::flush_now();
        store.delete(id)?;
        Ok(Ack {})
    }

    pub(super) fn chat_move(&mut self, args: params::ChatMove) -> Result<Ack> {
        let id = args.id.as_str().to_owned();
        let to_global = match args.to.as_str() {
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
                ErrorCode::NotInitialized,
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
                ErrorCode::Conflict,
                "A chat with this id already exists there",
            ));
        }
        self.ensure_not_busy(&from, &id)?;
        // A global chat never writes project files, so output waiting for review
        // would be stranded there.
        if to_global
            && !crate::context::ChatFiles::new(&from, &id)
                .list_outputs()?
                .is_empty()
        {
            return Err(Error::new(
                ErrorCode::Conflict,
                "chat has pending file modifications \u{2014} apply or reject changes before moving",
            ));
        }
        let was_active = self.is_active(&from, &id);
        if was_active {
            self.deactivate();
        }
        let src = from.chat_dir(&id)?;
        let lock = ChatLock::acquire(&src)?;
        if to_global {
            // A global chat keeps no work meant for a project (what a crash left
            // staged, review decisions); discarded before the move.
            for dir in ["output", "staging", "review"] {
                let d = from.chat_path(&id, dir)?;
                if d.symlink_metadata().is_ok() {
                    std::fs::remove_dir_all(&d)
                        .map_err(|e| Error::io("Cannot discard the chat's pending output", e))?;
                }
            }
        }
        let dst = to.chat_dir(&id)?;
        std::fs::create_dir_all(to.chats_dir()?).map_err(|e| Error::io("Cannot move chat", e))?;
        // Writes queued for the background flush name the old paths: flush them first,
        // so the moved copy is complete on disk (Durability 8).
        crate::project::flush_queue::flush_now();
        move_dir(&src, &dst)?;
        drop(lock);
        let mut chat = to.load(&id)?;
        if to_global && chat.context_files.iter().any(|cf| !cf.readonly) {
            for cf in &mut chat.context_files {
                cf.readonly = true;
            }
            to.save(&chat)?;
        }
        to.adopt(&chat)?;
        from.forget(&id)?;
        if was_active {
            self.activate(to, &id)?;
        }
        Ok(Ack {})
    }

    /// `chat_force_unlock`: removes the chat's lock file so the next `chat_select`
    /// takes it, from a live holder too (the reference BB-7's "Force unlock chat?"):
    /// that process refuses its next save and writes nothing to the chat again
    /// (invariant 7). With `careful`, a live holder that answers on its holder socket
    /// keeps it (then its requests belong there); that probe runs off the request loop,
    /// for at most `guests::PROBE_TIMEOUT`, and answers later. Errors: no such chat
    /// (`not_found`); with `careful`, `locked` (with `data.holder_pid`) when the holder
    /// answers.
    pub(super) fn chat_force_unlock(
        &mut self,
        args: params::ForceUnlock,
        call: &Call<'_>,
    ) -> Result<NowOrLater<Ack>> {
        let store = self.store(args.scope.is_global())?;
        let id = args.id.as_str().to_owned();
        if !store.exists(&id) {
            return Err(Error::chat_not_found());
        }
        if self.is_active(&store, &id) && !self.read_only {
            return Ok(NowOrLater::Now(Ack {}));
        }
        let dir = store.chat_dir(&id)?;
        let holder = crate::project::lock::holder(&dir);
        let Some(pid) = holder.filter(|_| args.careful == Some(true)) else {
            store.remove_chat_file(&id, "lock")?;
            return Ok(NowOrLater::Now(Ack {}));
        };
        let outbox = call.ctx.outbox.clone();
        let rid = call.request_id.map(str::to_owned);
        tokio::spawn(async move {
            let reply =
                if crate::server::guests::answers(&dir, crate::server::guests::PROBE_TIMEOUT).await
                {
                    Err(held_live(&id, pid))
                } else {
                    // The lock is removed only if it is still the silent holder's: one
                    // that let go meanwhile leaves none, and a process that took the
                    // chat during the probe keeps it.
                    match crate::project::lock::holder(&dir) {
                        Some(now) if now == pid => store.remove_chat_file(&id, "lock"),
                        Some(now) => Err(held_live(&id, now)),
                        None => Ok(()),
                    }
                };
            match reply {
                Ok(()) => outbox.emit(&Ack {}, rid.as_deref()),
                Err(e) => outbox.send_error(&e, rid.as_deref()),
            }
        });
        Ok(NowOrLater::Later)
    }

    pub(super) fn search_chats(&self, args: params::SearchChats) -> Result<SearchResults<'_>> {
        let store = self.store(args.scope.is_global())?;
        let results = store.search(args.query.as_str())?;
        Ok(SearchResults {
            results: results.into(),
        })
    }

    pub(super) fn chat_pin(&mut self, args: params::ChatFlag) -> Result<Ack> {
        self.chat_flag(args, "pinned")
    }

    pub(super) fn chat_flag(&mut self, args: params::ChatFlag, field: &str) -> Result<Ack> {
        let store = self.store(args.scope.is_global())?;
        let id = args.id.as_str();
        let on = match field {
            "pinned" => args.pinned,
            _ => args.archived,
        }
        .ok_or_else(|| Error::invalid(format!("Missing required field: {field}")))?;
        if field == "pinned" {
            store.set_pinned(id, on)?;
        } else {
            store.set_archived(id, on)?;
        }
        Ok(Ack {})
    }

    pub(super) fn save_chat_settings(&mut self, args: params::SaveChatSettings) -> Result<Ack> {
        let model = args.model.filter(|m| !m.is_empty());
        let effort = match args.reasoning_effort {
            None => None,
            Some(None) => Some(None),
            Some(Some(s)) if s.is_empty() || s == "none" => Some(None),
            Some(Some(s)) if matches!(s.as_str(), "minimal" | "low" | "medium" | "high") => {
                Some(Some(s))
            }
            Some(Some(_)) => {
                return Err(Error::invalid(
                    "Field 'reasoning_effort' must be low, medium, high or none",
                ));
            }
        };
        let tools = match args.tools.as_deref() {
            Some(t) => Some(
                crate::tools::ToolsMode::parse(Some(t))
                    .map_err(Error::from)
                    .map(|_| t.to_owned())?,
            ),
            None => None,
        };
        let edit_format = args.edit_format;
        let agent_mode = match args.agent_mode.as_deref() {
            None => None,
            Some("" | "default") => Some(None),
            Some(m) => Some(Some(
                crate::config::AgentMode::parse(m)?.as_str().to_owned(),
            )),
        };
        // A mode that starts on `local` needs the local provider now, not at the next
        // send: `/mode local` with none configured is refused with the way to set it.
        if let Some(Some(m)) = &agent_mode
            && m != crate::config::AgentMode::Remote.as_str()
        {
            crate::llm::providers::Providers::from_config(&self.config)
                .get(crate::llm::providers::ProviderRole::Local)?;
        }
        if let Some(m) = &agent_mode
            && let Some(a) = &self.active
        {
            let key = super::chat_key(&a.store, &a.chat.id);
            if m.as_deref() == Some(crate::config::AgentMode::HybridAuto.as_str()) {
                self.hybrid_chosen.insert(key);
            } else {
                self.hybrid_chosen.remove(&key);
            }
        }
        self.mutate(|chat, _, _| {
            if let Some(m) = agent_mode {
                chat.agent_mode = m;
            }
            if let Some(t) = tools {
                chat.tools = (t != "off").then_some(t);
            }
            if let Some(f) = edit_format {
                chat.edit_format = Some(f);
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
        Ok(Ack {})
    }
}

/// A chat's messages as `chat_get` sends them ([`Message::wire_form`]): borrowed
/// unless the chat has a system note stored without its `content`.
fn wire_messages(messages: &[Message]) -> Cow<'_, [Message]> {
    if !messages
        .iter()
        .any(|m| m.is_system_note() && !m.extra.contains_key("content"))
    {
        return messages.into();
    }
    messages
        .iter()
        .map(|m| m.wire_form().into_owned())
        .collect::<Vec<_>>()
        .into()
}

/// Moves a chat directory; across file systems it is copied (and the copy flushed),
/// then removed.
pub(super) fn move_dir(src: &Path, dst: &Path) -> Result<()> {
    if std::fs::rename(src, dst).is_ok() {
        return Ok(());
    }
    copy_dir(src, dst)?;
    std::fs::remove_dir_all(src).map_err(|e| Error::io("Cannot remove the moved chat", e))
}

pub(super) fn copy_dir(src: &Path, dst: &Path) -> Result<()> {
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
            // The source is removed next: the copy must be on disk first.
            std::fs::File::open(&to)
                .and_then(|f| f.sync_all())
                .map_err(|e| Error::io("Cannot copy chat", e))?;
        }
    }
    crate::project::fsutil::sync_dir(dst);
    Ok(())
}

/// The refusal of `chat_force_unlock` for chat `id`, whose holder `pid` answers on its
/// holder socket: who holds it and the ways on.
fn held_live(id: &str, pid: u32) -> Error {
    Error::new(
        ErrorCode::Locked,
        format!(
            "Chat {id} is held by a live bb7 process (PID {pid}) that answers on its holder \
             socket: send your requests there (a command-line bb7 does so by itself), or \
             close the chat in that process. To take it anyway, send chat_force_unlock \
             without careful; that process then refuses its next save and writes \
             nothing more to the chat, so changes it had not saved stay unsaved there"
        ),
    )
    .with_data(crate::error::ErrorData {
        holder_pid: Some(pid),
        ..Default::default()
    })
}
