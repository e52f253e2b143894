//! The event trace (docs/PROTOCOL.md, "Extension: the event trace"): `events_get`, and
//! the trace of a job for the handlers and turns that record their steps.

use super::*;
use crate::chat::ChatKey;
use crate::chat::event_page;
use crate::chat::events::{self, EventData, EventKind};
use crate::edit::Plan;
use crate::error::Result;
use crate::protocol::Encoded;
use crate::protocol::action::Action;
use crate::protocol::events::Change;
use crate::protocol::params;
use crate::protocol::replies::{Applied, EventsPage, ReviewApplied, RollbackResult};
use crate::protocol::trace::JobTrace;
use crate::turn::stream::TurnOutcome;

impl Session {
    /// `events_get`: the events of a chat's trace after the cursor `after`, and with
    /// `follow` the stream of later events switched on or off. Errors: no such chat
    /// (`not_found`), no active chat when `chat_id` is absent, an unreadable trace.
    pub(super) fn events_get(&mut self, args: params::EventsGet) -> Result<EventsPage<'static>> {
        let (store, id) = match args.chat_id.filter(|c| !c.is_empty()) {
            Some(id) => (self.find_store(&id)?, id),
            None => {
                let a = self.active()?;
                (a.store.clone(), a.chat.id.clone())
            }
        };
        if !store.exists(&id) {
            return Err(Error::chat_not_found());
        }
        let page = event_page::read_after(
            &store.chat_path(&id, events::FILE_NAME)?,
            args.after.map_or(0, |a| a.0),
        )?;
        if let Some(on) = args.follow {
            self.tracer.set_follow(on);
        }
        Ok(EventsPage {
            chat_id: id.into(),
            events: page.events,
            next_cursor: page.next_cursor,
            more: page.more,
        })
    }

    /// A new job's trace in the chat of `key` (a trace that records nothing when the
    /// chat's directory cannot be named).
    pub(super) fn job_trace(&self, key: &ChatKey) -> JobTrace {
        let (Some(outbox), Ok(store)) = (&self.outbox, self.store(key.global)) else {
            return JobTrace::none();
        };
        match store.chat_path(&key.id, events::FILE_NAME) {
            Ok(file) => self.tracer.job(
                outbox,
                file,
                store.base().to_path_buf(),
                &key.id,
                &events::new_job_id(),
            ),
            Err(_) => JobTrace::none(),
        }
    }

    /// A new job's trace in the active chat (applies record there: they apply its
    /// outputs).
    pub(super) fn active_job_trace(&self) -> JobTrace {
        match &self.active {
            Some(a) => self.job_trace(&ChatKey {
                id: a.chat.id.clone(),
                global: a.store.global,
            }),
            None => JobTrace::none(),
        }
    }
}

/// An event payload naming a path.
pub(super) fn at_path(path: &str) -> EventData {
    EventData {
        path: Some(path.to_owned()),
        ..EventData::default()
    }
}

/// A request whose steps the trace records around its handler: its job's trace, and
/// what the end event needs from the request.
pub(super) struct Traced {
    trace: JobTrace,
    step: Step,
    /// The start event, recorded with the end once the request got past the door.
    start: (EventKind, EventData),
}

/// Error codes of a request refused before it did anything (a bad path, an unknown
/// checkpoint or hunk, no chat): such a request leaves no trace, as it leaves nothing
/// else on disk.
fn refused_at_the_door(code: crate::error::ErrorCode) -> bool {
    use crate::error::ErrorCode as C;
    matches!(
        code,
        C::InvalidRequest
            | C::NotFound
            | C::PathEscape
            | C::NoActiveChat
            | C::NotInitialized
            | C::Locked
            | C::Busy
    )
}

enum Step {
    /// `apply_file`, `apply_file_as`, `review_apply` of a path.
    Apply { path: String, review: bool },
    /// `checkpoint_rollback` of a checkpoint.
    Rollback { checkpoint_id: String },
}

