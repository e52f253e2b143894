//! Starting a model turn (`send`), cancelling it, answering its approvals and
//! clarifications, and routing background results back into the session.

use super::{BackgroundResult, Call, Ctx, Flow, InFlight, PlannedTurn, Session, chat_key};
use crate::chat::ChatKey;
use crate::chat::events::{EventData, EventKind};
use crate::chat::ids;
use crate::chat::model::{Chat, Message, Part};
use crate::chat::store::ChatStore;
use crate::config::{EditFormat, GlobalState};
use crate::context::ChatFiles;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::llm::Provider;
use crate::llm::request::{ChatMessage, ChatRequest, ProviderPrefs, Reasoning};
use crate::project::lock::ChatLock;
use crate::prompt::assemble::{self, Instructions, Prompt};
use crate::prompt::cache::PromptCache;
use crate::prompt::files::next_request;
use crate::prompt::ledger;
use crate::prompt::{BLOCKS_PROMPT, SYSTEM_PROMPT, TOOLS_PROMPT};
use crate::protocol::events::TurnMessage;
use crate::protocol::params;

use crate::protocol::replies::{Ack, Deferred};
use crate::tools::{DiffMode, ToolsMode};
use crate::turn::stream::{self as turn, ClientAnswer, EditChannel, TurnOutcome, TurnSpec};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl Session {
    /// The instruction files for a turn in a chat; a global chat (`global`) never
    /// gets the project's.
    pub(super) fn instruction_files(&self, global: bool) -> Result<Vec<Instructions>> {
        let mut out = Vec::new();
        if let Some(dirs) = &self.dirs
            && let Ok(text) = crate::project::fsutil::read_text(
                &dirs.global_instructions(),
                "~/.config/bb7/instructions.md",
            )
        {
            out.push(Instructions {
                source: "~/.config/bb7/instructions.md".into(),
                text,
            });
        }
        // Global chats never get project instructions, nor the project's rules files.
        if !global {
            for rules in self.rules_files() {
                out.push(Instructions {
                    source: rules.path,
                    text: rules.text,
                });
            }
        }
        let project = if global {
            Ok(None)
        } else {
            self.project_instructions()
        };
        match project {
            Ok(Some(text)) => out.push(Instructions {
                source: ".bb7/instructions".into(),
                text,
            }),
            Ok(None) => {}
            Err(e) => {
                return Err(Error::invalid(format!(
                    "Project instructions have an error; fix .bb7/instructions before sending: {e}"
                )));
            }
        }
        Ok(out)
    }

    pub(super) fn system_prompt_base(&self) -> String {
        self.dirs
            .as_ref()
            .and_then(|d| {
                crate::project::fsutil::read_text(&d.system_override(), "system_prompt.md").ok()
            })
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| SYSTEM_PROMPT.to_owned())
    }

    /// The system prompt followed by `extra` (the tool or the block instructions).
    fn system_prompt_with(&self, extra: &str) -> String {
        format!(
            "{}\n\n{}",
            self.system_prompt_base().trim_end(),
            extra.trim_end()
        )
    }

    /// The next request of `chat` laid out (`prompt::assemble`), with the context
    /// snapshot to record on the new user message. Reads the context files and the
    /// chat's prompt ledger; errors: a file that cannot be read.
    pub(super) fn next_prompt(
        &self,
        store: &ChatStore,
        chat: &Chat,
        tools_mode: ToolsMode,
        format: EditFormat,
        instructions: &[Instructions],
        content: &str,
    ) -> Result<(Prompt, Vec<crate::chat::model::SnapshotRef>)> {
        let system = self.request_system(store.global, tools_mode, format, instructions);
        let kept = self.without_ungranted(store, chat);
        next_request(store, kept.as_ref().unwrap_or(chat), &system, content)
    }

    /// The system text of a chat's next request: the system prompt for its edit format
    /// and tools (a global chat gets neither), then the instruction files.
    pub(super) fn request_system(
        &self,
        global: bool,
        tools_mode: ToolsMode,
        format: EditFormat,
        instructions: &[Instructions],
    ) -> String {
        let base = match (format, tools_mode) {
            _ if global => self.system_prompt_base(),
            (EditFormat::Blocks, _) => self.system_prompt_with(BLOCKS_PROMPT),
            (_, ToolsMode::Off) => self.system_prompt_base(),
            _ => self.system_prompt_with(TOOLS_PROMPT),
        };
        assemble::system_text(&base, instructions)
    }

    /// Starts a turn in the active chat: saves the user message with its context
    /// snapshot, then streams in the background.
    pub(super) fn send(&mut self, args: params::Send, call: &Call<'_>) -> Result<Deferred> {
        let (ctx, request_id) = (call.ctx, call.request_id);
        if args.content.trim().is_empty() {
            return Err(Error::invalid("Message is empty"));
        }
        let request_id = request_id
            .map(str::to_owned)
            .ok_or_else(|| Error::invalid("Missing required field: request_id"))?;
        if self.in_flight.contains_key(&request_id) {
            return Err(Error::invalid(
                "request_id is already in use by a running request",
            ));
        }
        if self.queue_send(&args, call)? {
            return Ok(Deferred);
        }
        let (store, chat) = self.turn_target(args.chat_id.as_deref())?;
        let key = chat_key(&store, &chat.id);
        let started = self.start_send(&args, ctx, request_id, &store, &chat);
        if started.is_err() {
            self.release_if_idle(&key);
        }
        started.map(|()| Deferred)
    }

    /// The chat a `send` streams into: the active chat, or with `chat_id` any chat of
    /// this project or the global store, which this process then locks for the turn
    /// (concurrent turns, docs/PROTOCOL.md). Errors: `busy` while that chat streams,
    /// `Chat not found`, `locked` when another process holds it.
    fn turn_target(&mut self, chat_id: Option<&str>) -> Result<(ChatStore, Chat)> {
        let active = self.active.as_ref();
        let (store, id) = match (chat_id.filter(|id| !id.is_empty()), active) {
            (None, Some(a)) => (a.store.clone(), a.chat.id.clone()),
            (None, None) => return Err(Error::no_active_chat()),
            (Some(id), _) => (self.find_store(id)?, id.to_owned()),
        };
        let key = chat_key(&store, &id);
        if self.is_busy(&key) {
            return Err(Error::new(
                ErrorCode::Busy,
                "Another request is already in progress",
            ));
        }
        if let Some(a) = &self.active
            && a.chat.id == id
            && a.store.global == store.global
        {
            return Ok((store, a.chat.clone()));
        }
        if !self.locks.contains_key(&key) {
            let lock = ChatLock::acquire(&store.chat_dir(&id)?)?;
            self.locks.insert(key.clone(), lock);
        }
        let loaded = ChatFiles::new(&store, &id)
            .recover_staged()
            .and_then(|()| store.load(&id));
        match loaded {
            Ok(chat) => Ok((store, chat)),
            Err(e) => {
                self.release_if_idle(&key);
                Err(e)
            }
        }
    }

    fn start_send(
        &mut self,
        args: &params::Send,
        ctx: &Ctx,
        request_id: String,
        store: &ChatStore,
        chat: &Chat,
    ) -> Result<()> {
        let key = chat_key(store, &chat.id);
        let content = args.content.as_str();
        let diff_mode = DiffMode::parse(self.config.diff_mode.as_deref())?;
        // A global chat has no project to read or write: no file or retrieval tools.
        let global_chat = key.global;
        let tools_mode = match ToolsMode::parse(chat.tools.as_deref())? {
            _ if global_chat => ToolsMode::Off,
            mode => mode,
        };
        let instructions = self.instruction_files(key.global)?;
        let chat_model = chat.model.clone();
        let model = match args.model.as_deref() {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ if chat_model.is_empty() => crate::config::FALLBACK_MODEL.to_owned(),
            _ => chat_model,
        };
        self.check_images(chat, &model)?;
        let effort = match args.reasoning_effort.as_deref() {
            Some(e) if e.is_empty() || e == "none" => None,
            Some(e) => Some(e.to_owned()),
            None => chat.reasoning_effort.clone(),
        };

        // The `edit_format` of the provider the turn starts on stands in for the config's.
        let provider_format = self.first_provider_edit_format(chat);
        let format = self.edit_format_for(&model, chat.edit_format.or(provider_format));
        let tools_mode = match format {
            EditFormat::Blocks => ToolsMode::Off,
            _ => tools_mode,
        };
        let (mut prompt, snapshot) =
            self.next_prompt(store, chat, tools_mode, format, &instructions, content)?;
        let cache = PromptCache::parse(self.config.prompt_cache.as_deref())?;
        let breakpoints = cache.breakpoints(&model);
        let expected = self.expected_cost(&model, &prompt, breakpoints.is_some());
        self.check_cost(expected.as_ref())?;
        self.check_window(store, chat, &model, &prompt)?;
        self.check_budgets(chat, expected.as_ref())?;
        // The ledger is kept at once and written after the request went out: it is a
        // cache, and whichever of it and the user message reaches the disk first, an
        // entry for a message that is never saved is not used (it names another text),
        // and a message without one is only sent uncached once.
        let mut shown = std::mem::take(&mut prompt.ledger);
        shown.chat = Some(chat.id.clone());
        ledger::save(
            &store.cache_path(&chat.id, ledger::FILE_NAME)?,
            store.base(),
            shown,
        );
        let edits = match format {
            _ if global_chat => EditChannel::ToolCalls,
            EditFormat::Blocks => EditChannel::Blocks,
            EditFormat::Tools => EditChannel::ToolCalls,
            EditFormat::Auto => EditChannel::ToolCallsElseBlocks {
                blocks_system: assemble::system_text(
                    &self.system_prompt_with(BLOCKS_PROMPT),
                    &instructions,
                ),
            },
        };
        let limits = crate::tools::retrieval::Limits::from_config(&self.config);
        // Global chats never write into a project, and blocks need no tools.
        let tools = if global_chat || format == EditFormat::Blocks {
            Vec::new()
        } else {
            crate::tools::definitions(diff_mode, tools_mode, &limits)
        };
        let mut body = self
            .request_body(
                &model,
                effort.as_deref(),
                &key.id,
                prompt.messages(breakpoints),
            )
            .with_tools(tools);
        // The provider of the first attempt (and its model) comes from the chat's route.
        let (route, provider) = self.start_route(chat, &model, &mut body)?;

        let content_for_msg = content.to_owned();
        let (model_c, effort_c) = (model.clone(), effort.clone());
        self.change_chat(&key, move |chat, _| {
            chat.model = model_c.clone();
            chat.reasoning_effort = effort_c;
            chat.draft.clear();
            chat.messages.push(Message {
                role: "user".into(),
                model: Some(model_c),
                parts: vec![Part::text(content_for_msg)],
                timestamp: Some(ids::now_rfc3339()),
                context_snapshot: Some(snapshot),
                ..Message::default()
            });
            Ok(())
        })?;
        if let Some(dirs) = &self.dirs {
            let mut state = GlobalState::load(&dirs.state);
            if state.last_model.as_deref() != Some(&model) {
                state.last_model = Some(model.clone());
                let _ = state.save(&dirs.state);
            }
        }
        let trace = self.job_trace(&key);
        trace.record(
            EventKind::JobStarted,
            EventData {
                request_id: Some(request_id.clone()),
                model: Some(body.model.clone()),
                provider: Some(route.role.as_str().to_owned()),
                count: Some(chat.context_files.len() as u64),
                bytes: Some(content.len() as u64),
                reason: Some(route.mode.as_str().to_owned()),
                ..EventData::default()
            },
        );
        let spec = TurnSpec {
            trace,
            request_id: request_id.clone(),
            chat: key.clone(),
            model: body.model.clone(),
            body: Arc::new(body),
            stall_timeout: self.stall_timeout(),
            first_token_timeout: self.first_token_timeout(),
            local_server: self.is_local_server(route.role),
            max_retries: MAX_RETRIES,
            backoff: Duration::from_millis(self.config.retry_backoff_ms.unwrap_or(1000)),
            visible: true,
            tools: tools_mode,
            limits,
            root: self.root()?.to_path_buf(),
            interactions: self.interactions.clone(),
            edits,
            route,
        };
        self.send_notices(store, chat, &instructions, &ctx.outbox, &request_id);
        self.spawn_turn(spec, provider, ctx, None);
        Ok(())
    }

    /// The edit format of a turn with `model`: the chat's, else the configured one, and
    /// for `auto`
    /// blocks when the model's server refused tools before (`state.json`) or the cached
    /// model list says it does not support them; tools otherwise.
    pub(super) fn edit_format_for(&self, model: &str, chat: Option<EditFormat>) -> EditFormat {
        let configured = chat.unwrap_or_else(|| self.config.edit_format_for(model));
        if configured != EditFormat::Auto {
            return configured;
        }
        let Some(dirs) = &self.dirs else {
            return EditFormat::Auto;
        };
        let refused =
            GlobalState::load(&dirs.state).refuses_tools(model, chrono::Utc::now().timestamp());
        let listed_without = listed_without_tools(&dirs.state.join("models.json"), model);
        if refused || listed_without {
            EditFormat::Blocks
        } else {
            EditFormat::Auto
        }
    }

    pub(super) fn spawn_turn(
        &mut self,
        spec: TurnSpec,
        provider: Arc<dyn Provider>,
        ctx: &Ctx,
        first: Option<Box<TurnOutcome>>,
    ) {
        let cancel = CancellationToken::new();
        self.in_flight.insert(
            spec.request_id.clone(),
            InFlight {
                chat: spec.chat.clone(),
                cancel: cancel.clone(),
                closed_by_exit: false,
                planning: None,
            },
        );
        let outbox = ctx.outbox.clone();
        let internal = ctx.background.clone();
        let fallback = spec.clone();
        tokio::spawn(async move {
            // A bug in a turn must still end its stream and free the chat.
            let run = std::panic::AssertUnwindSafe(turn::run(provider, spec, outbox, cancel));
            let outcome = futures_util::FutureExt::catch_unwind(run)
                .await
                .unwrap_or_else(|_| TurnOutcome {
                    spec: fallback,
                    text: String::new(),
                    thinking: String::new(),
                    calls: Vec::new(),
                    steps: Vec::new(),
                    rounds: 0,
                    usage: None,
                    error: Some(crate::llm::ApiError::Decode(
                        "internal error while streaming the answer".into(),
                    )),
                    cancelled: false,
                    duration: 0.0,
                    blocks: Vec::new(),
                    fell_back_to_blocks: false,
                    finish_reason: None,
                    prompt_cut: None,
                    tools_exhausted: false,
                });
            let outcome = Box::new(outcome);
            let msg = match first {
                Some(first) => BackgroundResult::Repair {
                    first,
                    repair: outcome,
                },
                None => BackgroundResult::Turn(outcome),
            };
            let _ = internal.send(msg);
        });
    }

    /// The request of a turn without its tools: the conversation, usage with cost, the
    /// data-collection preference, the reasoning effort and the prompt cache key.
    pub(super) fn request_body(
        &self,
        model: &str,
        effort: Option<&str>,
        chat_id: &str,
        messages: Vec<ChatMessage>,
    ) -> ChatRequest {
        let mut request = ChatRequest::new(model, messages).with_usage();
        request.provider = Some(ProviderPrefs {
            data_collection: if self.config.allow_training {
                "allow"
            } else {
                "deny"
            },
            zdr: (self.config.allow_data_retention == Some(false)).then_some(true),
        });
        request.reasoning = effort.map(|e| Reasoning {
            effort: e.to_owned(),
        });
        if self.config.explicit_cache_key {
            request.prompt_cache_key = Some(format!("bb7:{chat_id}:{model}"));
        }
        request
    }

    /// `cancel`: stops the turn started by `target_request_id`.
    pub(super) fn cancel(&mut self, args: params::Cancel) -> Result<Ack> {
        let target = args.target_request_id.0;
        if !self.in_flight.contains_key(&target) && self.cancel_queued(&target) {
            return Ok(Ack {});
        }
        match self.in_flight.get(&target) {
            Some(f) => {
                f.cancel.cancel();
                // A turn being planned may be running its validation command: its
                // check (only its) is killed, so `ok` never stands beside it running.
                if f.planning.is_some() {
                    crate::project::scratch::kill_running_for(&target);
                }
                Ok(Ack {})
            }
            None => Err(Error::not_found("No active request to cancel")),
        }
    }

    /// `tool_approve`: lets the turn waiting for `approval_id` read, or not.
    pub(super) fn tool_approve(&mut self, args: params::ToolApprove) -> Result<Ack> {
        let answer = ClientAnswer::Approved(args.approved);
        self.answer_client("approval_id", &args.approval_id, answer)
    }

    /// `clarify`: hands the user's answer to the turn waiting for `question_id`.
    pub(super) fn clarify(&mut self, args: params::Clarify) -> Result<Ack> {
        let answer = ClientAnswer::Text(args.answer);
        self.answer_client("question_id", &args.question_id, answer)
    }

    fn answer_client(&mut self, id_field: &str, id: &str, value: ClientAnswer) -> Result<Ack> {
        let waiting = self.interactions.lock().ok().and_then(|mut m| m.remove(id));
        match waiting {
            Some(tx) => {
                let _ = tx.send(value);
                Ok(Ack {})
            }
            None => Err(Error::not_found(format!(
                "Nothing is waiting for {id_field} {id}"
            ))),
        }
    }

    /// Cancels every running turn (shutdown or end of input); their partial results
    /// are still saved as they come back.
    pub fn cancel_all(&mut self) {
        self.closing = true;
        for f in self.in_flight.values_mut() {
            if !f.cancel.is_cancelled() {
                f.closed_by_exit = true;
            }
            f.cancel.cancel();
        }
    }

    /// Whether any turn is still running.
    pub fn has_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// Handles a background result.
    pub fn on_background(&mut self, msg: BackgroundResult, ctx: &Ctx) -> Flow {
        let flow = self.on_background_result(msg, ctx);
        self.start_queued(ctx);
        flow
    }

    /// [`Session::on_background`] without starting queued sends: the request loop tells
    /// of the turn that ended before the next one starts (`server::holder`).
    pub(in crate::server) fn on_background_result(
        &mut self,
        msg: BackgroundResult,
        ctx: &Ctx,
    ) -> Flow {
        match msg {
            BackgroundResult::Turn(outcome) => self.finish_turn(outcome, None, ctx),
            BackgroundResult::Repair { first, repair } => {
                self.finish_turn(first, Some(repair), ctx)
            }
            BackgroundResult::Planned(planned) => self.finish_planned(*planned, ctx),
            BackgroundResult::Mcp(done) => self.finish_mcp(*done, ctx),
            BackgroundResult::Title {
                chat,
                title,
                request_id,
            } => {
                if let Err(e) = self.apply_title(&chat, &title) {
                    // Not on the wire, for the reason `spawn_title` gives.
                    let id = request_id.as_deref().unwrap_or("");
                    tracing::warn!(request_id = id, error = %e.message, "cannot save a title");
                } else {
                    let event = TurnMessage::TitleUpdated {
                        chat_id: chat.id,
                        title,
                    };
                    ctx.outbox.emit(&event, None);
                }
                Flow::Continue
            }
        }
    }

    pub(super) fn store_for(&self, key: &ChatKey) -> Result<ChatStore> {
        self.store(key.global)
    }

    /// Runs `change` on the chat of `key`: the active chat in memory, else the saved
    /// chat (whose lock this process still holds while its turn runs).
    pub(super) fn change_chat<R>(
        &mut self,
        key: &ChatKey,
        change: impl FnOnce(&mut Chat, ChatFiles) -> Result<R>,
    ) -> Result<R> {
        let store = match &self.active {
            Some(a) if a.chat.id == key.id && a.store.global == key.global => a.store.clone(),
            _ => self.store_for(key)?,
        };
        self.update_chat(&store, &key.id, |chat, files, _| change(chat, files))
    }

    /// A turn's stream ended: its calls are planned (off the loop when it has any),
    /// then [`Session::finish_planned`] completes it.
    pub(super) fn finish_turn(
        &mut self,
        first: Box<TurnOutcome>,
        repair: Option<Box<TurnOutcome>>,
        ctx: &Ctx,
    ) -> Flow {
        let rid = first.spec.request_id.clone();
        let key = first.spec.chat.clone();
        if let Err(e) = self.plan_turn(first, repair, ctx) {
            let msg = TurnMessage::Error {
                message: e.message,
                code: e.code,
                chat_id: key.id.clone(),
            };
            ctx.outbox.emit(&msg, Some(&rid));
            self.in_flight.remove(&rid);
            self.release_if_idle(&key);
        }
        Flow::Continue
    }

    /// Completes a turn whose calls are planned: commits, saves and tells the client.
    pub(super) fn finish_planned(&mut self, planned: PlannedTurn, ctx: &Ctx) -> Flow {
        let PlannedTurn {
            first,
            repair,
            plan,
            validation,
        } = planned;
        let rid = first.spec.request_id.clone();
        let key = first.spec.chat.clone();
        if !self.in_flight.contains_key(&rid) {
            // Saved without its changes already: bb7 was closed while it was planned.
            tracing::info!(request_id = %rid, "a plan came back after its turn was saved");
            return Flow::Continue;
        }
        let flow = match self.complete_turn(&first, repair.as_deref(), plan, validation, ctx) {
            // A hidden repair round now runs under the same request id.
            Ok(None) => return Flow::Continue,
            Ok(Some(flow)) => flow,
            Err(e) => {
                let msg = TurnMessage::Error {
                    message: e.message,
                    code: e.code,
                    chat_id: key.id.clone(),
                };
                ctx.outbox.emit(&msg, Some(&rid));
                Flow::Continue
            }
        };
        self.in_flight.remove(&rid);
        self.release_if_idle(&key);
        flow
    }

    pub(super) fn release_if_idle(&mut self, key: &ChatKey) {
        let active = self
            .active
            .as_ref()
            .is_some_and(|a| a.chat.id == key.id && a.store.global == key.global);
        if !active && !self.is_busy(key) {
            self.locks.remove(key);
        }
    }
}

/// Retries of 429/5xx before any content arrived.
pub(super) const MAX_RETRIES: u32 = 3;

/// Whether the cached model list at `path` lists `model` without tool support. The
/// list is read once per version of the file (it can be a megabyte), not per send.
fn listed_without_tools(path: &std::path::Path, model: &str) -> bool {
    type Seen = Option<(std::time::SystemTime, std::collections::HashSet<String>)>;
    static SEEN: std::sync::Mutex<Seen> = std::sync::Mutex::new(None);
    let Ok(modified) = std::fs::metadata(path).and_then(|m| m.modified()) else {
        return false;
    };
    let Ok(mut seen) = SEEN.lock() else {
        return false;
    };
    if seen.as_ref().is_none_or(|(at, _)| *at != modified) {
        let without = crate::llm::models::ModelsCache::load(path)
            .map(|c| {
                c.models
                    .into_iter()
                    .filter(|m| m.tools_known && !m.supports_tools)
                    .map(|m| m.id)
                    .collect()
            })
            .unwrap_or_default();
        *seen = Some((modified, without));
    }
    seen.as_ref()
        .is_some_and(|(_, without)| without.contains(model))
}
