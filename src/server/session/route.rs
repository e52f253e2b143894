//! Running a turn's route (decided by `turn::route`): the provider a turn starts on,
//! and after a dropped attempt of a `hybrid_auto` turn, the next attempt on the local
//! or the remote provider. A dropped attempt writes nothing and adds nothing to the
//! chat: the plan of its edits is never committed, and only the final attempt's
//! answer is saved, with the provider that gave it; the chat's event trace keeps a
//! summary of it (`attempt.dropped`).

use std::sync::Arc;

use super::{Ctx, Session};
use crate::chat::model::Chat;
use crate::config::{AgentMode, EditFormat};
use crate::edit::{CallStatus, Plan};
use crate::error::{Error, ErrorCode, Result};
use crate::llm::providers::{Endpoint, ProviderRole, Providers};
use crate::llm::request::{ChatMessage, ChatRequest, Role};
use crate::llm::{ApiError, Provider};
use crate::project::scratch::Validation;
use crate::protocol::events::TurnMessage;
use crate::turn::route::{self, AttemptEnd, HybridPolicy, Next, Route};
use crate::turn::stream::{TurnOutcome, assistant_message};

/// What a local attempt is told when its edits failed and it runs again.
pub const RETRY_REQUEST: &str = "None of your file changes were written, because some of them could not be applied (see the tool results). Answer again and call the tools for every change of your answer, with corrected arguments.";

impl Session {
    /// The client of `role`, built on first use from the config.
    pub(super) fn provider_for(&mut self, role: ProviderRole) -> Result<Arc<dyn Provider>> {
        match role {
            ProviderRole::Remote => self.provider(),
            ProviderRole::Local => {
                if let Some(p) = &self.local_provider {
                    return Ok(p.clone());
                }
                let providers = Providers::from_config(&self.config);
                let endpoint = providers.get(ProviderRole::Local)?;
                self.check_cleartext(endpoint)?;
                let p = endpoint.connect()?;
                self.local_provider = Some(p.clone());
                // Asked once, off the request loop; later turns check the prompt
                // against what the server reports (the first relies on its errors).
                if endpoint.context_window.is_none() {
                    let (probe, model) = (p.clone(), endpoint.model_for(""));
                    let window = self.local_window.clone();
                    tokio::spawn(async move {
                        let found = crate::llm::models::probe_context_window(&*probe, &model).await;
                        tracing::info!(window = ?found, "the local server's context window");
                        if let Ok(mut w) = window.lock() {
                            *w = found;
                        }
                    });
                }
                Ok(p)
            }
        }
    }

    /// Refuses an endpoint that would send a key over plain `http://` to another
    /// machine, unless `allow_insecure_http` is set (then it warns on stderr, never on
    /// stdout: invariant 1).
    pub(super) fn check_cleartext(&self, endpoint: &Endpoint) -> Result<()> {
        let Some(risk) =
            crate::llm::url::cleartext_risk(&endpoint.base_url, endpoint.has_api_key())
        else {
            return Ok(());
        };
        if !self.config.allow_insecure_http {
            return Err(Error::new(
                ErrorCode::Api,
                format!(
                    "Refusing to send a request: {risk}. Use https, or set allow_insecure_http in ~/.config/bb7/config.json"
                ),
            ));
        }
        tracing::warn!("{risk}");
        eprintln!("bb7: warning: {risk} (allow_insecure_http is set)");
        Ok(())
    }

    /// The chat's `agent_mode`, else the config's, else `remote`. A value this build
    /// does not know counts as unset.
    pub(super) fn agent_mode_of(&self, chat: &Chat) -> AgentMode {
        chat.agent_mode
            .as_deref()
            .and_then(|m| AgentMode::parse(m).ok())
            .or(self.config.agent_mode)
            .unwrap_or_default()
    }

    /// The `edit_format` of the provider a turn of `chat` starts on, when it sets one.
    /// A fallback keeps the format of the first attempt (its prompt is already built).
    pub(super) fn first_provider_edit_format(&self, chat: &Chat) -> Option<EditFormat> {
        let role = crate::llm::providers::first_role(self.agent_mode_of(chat));
        Providers::from_config(&self.config)
            .get(role)
            .ok()
            .and_then(|e| e.edit_format)
    }

    /// Where a new turn of `chat` starts: its route, and `body` set to that provider's
    /// model. A `hybrid_auto` prompt estimated above the local context window starts
    /// on remote. Errors: the provider is not configured, or has no key.
    pub(super) fn start_route(
        &mut self,
        chat: &Chat,
        chat_model: &str,
        body: &mut ChatRequest,
    ) -> Result<(Route, Arc<dyn Provider>)> {
        let mode = self.agent_mode_of(chat);
        let policy = HybridPolicy::from_config(&self.config);
        let mut route = route::start(mode, policy, body.messages.len(), chat_model);
        let providers = Providers::from_config(&self.config);
        route.local_url = providers
            .get(ProviderRole::Local)
            .ok()
            .map(|e| crate::llm::url::redacted(&e.base_url));
        if route.role == ProviderRole::Local {
            let window = providers
                .get(ProviderRole::Local)?
                .context_window
                .or_else(|| self.local_window.lock().ok().and_then(|w| *w));
            let estimated = window.map(|_| route::estimate(body)).unwrap_or(0);
            if let Some(reason) = route::before_send(&route, estimated, window) {
                tracing::info!(estimated, window, "prompt over the local context window");
                route = route::advance(&route, Next::Fallback(reason), None, 0.0);
            }
        }
        body.model = providers.get(route.role)?.model_for(chat_model);
        let provider = self.provider_for(route.role)?;
        Ok((route, provider))
    }