impl Session {
    /// Before a handler runs: for an apply or a rollback, what [`Session::trace_end`]
    /// records once it knows the outcome; `None` for other requests.
    pub(super) fn trace_start(&self, action: &Action) -> Option<Traced> {
        let (step, kind, data) = match action {
            Action::ApplyFile(a) | Action::ApplyFileAs(a) => {
                let path = a.path.as_str().to_owned();
                let mut data = at_path(&path);
                data.reason = a
                    .destination
                    .as_ref()
                    .map(|d| format!("save_as {}", d.as_str()));
                (
                    Step::Apply {
                        path,
                        review: false,
                    },
                    EventKind::ApplyStarted,
                    data,
                )
            }
            Action::ReviewApply(a) => {
                let path = a.path.as_str().to_owned();
                let data = at_path(&path);
                (
                    Step::Apply { path, review: true },
                    EventKind::ApplyStarted,
                    data,
                )
            }
            Action::CheckpointRollback(a) => {
                let checkpoint_id = a.checkpoint_id.as_str().to_owned();
                let data = EventData {
                    checkpoint_id: Some(checkpoint_id.clone()),
                    reason: Some(a.mode.clone()),
                    ..EventData::default()
                };
                (
                    Step::Rollback { checkpoint_id },
                    EventKind::RollbackStarted,
                    data,
                )
            }
            _ => return None,
        };
        let trace = match &step {
            Step::Rollback { checkpoint_id } => self.checkpoint_job_trace(checkpoint_id),
            Step::Apply { .. } => self.active_job_trace(),
        };
        Some(Traced {
            trace,
            step,
            start: (kind, data),
        })
    }

    /// A new job's trace in the chat that made checkpoint `id` (a rollback records
    /// there, whichever chat is active); the active chat's when the checkpoint or its
    /// chat cannot be found (a rollback that then fails, or a chat deleted since).
    fn checkpoint_job_trace(&self, id: &str) -> JobTrace {
        let owner = self
            .checkpoints()
            .and_then(|store| store.get(id))
            .ok()
            .and_then(|cp| {
                let store = self.find_store(&cp.chat_id).ok()?;
                Some(ChatKey {
                    id: cp.chat_id,
                    global: store.global,
                })
            });
        match owner {
            Some(key) => self.job_trace(&key),
            None => self.active_job_trace(),
        }
    }

