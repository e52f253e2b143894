//! The model side of a session: `send` and its completion, `cancel`, titles, models,
//! balance and token estimates (issue 3; seed 001 "LLM Response Handling").

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Ctx, Flow, Session, chat_key, system_message};
use crate::chat::ids;
use crate::chat::model::{Chat, Message, Part, SnapshotRef};
use crate::chat::store::ChatStore;
use crate::config::GlobalState;
use crate::context::{ChatFiles, find_file};
use crate::edit::{self, DiffMode, FileAccess, Plan, ToolCall};
use crate::error::{Error, Result};
use crate::llm::openai::{OPENROUTER_BASE_URL, OpenAiCompatible};
use crate::llm::{ApiError, Provider, Usage};
use crate::project::fsutil::write_atomic;
use crate::prompt::assemble::{self, Instructions, PromptFile};
use crate::prompt::{SYSTEM_PROMPT, TITLE_PROMPT, TOOLS_PROMPT};
use crate::protocol::{Request, error_message, ok};
use crate::retrieval::ToolsMode;
use crate::server::turn::{self, ChatKey, TurnOutcome, TurnSpec};
use crate::tokens;

/// A turn that is still streaming.
pub(super) struct InFlight {
    pub(super) chat: ChatKey,
    cancel: CancellationToken,
}

/// Results of background work, handled by the server loop in arrival order.
pub enum Internal {
    /// A model turn ended (completed, failed or cancelled).
    Turn(Box<TurnOutcome>),
    /// A hidden repair round ended; `first` is the turn it repairs.
    Repair {
        /// The original turn.
        first: Box<TurnOutcome>,
        /// The repair turn.
        repair: Box<TurnOutcome>,
    },
    /// A title was generated for a chat.
    Title {
        /// The chat.
        chat: ChatKey,
        /// The new name.
        title: String,
    },
}

/// Default seconds without stream data before a turn fails.
const DEFAULT_STALL_SECS: u64 = 120;
/// Retries of 429/5xx before any content arrived.
const MAX_RETRIES: u32 = 3;
/// Hours the model list in `~/.bb7/models.json` is used before it is fetched again.
const MODELS_TTL_HOURS: i64 = 24;
/// Lines of a new file shown in a `write` change payload.
const PREVIEW_LINES: usize = 50;

impl Session {
    fn provider(&mut self) -> Result<Arc<dyn Provider>> {
        if let Some(p) = &self.provider {
            return Ok(p.clone());
        }
        let base = self
            .config
            .base_url
            .clone()
            .unwrap_or_else(|| OPENROUTER_BASE_URL.to_owned());
        if base.starts_with(OPENROUTER_BASE_URL) && !self.config.has_api_key() {
            return Err(Error::new(
                "api",
                "No API key: set OPENROUTER_API_KEY or api_key in ~/.config/bb7/config.json",
            ));
        }
        let p: Arc<dyn Provider> = Arc::new(
            OpenAiCompatible::new(&base, self.config.api_key.clone())
                .map_err(|e| Error::new("api", e.user_message()))?,
        );
        self.provider = Some(p.clone());
        Ok(p)
    }

