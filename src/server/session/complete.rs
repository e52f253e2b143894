//! Completing a model turn: planning and committing its file tool calls, the hidden repair
//! round, the assistant message and the change payloads of `done`.

use super::{BackgroundResult, Ctx, Flow, PlannedTurn, Planning, Session};
use crate::chat::ChatKey;
use crate::chat::ids;
use crate::chat::model::Chat;
use crate::chat::store::ChatStore;
use crate::context::{ChatFiles, StoreError, find_file};
use crate::edit::request::ProposedEdit;
use crate::edit::{self, CallCode, CallStatus, FileAccess, Plan};
use crate::error::ErrorCode;
use crate::error::Result;
use crate::llm::Usage;
use crate::llm::request::{ChatMessage, ChatRequest, Role};
use crate::protocol::events::Change;
use crate::tools::{DiffMode, ToolCall, ToolsMode};
use crate::turn::complete::{Ended, INTERRUPTED_PLANNING, REPAIR_REQUEST, complete, unplanned};
use crate::turn::stream::TurnOutcome;
use std::sync::Arc;

/// Lines of a new file shown in a `write` change payload.
const PREVIEW_LINES: usize = 50;

impl Session {
    /// Plans a finished turn's file calls and reports the plan back to the request
    /// loop as [`BackgroundResult::Planned`]. Matching edits costs time in the size of
    /// the edits and files (a model may send a 20 MB line), so a turn with calls is
    /// planned on a blocking thread and `ping`, `cancel` and other chats keep being
    /// answered meanwhile (invariant 15); the turn stays in flight, and its chat busy,
    /// until the plan is committed.
    pub(super) fn plan_turn(
        &mut self,
        mut first: Box<TurnOutcome>,
        mut repair: Option<Box<TurnOutcome>>,
        ctx: &Ctx,
    ) -> Result<()> {
        let key = first.spec.chat.clone();
        let root = self.root()?.to_path_buf();
        let mode = DiffMode::parse(self.config.diff_mode.as_deref())?;
        let store = self.store_for(&key)?;
        let chat = match &self.active {
            Some(a) if a.chat.id == key.id && a.store.global == key.global => a.chat.clone(),
            _ => store.load(&key.id)?,
        };
        let turns: Vec<&TurnOutcome> = std::iter::once(&*first).chain(repair.as_deref()).collect();
        let read = super::read_edits::read_paths(&chat, &turns, &root);
        let background = ctx.background.clone();
        // The validation gate runs with the plan, on its thread: copying the project
        // and running the command take as long as they take (invariant 15).
        let validate = self
            .config
            .hybrid_validate_command
            .clone()
            .filter(|c| first.spec.route.is_hybrid_local() && !c.trim().is_empty())
            .filter(|_| repair.is_none())
            // Only the user's own choice of `hybrid_auto` runs the command: the
            // config's `agent_mode`, or a client of this process; a chat file that
            // says `hybrid_auto` (perhaps planted in a clone) gets no validation.
            .filter(|_| {
                self.config.agent_mode == Some(crate::config::AgentMode::HybridAuto)
                    || self.hybrid_chosen.contains(&key)
            });
        // Where the command may write besides its copy (the user's own config only).
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let writable: Vec<std::path::PathBuf> = self
            .config
            .hybrid_validate_writable
            .iter()
            .flatten()
            .filter_map(|p| match p.strip_prefix("~/") {
                Some(rest) => home.as_ref().map(|h| h.join(rest)),
                None => Some(std::path::PathBuf::from(p)),
            })
            .collect();
        let has_calls = !first.calls.is_empty()
            || !first.blocks.is_empty()
            || repair.as_ref().is_some_and(|r| !r.calls.is_empty());
        if has_calls {
            // What shutdown saves if the plan is not back in time (see
            // `Session::interrupt_planning`).
            let planning = Planning {
                first: without_calls(&mut first),
                repair: repair.as_deref_mut().map(without_calls),
            };
            if let Some(f) = self.in_flight.get_mut(&first.spec.request_id) {
                f.planning = Some(Box::new(planning));
            }
        }
        let job = move || {
            // A bug in the matcher must cost this turn only, and must still reach the
            // loop, or the chat would stay busy until a restart.
            let plan = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                debug_hook::panic_if_asked(&first, repair.as_deref());
                let ended = Ended {
                    first: &first,
                    repair: repair.as_deref(),
                };
                let plan_of = |calls: &[ToolCall], blocks: &[ProposedEdit]| {
                    plan_calls(&store, &chat, &key, (calls, blocks), mode, &root, &read)
                };
                let calls = ended.calls_to_plan();
                let mut plan = plan_of(&calls, &ended.blocks_to_plan());
                if repair.is_some() {
                    let calls = ended.calls_after_repair(&calls, &plan);
                    plan = plan_of(&calls, &[]);
                }
                plan
            }));
            let validation = match (&plan, &validate) {
                (Ok(p), Some(command)) if p.ok() && !p.writes.is_empty() => {
                    let v = crate::project::scratch::validate(
                        &first.spec.request_id,
                        &root,
                        &p.writes,
                        command,
                        &writable,
                        crate::project::scratch::VALIDATE_TIMEOUT,
                    );
                    tracing::info!(passed = v.passed, detail = %v.detail, "hybrid validation");
                    Some(v)
                }
                _ => None,
            };
            let plan = plan.map_err(|_| {
                crate::error::Error::new(
                    crate::error::ErrorCode::Internal,
                    "Internal error while planning the model's file changes",
                )
            });
            let _ = background.send(BackgroundResult::Planned(Box::new(PlannedTurn {
                first,
                repair,
                plan,
                validation,
            })));
        };
        if has_calls {
            tokio::task::spawn_blocking(job);
        } else {
            job();
        }
        Ok(())
    }

    /// Saves the turn's result and tells the client (what to save is decided by
    /// `turn::complete`). A call that writes outside the project fails like any other
    /// failed call: no input ends bb7. Returns `None` when it started a hidden repair
    /// round instead of finishing.
    pub(super) fn complete_turn(
        &mut self,
        first: &TurnOutcome,
        repair: Option<&TurnOutcome>,
        plan: Result<Plan>,
        validation: Option<crate::project::scratch::Validation>,
        ctx: &Ctx,
    ) -> Result<Option<Flow>> {
        let ended = Ended { first, repair };
        let mut plan = match plan {
            Ok(plan) => plan,
            // The answer is kept, with the error after it (invariant 2).
            Err(e) => {
                self.save_unplanned(ended, e.code, e.message, ctx)?;
                return Ok(Some(Flow::Continue));
            }
        };
        let key = first.spec.chat.clone();
        let root = self.root()?.to_path_buf();
        if first.fell_back_to_blocks {
            self.remember_no_tools(&first.spec.model);
        }
        // A dropped attempt of a hybrid turn: the next one runs, nothing is saved. No
        // new round starts once bb7 is closing.
        let more = repair.is_none() && !self.closing;
        if more && self.reroute(first, &plan, validation.as_ref(), ctx)? {
            return Ok(None);
        }
        if more && ended.wants_repair(&plan, self.config.auto_retry_partial_edits) {
            self.start_repair(first, &plan, ctx)?;
            return Ok(None);
        }
        super::trace::trace_proposed(first, &plan);
        let changes = if plan.ok() {
            match self.commit_plan(&key, &plan, &root) {
                Ok(changes) => changes,
                // The answer is kept whatever happens to its files: the text is saved
                // and the writes that could not be stored are failed calls, so the
                // chat never ends on a user message without its answer.
                Err(e) => {
                    fail_unstored(&mut plan, &e);
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        super::trace::trace_generated(first, &plan, &changes);
        let mut completion = complete(ended, &plan, changes);
        if self
            .in_flight
            .get(&first.spec.request_id)
            .is_some_and(|f| f.closed_by_exit)
        {
            completion.closed_by_exit();
        }
        super::trace::trace_turn_end(first, &completion.event);
        let messages = std::mem::take(&mut completion.messages);
        let committed = plan.ok() && !plan.writes.is_empty();
        let total = self.change_chat(&key, |chat, files| {
            // A file edited because the model read it joins the context first.
            if committed {
                let turns: Vec<&TurnOutcome> = std::iter::once(first).chain(repair).collect();
                let read = super::read_edits::read_paths(chat, &turns, &root);
                let added = super::read_edits::add_read_files(chat, files, &plan, &read, &root)?;
                chat.messages.extend(added);
            }
            chat.messages.extend(messages);
            Ok(chat_usage(chat))
        })?;
        let chat_cost = total.cost;
        if let crate::protocol::events::TurnMessage::Done { chat_usage, .. } = &mut completion.event
        {
            *chat_usage = Some(total);
        }
        self.log_usage(&first.spec.model, &completion.usage);
        let warnings = self.budget_warnings(chat_cost, completion.usage.cost);
        let today = self.dirs.is_some().then(|| self.spent_today());
        if let crate::protocol::events::TurnMessage::Done {
            budget_warnings,
            spent_today,
            ..
        } = &mut completion.event
        {
            *budget_warnings = warnings;
            *spent_today = today;
        }
        let argument_bytes: usize = first.calls.iter().map(|c| c.arguments.len()).sum();
        if argument_bytes > OFF_LOOP_ENCODE_BYTES {
            // `diff_error` repeats the calls' arguments: encoding megabytes of them is
            // left to a blocking thread (invariant 15). The chat is saved already, and
            // nothing else of this stream follows.
            let outbox = ctx.outbox.clone();
            let rid = first.spec.request_id.clone();
            let event = completion.event;
            tokio::task::spawn_blocking(move || outbox.emit(&event, Some(&rid)));
        } else {
            ctx.outbox
                .emit(&completion.event, Some(&first.spec.request_id));
        }
        if completion.title {
            self.maybe_auto_title(&key, &first.spec.request_id, ctx);
        }
        Ok(Some(Flow::Continue))
    }

    /// Saves a turn whose file calls were never planned ([`unplanned`]) and ends its
    /// stream. Errors: the chat could not be saved.
    fn save_unplanned(
        &mut self,
        ended: Ended<'_>,
        code: crate::error::ErrorCode,
        note: String,
        ctx: &Ctx,
    ) -> Result<()> {
        let mut completion = unplanned(ended, code, note);
        let messages = std::mem::take(&mut completion.messages);
        self.change_chat(&ended.first.spec.chat, |chat, _| {
            chat.messages.extend(messages);
            Ok(())
        })?;
        self.log_usage(&ended.first.spec.model, &completion.usage);
        ctx.outbox
            .emit(&completion.event, Some(&ended.first.spec.request_id));
        Ok(())
    }

    /// Whether a turn's file calls are being planned off the request loop.
    pub fn is_planning(&self) -> bool {
        self.in_flight.values().any(|f| f.planning.is_some())
    }

    /// Saves every turn whose file calls are still being planned as it is, without its
    /// changes ([`INTERRUPTED_PLANNING`]), and ends its stream: bb7 is closing and an
    /// editor does not wait long for it (Neovim stops a job two seconds after asking).
    /// A plan that comes back later is dropped (`finish_planned`).
    pub fn interrupt_planning(&mut self, ctx: &Ctx) {
        let planning: Vec<(String, Box<Planning>)> = self
            .in_flight
            .iter_mut()
            .filter_map(|(rid, f)| Some((rid.clone(), f.planning.take()?)))
            .collect();
        for (rid, turn) in planning {
            let ended = Ended {
                first: &turn.first,
                repair: turn.repair.as_ref(),
            };
            let note = INTERRUPTED_PLANNING.to_owned();
            if let Err(e) = self.save_unplanned(ended, ErrorCode::Cancelled, note, ctx) {
                tracing::warn!(error = %e.message, "could not save an interrupted answer");
            }
            let key = turn.first.spec.chat.clone();
            self.in_flight.remove(&rid);
            self.release_if_idle(&key);
        }
    }

    /// Remembers in `~/.bb7/state.json` that `model`'s server refused `tools`, so
    /// `edit_format: "auto"` sends it blocks from now on. A failed save only costs the
    /// next turn one more refused request.
    fn remember_no_tools(&self, model: &str) {
        let Some(dirs) = &self.dirs else { return };
        let mut state = crate::config::GlobalState::load(&dirs.state);
        state.remember_tools_refused(model, chrono::Utc::now().timestamp());
        if let Err(e) = state.save(&dirs.state) {
            tracing::info!(error = %e.message, "cannot remember a model without tools");
        }
    }

    /// Appends the turn to `~/.bb7/usage.csv` (the reference plugin's "Today:" cost).
    /// A failure to log never fails the turn.
    fn log_usage(&self, model: &str, usage: &Usage) {
        let Some(dirs) = &self.dirs else { return };
        let root = self.project_root().unwrap_or_default();
        let line = crate::project::usage_log::UsageLine {
            project_root: &root.to_string_lossy(),
            model,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage.cached_tokens,
            cost: usage.cost,
        };
        if let Err(e) = crate::project::usage_log::append(&dirs.state, &line) {
            tracing::info!(error = %e, "cannot append to usage.csv");
        }
    }

    /// Writes every planned output together (see `ChatFiles::commit_outputs`) and
    /// returns the change payloads. Errors: the file that could not be stored.
    pub(super) fn commit_plan(
        &self,
        key: &ChatKey,
        plan: &Plan,
        root: &std::path::Path,
    ) -> std::result::Result<Vec<Change>, StoreError> {
        let store = self.store_for(key)?;
        let files = ChatFiles::new(&store, &key.id);
        files.commit_outputs(&plan.writes)?;
        // A new output starts a new review of that file; a stale review left behind
        // is harmless next to losing the answer.
        for path in plan.writes.keys() {
            if let Err(e) = crate::review::decided::clear(files, path) {
                tracing::warn!(error = %e, "could not reset a review");
            }
        }
        Ok(plan
            .writes
            .iter()
            .map(|(path, content)| {
                let mut change =
                    change_payload(path, plan.bases.get(path).cloned().flatten(), content, root);
                if let (Change::Edit { edits, .. }, Some(Some(base))) =
                    (&mut change, plan.bases.get(path))
                {
                    *edits = super::edit_details::edit_details(path, base, &plan.reports);
                }
                change
            })
            .collect())
    }

    pub(super) fn start_repair(
        &mut self,
        first: &TurnOutcome,
        plan: &Plan,
        ctx: &Ctx,
    ) -> Result<()> {
        let provider = self.provider_for(first.spec.route.role)?;
        let mut body = ChatRequest::clone(&first.spec.body);
        body.messages.push(crate::turn::stream::assistant_message(
            &first.text,
            &first.calls,
        ));
        for (c, r) in first.calls.iter().zip(plan.reports.iter()) {
            let content = match &r.error {
                Some(e) => format!("Failed: {e}"),
                None => "Applied.".to_owned(),
            };
            body.messages.push(ChatMessage::tool_result(&c.id, content));
        }
        body.messages
            .push(ChatMessage::text(Role::User, REPAIR_REQUEST));
        let mut spec = first.spec.clone();
        spec.body = Arc::new(body);
        spec.visible = false;
        spec.tools = ToolsMode::Off;
        self.in_flight.remove(&spec.request_id);
        self.spawn_turn(spec, provider, ctx, Some(Box::new(first.clone())));
        Ok(())
    }
}

/// A copy of `turn` for [`Planning`] without what only planning and later rounds
/// read (the calls, the blocks), which can be megabytes; they are taken out of `turn`
/// for the copy and put back. The request body (the whole context) is shared, not
/// copied.
fn without_calls(turn: &mut TurnOutcome) -> TurnOutcome {
    let calls = std::mem::take(&mut turn.calls);
    let blocks = std::mem::take(&mut turn.blocks);
    let copy = turn.clone();
    turn.calls = calls;
    turn.blocks = blocks;
    copy
}

/// A test hook of debug builds: with `BB7_TEST_PANIC_PLANNING` set, planning panics for
/// a turn whose file calls contain its value, so tests reach the guard around planning
/// from outside (docs/ARCHITECTURE.md, "Entry points"). Release builds have no hook.
mod debug_hook {
    use crate::turn::stream::TurnOutcome;

    /// Panics when asked to (see the module documentation).
    pub(super) fn panic_if_asked(first: &TurnOutcome, repair: Option<&TurnOutcome>) {
        #[cfg(debug_assertions)]
        if let Ok(marker) = std::env::var("BB7_TEST_PANIC_PLANNING")
            && !marker.is_empty()
            && first
                .calls
                .iter()
                .chain(repair.iter().flat_map(|r| r.calls.iter()))
                .any(|c| c.arguments.contains(&marker))
        {
            panic!("planning panicked on purpose (BB7_TEST_PANIC_PLANNING)");
        }
        #[cfg(not(debug_assertions))]
        let _ = (first, repair);
    }
}

/// Plans `calls` and then `blocks` (SEARCH/REPLACE blocks of the answer text) of the
/// chat `key` against `chat` as it is now: the edit engine, then the server's own guard.
/// A file the model `read` (`read_edits`) may be edited though it is not in context.
fn plan_calls(
    store: &ChatStore,
    chat: &Chat,
    key: &ChatKey,
    (calls, blocks): (&[ToolCall], &[ProposedEdit]),
    mode: DiffMode,
    root: &std::path::Path,
    read: &std::collections::BTreeSet<String>,
) -> Plan {
    let files = ChatFiles::new(store, &key.id);
    let access =
        |rel: &str| super::read_edits::widen(file_access(chat, files, rel), rel, read, root);
    let edits: Vec<_> = calls
        .iter()
        .map(|c| crate::tools::file::proposed_edit(c, mode))
        .chain(blocks.iter().cloned())
        .collect();
    let mut plan = edit::plan(&edits, root, &access);
    guard_plan(&mut plan, key.global);
    plan
}

/// Bytes of tool-call arguments above which a turn's final message is encoded off the
/// request loop.
const OFF_LOOP_ENCODE_BYTES: usize = 1 << 20;

/// Marks the file calls of a plan whose outputs could not be stored as failed calls
/// (`store_failed`): the one whose file failed, or every write when the failure was
/// not one file's. Nothing of the response is written then (invariant 6).
fn fail_unstored(plan: &mut Plan, e: &StoreError) {
    let why = format!("could not be stored: {}", e.error.message);
    let writes = |r: &crate::edit::CallReport| {
        r.status == CallStatus::Ok && r.path.as_ref().is_some_and(|p| plan.writes.contains_key(p))
    };
    let named = |r: &crate::edit::CallReport| writes(r) && r.path == e.path;
    let one_file = plan.reports.iter().any(named);
    let failed: Vec<usize> = (0..plan.reports.len())
        .filter(|&i| {
            let r = &plan.reports[i];
            if one_file { named(r) } else { writes(r) }
        })
        .collect();
    for i in failed {
        let r = &mut plan.reports[i];
        r.status = CallStatus::Failed;
        r.code = Some(CallCode::StoreFailed);
        r.error = Some(why.clone());
    }
    plan.writes.clear();
    plan.bases.clear();
}

/// The usage of every answer of `chat` added up (the `usage` each assistant message
/// keeps).
pub(super) fn chat_usage(chat: &Chat) -> Usage {
    let mut total = Usage::default();
    for m in chat.messages.iter().filter(|m| m.role == "assistant") {
        if let Some(u) = m
            .extra
            .get("usage")
            .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
        {
            total.add(&u);
        }
    }
    total
}

/// The server's own check of a plan, whatever the planner decided: a global chat
/// writes no file, and no call writes into version-control or bb7 state
/// (Durability 7). Such calls become failed calls, so nothing of the response is
/// written.
fn guard_plan(plan: &mut Plan, global: bool) {
    for r in &mut plan.reports {
        if r.status != CallStatus::Ok || crate::tools::retrieval::is_retrieval(&r.tool) {
            continue;
        }
        let refusal = match r.path.as_deref() {
            _ if global => Some((
                CallCode::ReadOnly,
                "this is a global chat, which cannot write files".to_owned(),
            )),
            Some(p) => crate::project::paths::protected_dir(p).map(|d| {
                (
                    CallCode::PathEscape,
                    format!("{p} is inside {d}/, which the model may not write"),
                )
            }),
            None => None,
        };
        if let Some((code, e)) = refusal {
            r.status = CallStatus::Failed;
            r.code = Some(code);
            r.error = Some(e);
        }
    }
    if global {
        plan.writes.clear();
        plan.bases.clear();
    }
    plan.writes
        .retain(|p, _| crate::project::paths::protected_dir(p).is_none());
}

/// What the model may do with `rel`, matching what `prompt::files::prompt_files` showed it.
pub(super) fn file_access(chat: &Chat, files: ChatFiles, rel: &str) -> FileAccess {
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
    if chat
        .context_files
        .iter()
        .any(|c| c.path == rel && c.is_attachment())
    {
        return FileAccess::ReadOnly("it is an attachment, not a file".into());
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

/// The change payload of one written file (docs/PROTOCOL.md, "typed change
/// payloads"): `edit` with a unified diff from the version the model saw, or `write`
/// with a preview for a file the model had not seen.
pub fn change_payload(
    path: &str,
    base: Option<String>,
    content: &str,
    root: &std::path::Path,
) -> Change {
    let file_id = ids::file_version(path, content);
    let content_lines = content.lines().count();
    match base {
        Some(old) => {
            let diff = similar::TextDiff::from_lines(old.as_str(), content);
            let unified = crate::diff::unified_diff(path, &old, content);
            // The hunks the review lists for this change (`review_get`), not the
            // unified diff's, whose context merges edits a few lines apart.
            let hunks = crate::diff::hunks(
                path,
                &crate::text::with_nl(&old),
                &crate::text::with_nl(content),
            )
            .len();
            let (mut added, mut removed) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    similar::ChangeTag::Insert => added += 1,
                    similar::ChangeTag::Delete => removed += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            Change::Edit {
                path: path.to_owned(),
                description: format!(
                    "Edit {path}: {hunks} hunk{}, +{added} \u{2212}{removed} (was {} lines, now {content_lines})",
                    if hunks == 1 { "" } else { "s" },
                    old.lines().count()
                ),
                file_id,
                file_exists: root.join(path).exists(),
                existing_lines: old.lines().count(),
                content_lines,
                diff_lines: unified.lines().count(),
                unified_diff: unified,
                existing_bytes: old.len(),
                content_bytes: content.len(),
                edits: Vec::new(),
            }
        }
        None => {
            let exists = root.join(path).exists();
            let preview: String = content.split_inclusive('\n').take(PREVIEW_LINES).collect();
            Change::Write {
                path: path.to_owned(),
                description: format!(
                    "Write {content_lines} lines to {path}{}",
                    if exists {
                        " (replaces the local file)"
                    } else {
                        " (new file)"
                    }
                ),
                file_id,
                file_exists: exists,
                content_lines,
                content_bytes: content.len(),
                preview_truncated: preview.len() < content.len(),
                preview,
            }
        }
    }
}