    /// After the handler of a [`Traced`] request: records its start and how it ended,
    /// from its typed reply (`checkpoint.created`, `review.updated`, `apply.completed`,
    /// `checkpoint.rollback.completed` / `failed`). A request refused at the door
    /// records nothing.
    pub(super) fn trace_end(&self, traced: Traced, reply: &Result<Option<Encoded>>) {
        let Traced { trace, step, start } = traced;
        let encoded = match reply {
            Ok(Some(e)) => Ok(e.as_str()),
            Ok(None) => return,
            Err(e) if refused_at_the_door(e.code) => return,
            Err(e) => Err(e),
        };
        trace.record(start.0, start.1);
        match step {
            Step::Apply { path, review } => {
                let mut done = at_path(&path);
                match encoded {
                    Err(e) => {
                        done.status = Some("failed".into());
                        done.code = Some(e.code.as_str().to_owned());
                    }
                    Ok(text) => {
                        let (checkpoint, content) = if review {
                            let Ok(r) = serde_json::from_str::<ReviewApplied>(text) else {
                                return;
                            };
                            trace.record(
                                EventKind::ReviewUpdated,
                                EventData {
                                    accepted: Some(r.applied.len() as u64),
                                    rejected: Some(r.rejected.len() as u64),
                                    pending: Some((r.pending.len() + r.conflicts.len()) as u64),
                                    ..at_path(&path)
                                },
                            );
                            (
                                r.checkpoint_id.map(|c| c.into_owned()),
                                r.content.into_owned(),
                            )
                        } else {
                            let Ok(r) = serde_json::from_str::<Applied>(text) else {
                                return;
                            };
                            done.path = Some(r.path.into_owned());
                            (
                                r.checkpoint_id.map(|c| c.into_owned()),
                                r.content.into_owned(),
                            )
                        };
                        if let Some(id) = &checkpoint {
                            trace.record(EventKind::CheckpointCreated, checkpoint_data(id, 1));
                        }
                        done.status = Some("ok".into());
                        done.checkpoint_id = checkpoint;
                        done.bytes = Some(content.len() as u64);
                        done.after_hash = Some(crate::chat::ids::sha256_tagged(content.as_bytes()));
                    }
                }
                trace.record(EventKind::ApplyCompleted, done);
            }
            Step::Rollback { checkpoint_id } => {
                let parsed = encoded.map(serde_json::from_str::<RollbackResult>);
                match parsed {
                    Err(e) => trace.record(
                        EventKind::RollbackFailed,
                        EventData {
                            checkpoint_id: Some(checkpoint_id),
                            code: Some(e.code.as_str().to_owned()),
                            ..EventData::default()
                        },
                    ),
                    Ok(Err(_)) => {}
                    Ok(Ok(r)) => {
                        if let Some(id) = &r.checkpoint_id {
                            trace.record(
                                EventKind::CheckpointCreated,
                                checkpoint_data(id, r.files.len()),
                            );
                        }
                        let restored: Vec<String> = r
                            .files
                            .iter()
                            .filter(|f| f.restored)
                            .map(|f| f.path.clone())
                            .collect();
                        let conflicts = r.files.iter().filter(|f| f.conflict).count();
                        trace.record(
                            EventKind::RollbackCompleted,
                            EventData {
                                checkpoint_id: Some(checkpoint_id),
                                count: Some(restored.len() as u64),
                                paths: restored,
                                pending: Some(conflicts as u64),
                                ..EventData::default()
                            },
                        );
                    }
                }
            }
        }
    }
}

/// The payload of `checkpoint.created`.
fn checkpoint_data(id: &str, files: usize) -> EventData {
    EventData {
        checkpoint_id: Some(id.to_owned()),
        count: Some(files as u64),
        ..EventData::default()
    }
}

/// Records `edits.proposed` when the answer proposed file changes: how many calls
/// and blocks, and the paths they name.
pub(super) fn trace_proposed(first: &TurnOutcome, plan: &Plan) {
    if plan.reports.is_empty() {
        return;
    }
    let mut paths: Vec<String> = plan.reports.iter().filter_map(|r| r.path.clone()).collect();
    paths.sort();
    paths.dedup();
    // A change that adds hidden characters is named where the user looks.
    let invisible = plan
        .writes
        .iter()
        .flat_map(|(path, new)| {
            let base = plan.bases.get(path).and_then(|b| b.as_deref());
            crate::text::invisible::added_warnings(path, base, new)
        })
        .collect();
    let data = EventData {
        count: Some(plan.reports.len() as u64),
        paths,
        invisible,
        ..EventData::default()
    };
    first.spec.trace.record(EventKind::EditsProposed, data);
}

/// Records `diff.generated`: the files the answer stored as outputs and their size,
/// or the failure (`diff_error`, with the code of the first failed call).
pub(super) fn trace_generated(first: &TurnOutcome, plan: &Plan, changes: &[Change]) {
    if plan.reports.is_empty() {
        return;
    }
    let stored = plan.ok() && !changes.is_empty();
    let data = EventData {
        status: Some(if stored { "ok" } else { "failed" }.to_owned()),
        count: Some(changes.len() as u64),
        paths: if stored {
            plan.writes.keys().cloned().collect()
        } else {
            Vec::new()
        },
        bytes: stored.then(|| plan.writes.values().map(|c| c.len() as u64).sum()),
        code: (!stored).then(|| {
            plan.reports
                .iter()
                .find_map(|r| r.code)
                .and_then(|c| serde_json::to_value(c).ok())
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "diff_error".to_owned())
        }),
        ..EventData::default()
    };
    first.spec.trace.record(EventKind::DiffGenerated, data);
}