    fn instruction_files(&self) -> Result<Vec<Instructions>> {
        let mut out = Vec::new();
        if let Some(dirs) = &self.dirs
            && let Ok(text) = std::fs::read_to_string(dirs.global_instructions())
        {
            out.push(Instructions {
                source: "~/.config/bb7/instructions.md".into(),
                text,
            });
        }
        match self.project_instructions() {
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

    fn system_prompt_base(&self) -> String {
        self.dirs
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.system_override()).ok())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| SYSTEM_PROMPT.to_owned())
    }

    /// Starts a turn in the active chat: saves the user message with its context
    /// snapshot, then streams in the background.
    pub(super) fn send(&mut self, req: &Request, ctx: &Ctx) -> Result<()> {
        let content = req.str("content")?.to_owned();
        if content.trim().is_empty() {
            return Err(Error::invalid("Message is empty"));
        }
        let request_id = req
            .request_id
            .clone()
            .ok_or_else(|| Error::invalid("Missing required field: request_id"))?;
        if self.in_flight.contains_key(&request_id) {
            return Err(Error::invalid(
                "request_id is already in use by a running request",
            ));
        }
        let active = self.active()?;
        if let Some(id) = req.opt_str("chat_id")?
            && id != active.chat.id
        {
            return Err(Error::invalid(
                "chat_id must name the active chat; select it first",
            ));
        }
        let key = chat_key(&active.store, &active.chat.id);
        if self.is_busy(&key) {
            return Err(Error::new("busy", "Another request is already in progress"));
        }
        let diff_mode = DiffMode::parse(self.config.diff_mode.as_deref())?;
        let tools_mode =
            ToolsMode::parse(self.active()?.chat.tools.as_deref()).map_err(Error::invalid)?;
        let instructions = self.instruction_files()?;
        let provider = self.provider()?;
        let chat_model = self.active()?.chat.model.clone();
        let model = match req.opt_str("model")? {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ if chat_model.is_empty() => crate::config::FALLBACK_MODEL.to_owned(),
            _ => chat_model,
        };
        let effort = match req.opt_str("reasoning_effort")? {
            Some(e) if e.is_empty() || e == "none" => None,
            Some(e) => Some(e.to_owned()),
            None => self
                .active
                .as_ref()
                .and_then(|a| a.chat.reasoning_effort.clone()),
        };

        let mut base = self.system_prompt_base();
        if tools_mode != ToolsMode::Off {
            base = format!("{}\n\n{}", base.trim_end(), TOOLS_PROMPT.trim_end());
        }
        let system = assemble::system_text(&base, &instructions);
        let (files, snapshot) = {
            let a = self.active()?;
            prompt_files(&a.chat, ChatFiles::new(&a.store, &a.chat.id))?
        };
        let history = self.active()?.chat.messages.clone();
        let user = assemble::user_text(&history, &files, &content);
        let mut body = self.request_body(
            &model,
            effort.as_deref(),
            &key.id,
            diff_mode,
            assemble::messages(&system, &user),
        );
        if tools_mode != ToolsMode::Off
            && let Some(tools) = body["tools"].as_array_mut()
        {
            tools.extend(crate::retrieval::definitions());
        }

        let content_for_msg = content.clone();
        let (model_c, effort_c) = (model.clone(), effort.clone());
        self.mutate(move |chat, _, _| {
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
        let spec = TurnSpec {
            request_id: request_id.clone(),
            chat: key.clone(),
            body,
            model,
            stall_timeout: Duration::from_secs(
                self.config
                    .stream_timeout_secs
                    .unwrap_or(DEFAULT_STALL_SECS)
                    .max(1),
            ),
            max_retries: MAX_RETRIES,
            backoff: Duration::from_millis(self.config.retry_backoff_ms.unwrap_or(1000)),
            visible: true,
            tools: tools_mode,
            root: self.root()?.to_path_buf(),
            interactions: self.interactions.clone(),
        };
        self.spawn_turn(spec, provider, ctx, None);
        Ok(())
    }

    fn spawn_turn(
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
            },
        );
        let outbox = ctx.outbox.clone();
        let internal = ctx.internal.clone();
        tokio::spawn(async move {
            let outcome = Box::new(turn::run(provider, spec, outbox, cancel).await);
            let msg = match first {
                Some(first) => Internal::Repair {
                    first,
                    repair: outcome,
                },
                None => Internal::Turn(outcome),
            };
            let _ = internal.send(msg);
        });
    }

    fn request_body(
        &self,
        model: &str,
        effort: Option<&str>,
        chat_id: &str,
        mode: DiffMode,
        messages: Vec<Value>,
    ) -> Value {
        let mut body = json!({
            "model": model,
            "messages": messages,
            "tools": edit::tool_definitions(mode),
            "tool_choice": "auto",
            "usage": {"include": true},
            "stream_options": {"include_usage": true},
        });
        let mut provider =
            json!({"data_collection": if self.config.allow_training { "allow" } else { "deny" }});
        if self.config.allow_data_retention == Some(false) {
            provider["zdr"] = json!(true);
        }
        body["provider"] = provider;
        if let Some(e) = effort {
            body["reasoning"] = json!({"effort": e});
        }
        if self.config.explicit_cache_key {
            body["prompt_cache_key"] = json!(format!("bb7:{chat_id}:{model}"));
        }
        body
    }

    /// `cancel`: stops the turn started by `target_request_id`.
    pub(super) fn cancel(&mut self, req: &Request) -> Result<Value> {
        let target = match req.fields.get("target_request_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            None | Some(Value::Null) => {
                return Err(Error::invalid("Missing required field: target_request_id"));
            }
            Some(_) => return Err(Error::invalid("Field 'target_request_id' must be a string")),
        };
        match self.in_flight.get(&target) {
            Some(f) => {
                f.cancel.cancel();
                Ok(ok())
            }
            None => Err(Error::not_found("No active request to cancel")),
        }
    }

    /// `tool_approve` / `clarify`: hands the client's answer to the turn waiting for it.
    pub(super) fn answer_client(
        &mut self,
        req: &Request,
        id_field: &str,
        value_field: &str,
    ) -> Result<Value> {
        let id = req.non_empty_str(id_field)?;
        let value = match value_field {
            "approved" => Value::Bool(req.bool("approved")?),
            _ => Value::String(req.str(value_field)?.to_owned()),
        };
        let waiting = self.interactions.lock().ok().and_then(|mut m| m.remove(id));
        match waiting {
            Some(tx) => {
                let _ = tx.send(value);
                Ok(ok())
            }
            None => Err(Error::not_found(format!(
                "Nothing is waiting for {id_field} {id}"
            ))),
        }
    }

    /// Cancels every running turn (shutdown or end of input); their partial results
    /// are still saved as they come back.
    pub fn cancel_all(&mut self) {
        for f in self.in_flight.values() {
            f.cancel.cancel();
        }
    }

    /// Whether any turn is still running.
    pub fn has_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// Handles a background result.
    pub fn on_internal(&mut self, msg: Internal, ctx: &Ctx) -> Flow {
        match msg {
            Internal::Turn(outcome) => self.finish_turn(outcome, None, ctx),
            Internal::Repair { first, repair } => self.finish_turn(first, Some(repair), ctx),
            Internal::Title { chat, title } => {
                if let Err(e) = self.apply_title(&chat, &title) {
                    ctx.outbox.send_error(&e, None);
                } else {
                    ctx.outbox.send(
                        json!({"type": "title_updated", "chat_id": chat.id, "title": title}),
                        None,
                    );
                }
                Flow::Continue
            }
        }
    }

    fn store_for(&self, key: &ChatKey) -> Result<ChatStore> {
        self.store(key.global)
    }

    /// Runs `change` on the chat of `key`: the active chat in memory, else the saved
    /// chat (whose lock this process still holds while its turn runs).
    fn change_chat<R>(
        &mut self,
        key: &ChatKey,
        change: impl FnOnce(&mut Chat, ChatFiles) -> Result<R>,
    ) -> Result<R> {
        if let Some(a) = self.active.as_mut()
            && a.chat.id == key.id
            && a.store.global == key.global
        {
            let mut chat = a.chat.clone();
            let r = change(&mut chat, ChatFiles::new(&a.store, &key.id))?;
            a.store.save(&chat)?;
            a.chat = chat;
            return Ok(r);
        }
        let store = self.store_for(key)?;
        let mut chat = store.load(&key.id)?;
        let r = change(&mut chat, ChatFiles::new(&store, &key.id))?;
        store.save(&chat)?;
        Ok(r)
    }

    fn finish_turn(
        &mut self,
        first: Box<TurnOutcome>,
        repair: Option<Box<TurnOutcome>>,
        ctx: &Ctx,
    ) -> Flow {
        let rid = first.spec.request_id.clone();
        let key = first.spec.chat.clone();
        let flow = match self.complete_turn(&first, repair.as_deref(), ctx) {
            // A hidden repair round now runs under the same request id.
            Ok(None) => return Flow::Continue,
            Ok(Some(flow)) => flow,
            Err(e) => {
                ctx.outbox
                    .send(with_chat(error_message(&e), &key.id), Some(&rid));
                Flow::Continue
            }
        };
        self.in_flight.remove(&rid);
        self.release_if_idle(&key);
        flow
    }

    fn release_if_idle(&mut self, key: &ChatKey) {
        let active = self
            .active
            .as_ref()
            .is_some_and(|a| a.chat.id == key.id && a.store.global == key.global);
        if !active && !self.is_busy(key) {
            self.locks.remove(key);
        }
    }

    /// Saves the turn's result and tells the client. Returns `Flow::Exit` after an
    /// attempt to write outside the project (seed 001, "Output Rules": hard guard), and
    /// `None` when it started a hidden repair round instead of finishing.
    fn complete_turn(
        &mut self,
        first: &TurnOutcome,
        repair: Option<&TurnOutcome>,
        ctx: &Ctx,
    ) -> Result<Option<Flow>> {
        let key = first.spec.chat.clone();
        let rid = first.spec.request_id.clone();
        let root = self.root()?.to_path_buf();
        let mode = DiffMode::parse(self.config.diff_mode.as_deref())?;
        let mut usage = first.usage.clone().unwrap_or_default();
        if let Some(r) = repair {
            usage.add(&r.usage.clone().unwrap_or_default());
        }
        let duration = first.duration + repair.map(|r| r.duration).unwrap_or(0.0);

        // Which calls to apply: all of a finished response; on cancel, the complete
        // ones (seed 001: writes finished before cancellation remain); none on error.
        let failed = first
            .error
            .clone()
            .or_else(|| repair.and_then(|r| r.error.clone()));
        let cancelled = first.cancelled || repair.is_some_and(|r| r.cancelled);
        let mut calls: Vec<ToolCall> = first.calls.clone();
        if cancelled {
            calls.retain(|c| serde_json::from_str::<Value>(&c.arguments).is_ok());
        }
        if failed.is_some() {
            calls.clear();
        }
        let mut plan = self.plan_calls(&key, &calls, mode, &root)?;
        if let Some(r) = repair {
            // Keep what applied the first time, then the repair's calls.
            let kept: Vec<ToolCall> = calls
                .iter()
                .zip(plan.reports.iter())
                .filter(|(_, rep)| rep.status == "ok")
                .map(|(c, _)| c.clone())
                .chain(r.calls.iter().cloned())
                .collect();
            calls = kept;
            plan = self.plan_calls(&key, &calls, mode, &root)?;
        } else if !plan.ok()
            && plan.escape.is_none()
            && !cancelled
            && failed.is_none()
            && first.rounds == 1
            && self.config.auto_retry_partial_edits
        {
            self.start_repair(first, &plan, ctx)?;
            return Ok(None);
        }

        let mut text = first.text.clone();
        let mut thinking = first.thinking.clone();
        if let Some(r) = repair {
            thinking.push_str(&r.thinking);
            if !r.text.trim().is_empty() {
                text.push_str("\n\n");
                text.push_str(&r.text);
            }
        }

        if let Some(path) = plan.escape.clone() {
            let message = format!(
                "The model tried to write outside the project ({path}). Nothing was written and bb7 stopped for safety; restart it."
            );
            self.change_chat(&key, |chat, _| {
                push_assistant(chat, first, &text, &thinking, &usage, None);
                chat.messages.push(system_message(message.clone()));
                Ok(())
            })?;
            ctx.outbox.send(
                with_chat(
                    json!({"type": "error", "code": "path_escape", "message": message}),
                    &key.id,
                ),
                Some(&rid),
            );
            return Ok(Some(Flow::Exit(3)));
        }

        if !plan.ok() {
            let errors = plan.errors();
            let retry_context = format!(
                "Your file changes in the previous response could not be applied, so none of them were written:\n{}\nRepeat all changes of that response, with corrected edits.",
                errors
                    .iter()
                    .map(|e| format!("- {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            self.change_chat(&key, |chat, _| {
                push_assistant(chat, first, &text, &thinking, &usage, None);
                chat.messages.push(system_message(retry_context.clone()));
                Ok(())
            })?;
            ctx.outbox.send(
                with_chat(
                    json!({"type": "diff_error", "errors": errors, "tool_calls": plan.reports,
                           "usage": usage, "duration": duration}),
                    &key.id,
                ),
                Some(&rid),
            );
            return Ok(Some(Flow::Continue));
        }

        let changes = self.commit_plan(&key, &plan, &root)?;
        let output_files: Vec<String> = plan.writes.keys().cloned().collect();
        let end_note = if cancelled {
            Some("Response aborted by user.".to_owned())
        } else {
            failed.as_ref().map(ApiError::user_message)
        };
        let plan_ref = &plan;
        self.change_chat(&key, |chat, _| {
            let anything = !text.is_empty() || !thinking.is_empty() || !plan_ref.writes.is_empty();
            if anything {
                push_assistant(chat, first, &text, &thinking, &usage, Some(plan_ref));
            }
            if let Some(note) = &end_note {
                chat.messages.push(system_message(note.clone()));
            }
            Ok(())
        })?;
        if let Some(e) = &failed {
            let err = Error::new("api", e.user_message());
            ctx.outbox
                .send(with_chat(error_message(&err), &key.id), Some(&rid));
            return Ok(Some(Flow::Continue));
        }
        let mut done = json!({
            "type": "done",
            "chat_id": key.id,
            "output_files": output_files,
            "usage": usage,
            "duration": (duration * 1000.0).round() / 1000.0,
            "changes": changes,
        });
        if cancelled {
            done["cancelled"] = json!(true);
        }
        ctx.outbox.send(done, Some(&rid));
        if !cancelled {
            self.maybe_auto_title(&key, ctx);
        }
        Ok(Some(Flow::Continue))
    }

    fn plan_calls(
        &self,
        key: &ChatKey,
        calls: &[ToolCall],
        mode: DiffMode,
        root: &std::path::Path,
    ) -> Result<Plan> {
        let store = self.store_for(key)?;
        let chat = match &self.active {
            Some(a) if a.chat.id == key.id && a.store.global == key.global => a.chat.clone(),
            _ => store.load(&key.id)?,
        };
        let files = ChatFiles::new(&store, &key.id);
        let access = |rel: &str| file_access(&chat, files, rel);
        Ok(edit::plan(calls, mode, root, &access))
    }

    /// Writes every planned output together (see `ChatFiles::commit_outputs`) and
    /// returns the change payloads.
    fn commit_plan(
        &self,
        key: &ChatKey,
        plan: &Plan,
        root: &std::path::Path,
    ) -> Result<Vec<Value>> {
        let store = self.store_for(key)?;
        ChatFiles::new(&store, &key.id).commit_outputs(&plan.writes)?;
        Ok(plan
            .writes
            .iter()
            .map(|(path, content)| {
                change_payload(path, plan.bases.get(path).cloned().flatten(), content, root)
            })
            .collect())
    }

    fn start_repair(&mut self, first: &TurnOutcome, plan: &Plan, ctx: &Ctx) -> Result<()> {
        let provider = self.provider()?;
        let mut body = first.spec.body.clone();
        if let Some(msgs) = body["messages"].as_array_mut() {
            msgs.push(edit::assistant_message(&first.text, &first.calls));
            for (c, r) in first.calls.iter().zip(plan.reports.iter()) {
                let content = match &r.error {
                    Some(e) => format!("Failed: {e}"),
                    None => "Applied.".to_owned(),
                };
                msgs.push(json!({"role": "tool", "tool_call_id": c.id, "content": content}));
            }
            msgs.push(json!({"role": "user", "content": "Some edits failed and nothing was written yet. Call the tools again for the failed changes only, with corrected arguments. Do not repeat the ones that applied."}));
        }
        let mut spec = first.spec.clone();
        spec.body = body;
        spec.visible = false;
        spec.tools = ToolsMode::Off;
        self.in_flight.remove(&spec.request_id);
        self.spawn_turn(spec, provider, ctx, Some(Box::new(first.clone())));
        Ok(())
    }

    fn maybe_auto_title(&mut self, key: &ChatKey, ctx: &Ctx) {
        let Some(title_model) = self.config.title_model.clone().filter(|m| !m.is_empty()) else {
            return;
        };
        let chat = match &self.active {
            Some(a) if a.chat.id == key.id => a.chat.clone(),
            _ => return,
        };
        if !assemble::is_first_exchange(&chat) || !chat.name.starts_with("Chat ") {
            return;
        }
        let first = chat
            .messages
            .iter()
            .find(|m| m.role == "user")
            .map(Message::text)
            .unwrap_or_default();
        if let Ok(provider) = self.provider() {
            spawn_title(provider, title_model, key.clone(), first, ctx.clone());
        }
    }

    /// `generate_title`: replies `ok`, then a `title_updated` event.
    pub(super) fn generate_title(&mut self, req: &Request, ctx: &Ctx) -> Result<Value> {
        let id = req.non_empty_str("chat_id")?.to_owned();
        let content = req.str("content")?.to_owned();
        let store = self.find_store(&id)?;
        let model = self
            .config
            .title_model
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "anthropic/claude-3-haiku".to_owned());
        let provider = self.provider()?;
        spawn_title(provider, model, chat_key(&store, &id), content, ctx.clone());
        Ok(ok())
    }

    fn apply_title(&mut self, key: &ChatKey, title: &str) -> Result<()> {
        let store = self.store_for(key)?;
        if let Some(a) = self.active.as_mut()
            && a.chat.id == key.id
            && a.store.global == key.global
        {
            let mut chat = a.chat.clone();
            store.rename(&mut chat, title)?;
            a.chat = chat;
            return Ok(());
        }
        if self.is_busy(key) {
            let mut chat = store.load(&key.id)?;
            return store.rename(&mut chat, title);
        }
        let _lock = crate::project::lock::ChatLock::acquire(&store.chat_dir(&key.id)?)?;
        let mut chat = store.load(&key.id)?;
        store.rename(&mut chat, title)
    }

    /// `get_models`: from the on-disk cache unless `refresh`, else fetched in the
    /// background (the reply then comes later).
    pub(super) fn get_models(&mut self, req: &Request, ctx: &Ctx) -> Result<Option<Value>> {
        let refresh = req.bool_or("refresh", false)?;
        let cache = self.dirs()?.state.join("models.json");
        let cached = std::fs::read(&cache)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        if let Some(c) = &cached
            && !refresh
            && c["fetched_at"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| {
                    chrono::Utc::now().signed_duration_since(t)
                        < chrono::Duration::hours(MODELS_TTL_HOURS)
                })
        {
            return Ok(Some(
                json!({"type": "models", "models": c["models"].clone()}),
            ));
        }
        let stale = cached.map(|c| c["models"].clone());
        let provider = self.provider()?;
        let outbox = ctx.outbox.clone();
        let rid = req.request_id.clone();
        tokio::spawn(async move {
            match provider.get_json("models".into()).await {
                Ok(v) => {
                    let models = map_models(&v);
                    let _ = write_atomic(
                        &cache,
                        json!({"fetched_at": ids::now_rfc3339(), "models": models})
                            .to_string()
                            .as_bytes(),
                    );
                    outbox.send(json!({"type": "models", "models": models}), rid.as_deref());
                }
                // An old list beats none when the API cannot be reached.
                Err(_) if stale.is_some() => {
                    outbox.send(
                        json!({"type": "models", "models": stale, "stale": true}),
                        rid.as_deref(),
                    );
                }
                Err(e) => outbox.send_error(&Error::new("api", e.user_message()), rid.as_deref()),
            }
        });
        Ok(None)
    }

    /// `get_balance`: `{"type":"balance","total_credits","total_usage"}` from
    /// `/credits`; servers without it get a clear error.
    pub(super) fn get_balance(&mut self, req: &Request, ctx: &Ctx) -> Result<()> {
        let provider = self.provider()?;
        let outbox = ctx.outbox.clone();
        let rid = req.request_id.clone();
        tokio::spawn(async move {
            match provider.get_json("credits".into()).await {
                Ok(v) => {
                    let d = &v["data"];
                    outbox.send(
                        json!({"type": "balance",
                               "total_credits": d["total_credits"].as_f64().unwrap_or(0.0),
                               "total_usage": d["total_usage"].as_f64().unwrap_or(0.0)}),
                        rid.as_deref(),
                    );
                }
                Err(ApiError::Http { status: 404, .. }) => outbox.send_error(
                    &Error::new("api", "This model API has no balance endpoint (/credits)"),
                    rid.as_deref(),
                ),
                Err(e) => outbox.send_error(&Error::new("api", e.user_message()), rid.as_deref()),
            }
        });
        Ok(())
    }

    /// `estimate_tokens`: the parts of the next request (seed 001, "Token Estimation").
    pub(super) fn estimate_tokens(&self, req: &Request) -> Result<Value> {
        let input = req.opt_str("input_text")?.unwrap_or("");
        let a = self.active()?;
        let system_prompt = tokens::count(&self.system_prompt_base());
        let instructions: usize = self
            .instruction_files()
            .unwrap_or_default()
            .iter()
            .map(|i| tokens::count(&i.text))
            .sum();
        let history = tokens::count(&assemble::history_text(&a.chat.messages));
        let files = ChatFiles::new(&a.store, &a.chat.id);
        let mut rows = Vec::new();
        let mut context_total = 0;
        for cf in &a.chat.context_files {
            let snap = files.read_snapshot(cf).unwrap_or_default();
            let original = tokens::count_cached(&cf.version, &snap);
            let output = if cf.is_section() || cf.external {
                None
            } else {
                files.read_output(&cf.path)?
            };
            let mut row =
                json!({"path": cf.path, "tokens": original, "has_output": output.is_some()});
            if let Some(out) = &output {
                let out_tokens = tokens::count_cached(&ids::file_version(&cf.path, out), out);
                row["tokens"] = json!(out_tokens);
                row["original_tokens"] = json!(original);
                row["output_tokens"] = json!(out_tokens);
                context_total += out_tokens;
            } else {
                context_total += original;
            }
            if let (Some(s), Some(e)) = (cf.start_line, cf.end_line) {
                row["start_line"] = json!(s);
                row["end_line"] = json!(e);
            }
            rows.push(row);
        }
        for rel in files.list_outputs()? {
            if find_file(&a.chat, &rel).is_some() {
                continue;
            }
            let out = files.read_output(&rel)?.unwrap_or_default();
            let t = tokens::count_cached(&ids::file_version(&rel, &out), &out);
            context_total += t;
            rows.push(json!({"path": rel, "tokens": t, "has_output": true, "output_tokens": t}));
        }
        let input_tokens = tokens::count(input);
        Ok(json!({
            "type": "token_estimate",
            "total": system_prompt + instructions + history + context_total + input_tokens,
            "context_files": context_total,
            "history": history,
            "instructions": instructions,
            "system_prompt": system_prompt,
            "input_text": input_tokens,
            "files": rows,
            // bb7 sends only the pending version of a changed file, so applying
            // output saves no prompt tokens.
            "potential_savings": 0,
        }))
    }

    /// `estimate_text_tokens`: one count per text.
    pub(super) fn estimate_text_tokens(&self, req: &Request) -> Result<Value> {
        let texts = req
            .opt_str_list("texts")?
            .ok_or_else(|| Error::invalid("Missing required field: texts"))?;
        let counts: Vec<usize> = texts.iter().map(|t| tokens::count(t)).collect();
        Ok(json!({"type": "text_token_estimate", "tokens": counts}))
    }
}