    /// After an attempt whose calls are planned: when its route says so, drops it and
    /// starts the next attempt under the same request id. Returns whether it did.
    pub(super) fn reroute(
        &mut self,
        attempt: &TurnOutcome,
        plan: &Plan,
        validation: Option<&Validation>,
        ctx: &Ctx,
    ) -> Result<bool> {
        let spec = &attempt.spec;
        let next = route::after_attempt(&spec.route, attempt_end(attempt, plan, validation));
        if next == Next::Finish {
            return Ok(false);
        }
        if let Some(v) = validation.filter(|v| !v.not_run_for.is_empty()) {
            super::trace::trace_validation_refused(attempt, &v.not_run_for);
        }
        let route = route::advance(&spec.route, next, attempt.usage.as_ref(), attempt.duration);
        let providers = Providers::from_config(&self.config);
        let provider = match self.provider_for(route.role) {
            Ok(p) => p,
            // Without a usable remote the local attempt stands as the answer.
            Err(e) => {
                tracing::info!(error = %e.message, "cannot fall back");
                return Ok(false);
            }
        };
        let mut body = ChatRequest::clone(&spec.body);
        body.messages.truncate(spec.route.base_messages);
        if next == Next::RetryLocal {
            body.messages
                .push(assistant_message(&attempt.text, &attempt.calls));
            for (call, report) in attempt.calls.iter().zip(&plan.reports) {
                let result = match (&report.error, report.status) {
                    (Some(e), _) => format!("Failed: {e}"),
                    (None, CallStatus::Ok) => {
                        "Not written: other changes of this response failed.".to_owned()
                    }
                    (None, _) => "Failed.".to_owned(),
                };
                body.messages
                    .push(ChatMessage::tool_result(&call.id, result));
            }
            body.messages
                .push(ChatMessage::text(Role::User, RETRY_REQUEST));
        }
        body.model = providers.get(route.role)?.model_for(&route.remote_model);
        let reason = match next {
            Next::Fallback(r) => r,
            _ => route::FallbackReason::SchemaFail,
        };
        tracing::info!(
            request_id = %spec.request_id,
            from = spec.route.role.as_str(),
            to = route.role.as_str(),
            reason = reason.as_str(),
            "attempt dropped"
        );
        super::trace::trace_dropped(attempt, plan, reason, route.role);
        let notice = TurnMessage::Attempt {
            provider: route.role.as_str().to_owned(),
            reason: reason.as_str().to_owned(),
            detail: validation
                .filter(|v| !v.passed && reason == route::FallbackReason::ValidationFailed)
                .map(|v| v.detail.clone()),
            message: attempt
                .error
                .as_ref()
                .map(|e| route::failure_message(&spec.route, e)),
            chat_id: spec.chat.id.clone(),
        };
        ctx.outbox.emit(&notice, Some(&spec.request_id));
        let mut next_spec = spec.clone();
        next_spec.model = body.model.clone();
        next_spec.body = Arc::new(body);
        next_spec.local_server = self.is_local_server(route.role);
        next_spec.route = route;
        self.spawn_turn(next_spec, provider, ctx, None);
        Ok(true)
    }
}

/// How an attempt ended, for routing: its API failure first, then its edits: a spent
/// tool budget without a usable edit (none, or some failed), failed edits, edits the
/// validation command refused.
fn attempt_end(attempt: &TurnOutcome, plan: &Plan, validation: Option<&Validation>) -> AttemptEnd {
    if attempt.cancelled {
        return AttemptEnd::Cancelled;
    }
    match &attempt.error {
        Some(ApiError::Deadline(_)) => AttemptEnd::TimedOut,
        Some(e) if e.is_context_overflow() => AttemptEnd::ContextOverflow,
        Some(e) if e.is_tool_support_missing() => AttemptEnd::NoToolSupport,
        Some(_) => AttemptEnd::ApiFailed,
        None if attempt.prompt_cut.is_some() => AttemptEnd::ContextTruncated,
        None if attempt.tools_exhausted && (!plan.ok() || plan.writes.is_empty()) => {
            AttemptEnd::ToolBudgetExhausted
        }
        None if !plan.ok() => AttemptEnd::EditsFailed,
        None if validation.is_some_and(|v| !v.passed) => AttemptEnd::ValidationFailed,
        None => AttemptEnd::Answered,
    }
}