/// Records how the turn ended: `job.completed` (with the provider and a fallback's
/// reason) or `job.failed` (with the error code, `diff_error` for failed edits).
pub(super) fn trace_turn_end(first: &TurnOutcome, event: &crate::protocol::events::TurnMessage) {
    use crate::protocol::events::TurnMessage;
    let (kind, data) = match event {
        TurnMessage::Done {
            provider,
            fallback_reason,
            output_files,
            ..
        } => (
            EventKind::JobCompleted,
            EventData {
                provider: provider.clone(),
                reason: fallback_reason.clone(),
                paths: output_files.clone(),
                ..EventData::default()
            },
        ),
        TurnMessage::DiffError { errors, .. } => (
            EventKind::JobFailed,
            EventData {
                code: Some("diff_error".into()),
                count: Some(errors.len() as u64),
                ..EventData::default()
            },
        ),
        TurnMessage::Error { code, .. } => (
            EventKind::JobFailed,
            EventData {
                code: Some(code.as_str().to_owned()),
                ..EventData::default()
            },
        ),
        _ => return,
    };
    first.spec.trace.record(kind, data);
}

/// Records `attempt.dropped`: a `hybrid_auto` attempt dropped for `reason`, the
/// provider the turn goes on with, and the dropped attempt's summary (its model and
/// provider, rounds, retrieval steps, proposed and failed changes with their paths,
/// the answer's size, tokens and time). Nothing of its text or edits is recorded.
pub(super) fn trace_dropped(
    attempt: &TurnOutcome,
    plan: &Plan,
    reason: crate::turn::route::FallbackReason,
    next: crate::llm::providers::ProviderRole,
) {
    let spec = &attempt.spec;
    let mut paths: Vec<String> = plan.reports.iter().filter_map(|r| r.path.clone()).collect();
    paths.sort();
    paths.dedup();
    let failed = plan
        .reports
        .iter()
        .filter(|r| r.status != crate::edit::CallStatus::Ok)
        .count();
    let data = EventData {
        provider: Some(spec.route.role.as_str().to_owned()),
        model: Some(spec.model.clone()),
        reason: Some(reason.as_str().to_owned()),
        next_provider: Some(next.as_str().to_owned()),
        attempt: Some(u64::from(spec.route.local_attempts.max(1))),
        rounds: Some(attempt.rounds as u64),
        tool_calls: Some(attempt.steps.len() as u64),
        count: Some(plan.reports.len() as u64),
        failed: Some(failed as u64),
        paths,
        bytes: Some(attempt.text.len() as u64),
        input_tokens: attempt.usage.as_ref().map(|u| u.prompt_tokens),
        output_tokens: attempt.usage.as_ref().map(|u| u.completion_tokens),
        duration_ms: Some((attempt.duration.max(0.0) * 1000.0).round() as u64),
        // A deadline is the `timeout` reason itself, not a failure of the server.
        code: attempt
            .error
            .as_ref()
            .filter(|e| !matches!(e, crate::llm::ApiError::Deadline(_)))
            .map(|_| crate::error::ErrorCode::Api.as_str().to_owned()),
        ..EventData::default()
    };
    spec.trace.record(EventKind::AttemptDropped, data);
}

/// Records that the validation command did not run because the local edits change
/// `paths`, files it runs or reads (`validation.refused`, docs/PROTOCOL.md).
pub(super) fn trace_validation_refused(attempt: &TurnOutcome, paths: &[String]) {
    let spec = &attempt.spec;
    let data = EventData {
        provider: Some(spec.route.role.as_str().to_owned()),
        model: Some(spec.model.clone()),
        paths: paths.to_vec(),
        count: Some(paths.len() as u64),
        ..EventData::default()
    };
    spec.trace.record(EventKind::ValidationRefused, data);
}