fn with_chat(mut msg: Value, chat_id: &str) -> Value {
    msg["chat_id"] = json!(chat_id);
    msg
}

/// Files for the prompt, and the context snapshot recorded on the user message.
fn prompt_files(chat: &Chat, files: ChatFiles) -> Result<(Vec<PromptFile>, Vec<SnapshotRef>)> {
    let mut out = Vec::new();
    let mut snapshot = Vec::new();
    for cf in &chat.context_files {
        snapshot.push(SnapshotRef {
            path: cf.path.clone(),
            file_id: cf.version.clone(),
            start_line: cf.start_line,
            end_line: cf.end_line,
        });
        let snap = files.read_snapshot(cf)?;
        let writable = !cf.readonly && !cf.external && !cf.is_section();
        let output = if writable {
            files.read_output(&cf.path)?
        } else {
            None
        };
        let (content, file_id, pending) = match output {
            Some(o) if o != snap => {
                let id = ids::file_version(&cf.path, &o);
                (o, id, true)
            }
            _ => (snap, cf.version.clone(), false),
        };
        out.push(PromptFile {
            entry: cf.clone(),
            content,
            file_id,
            pending_output: pending,
            writable,
        });
    }
    for rel in files.list_outputs()? {
        if find_file(chat, &rel).is_some() {
            continue;
        }
        let content = files.read_output(&rel)?.unwrap_or_default();
        out.push(PromptFile {
            entry: crate::chat::model::ContextFile {
                path: rel.clone(),
                readonly: false,
                external: false,
                version: ids::file_version(&rel, &content),
                start_line: None,
                end_line: None,
            },
            file_id: ids::file_version(&rel, &content),
            content,
            pending_output: true,
            writable: true,
        });
    }
    Ok((out, snapshot))
}

/// What the model may do with `rel`, matching what [`prompt_files`] showed it.
fn file_access(chat: &Chat, files: ChatFiles, rel: &str) -> FileAccess {
    let output = files.read_output(rel).ok().flatten();
    if let Some(i) = find_file(chat, rel) {
        let cf = &chat.context_files[i];
        if cf.readonly || cf.external {
            return FileAccess::ReadOnly("it is marked read-only in context".into());
        }
        let content = output
            .or_else(|| files.read_snapshot(cf).ok())
            .unwrap_or_default();
        return FileAccess::Writable {
            file_id: ids::file_version(rel, &content),
            content,
        };
    }
    if chat.context_files.iter().any(|c| c.path == rel) {
        return FileAccess::ReadOnly("only a section of it is in context".into());
    }
    match output {
        Some(content) => FileAccess::Writable {
            file_id: ids::file_version(rel, &content),
            content,
        },
        None => FileAccess::Absent,
    }
}

/// Appends the assistant message of a turn: thinking, text, and an
/// `AssistantWriteFile` event per written file.
fn push_assistant(
    chat: &mut Chat,
    turn: &TurnOutcome,
    text: &str,
    thinking: &str,
    usage: &Usage,
    plan: Option<&Plan>,
) {
    let mut parts = Vec::new();
    if !thinking.is_empty() {
        parts.push(Part::thinking(thinking));
    }
    for step in &turn.steps {
        let mut p = Part {
            kind: "tool_call".into(),
            content: step["summary"].as_str().map(str::to_owned),
            ..Part::default()
        };
        for k in ["name", "arguments", "status"] {
            p.extra.insert(k.into(), step[k].clone());
        }
        parts.push(p);
    }
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    let mut outputs = Vec::new();
    if let Some(plan) = plan {
        for (path, content) in &plan.writes {
            let mut e = Part::event("AssistantWriteFile", path);
            e.version = Some(ids::file_version(path, content));
            if plan.bases.get(path).is_some_and(Option::is_none) {
                e.added = Some(true);
            }
            parts.push(e);
            outputs.push(path.clone());
        }
    }
    let mut msg = Message {
        role: "assistant".into(),
        model: Some(turn.spec.model.clone()),
        parts,
        timestamp: Some(ids::now_rfc3339()),
        output_files: (!outputs.is_empty()).then_some(outputs),
        ..Message::default()
    };
    if let Ok(u) = serde_json::to_value(usage) {
        msg.extra.insert("usage".into(), u);
    }
    if let Some(e) = turn
        .spec
        .body
        .pointer("/reasoning/effort")
        .and_then(Value::as_str)
    {
        msg.extra.insert("reasoning_effort".into(), json!(e));
    }
    chat.messages.push(msg);
}

/// The typed change payload of one written file (seed 004; PROTOCOL.md "typed change
/// payloads"): `edit` with a unified diff from the version the model saw, or `write`
/// with a preview for a file the model had not seen.
pub fn change_payload(
    path: &str,
    base: Option<String>,
    content: &str,
    root: &std::path::Path,
) -> Value {
    let file_id = ids::file_version(path, content);
    let content_lines = content.lines().count();
    match base {
        Some(old) => {
            let diff = similar::TextDiff::from_lines(old.as_str(), content);
            let unified = crate::review::hunks::unified_diff(path, &old, content);
            let hunks = diff.grouped_ops(3).len();
            let (mut added, mut removed) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    similar::ChangeTag::Insert => added += 1,
                    similar::ChangeTag::Delete => removed += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            json!({
                "type": "edit",
                "path": path,
                "description": format!("Edit {path}: {hunks} hunk{}, +{added} \u{2212}{removed}", if hunks == 1 { "" } else { "s" }),
                "file_id": file_id,
                "file_exists": root.join(path).exists(),
                "existing_lines": old.lines().count(),
                "content_lines": content_lines,
                "unified_diff": unified,
                "diff_lines": unified.lines().count(),
            })
        }
        None => {
            let exists = root.join(path).exists();
            let preview: String = content.split_inclusive('\n').take(PREVIEW_LINES).collect();
            json!({
                "type": "write",
                "path": path,
                "description": format!("Write {content_lines} lines to {path}{}", if exists { " (replaces the local file)" } else { " (new file)" }),
                "file_id": file_id,
                "file_exists": exists,
                "content_lines": content_lines,
                "content_bytes": content.len(),
                "preview_truncated": preview.len() < content.len(),
                "preview": preview,
            })
        }
    }
}

fn spawn_title(
    provider: Arc<dyn Provider>,
    model: String,
    chat: ChatKey,
    content: String,
    ctx: Ctx,
) {
    tokio::spawn(async move {
        let excerpt: String = content.chars().take(2000).collect();
        let body = json!({
            "model": model,
            "messages": [
                {"role": "system", "content": TITLE_PROMPT},
                {"role": "user", "content": excerpt},
            ],
            "max_tokens": 30,
        });
        match provider.complete(body).await {
            Ok(v) => {
                let raw = v
                    .pointer("/choices/0/message/content")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let title = clean_title(raw);
                if !title.is_empty() {
                    let _ = ctx.internal.send(Internal::Title { chat, title });
                }
            }
            Err(e) => ctx.outbox.send_error(
                &Error::new(
                    "api",
                    format!("Title generation failed: {}", e.user_message()),
                ),
                None,
            ),
        }
    });
}

fn clean_title(raw: &str) -> String {
    let line = raw.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let t = line
        .trim()
        .trim_matches(|c| c == '"' || c == '\'' || c == '*' || c == '#')
        .trim();
    let t = t.trim_end_matches(['.', '!', '?']);
    t.chars().take(80).collect()
}

/// The `get_models` rows from an OpenRouter-style `/models` answer.
fn map_models(v: &Value) -> Vec<Value> {
    let num = |x: &Value| -> f64 {
        match x {
            Value::String(s) => s.parse().unwrap_or(0.0),
            other => other.as_f64().unwrap_or(0.0),
        }
    };
    v["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| {
                    let params: Vec<&str> = m["supported_parameters"]
                        .as_array()
                        .map(|p| p.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    json!({
                        "id": m["id"],
                        "name": m.get("name").cloned().unwrap_or_else(|| m["id"].clone()),
                        "context_length": m["context_length"].as_u64().unwrap_or(0),
                        "supports_reasoning": params.iter().any(|p| *p == "reasoning" || *p == "include_reasoning"),
                        "supports_tools": params.contains(&"tools"),
                        "pricing": {"prompt": num(&m["pricing"]["prompt"]), "completion": num(&m["pricing"]["completion"])},
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}
