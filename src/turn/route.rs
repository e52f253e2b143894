//! Which provider answers a turn, as pure functions: where a turn starts for its
//! `agent_mode`, and, after each attempt, whether it finishes, tries the local
//! provider again, or falls back to the remote one, and why. The server runs the
//! attempts (`server/session/route.rs`); nothing of a dropped attempt is written but
//! its summary in the event trace.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{AgentMode, Config};
use crate::llm::Usage;
use crate::llm::providers::{ProviderRole, first_role};

/// Default local attempts with failed edits before `hybrid_auto` falls back.
pub const DEFAULT_MAX_LOCAL_ATTEMPTS: u32 = 2;
/// Default milliseconds a local attempt may take in `hybrid_auto`.
pub const DEFAULT_LOCAL_TIMEOUT_MS: u64 = 60_000;

/// Why a `hybrid_auto` turn moved from the local provider to the remote one
/// (`done.fallback_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackReason {
    /// The local model's edits had an invalid schema or did not apply, the configured
    /// number of times, or its server cannot call tools.
    SchemaFail,
    /// The prompt did not fit the local context window (estimated before sending, or
    /// the server's error).
    ContextOverflow,
    /// The local attempt took longer than `hybrid_remote_on_timeout_ms`.
    Timeout,
    /// The local server failed otherwise (unreachable, HTTP errors after retries).
    LocalError,
    /// The local server answered, but read far fewer prompt tokens than were sent
    /// ([`prompt_was_cut`]): it cut the prompt to its context silently (Ollama does).
    ContextTruncated,
    /// The local attempt spent its `hybrid_tool_budget` of retrieval calls and left no
    /// usable edit.
    ToolBudget,
    /// The local attempt's edits failed `hybrid_validate_command` (run in a scratch
    /// copy of the project).
    ValidationFailed,
}

impl FallbackReason {
    /// The reason's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackReason::SchemaFail => "schema_fail",
            FallbackReason::ContextOverflow => "context_overflow",
            FallbackReason::Timeout => "timeout",
            FallbackReason::LocalError => "local_error",
            FallbackReason::ContextTruncated => "context_truncated",
            FallbackReason::ToolBudget => "tool_budget",
            FallbackReason::ValidationFailed => "validation_failed",
        }
    }
}

/// The `hybrid_*` config keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridPolicy {
    /// Local attempts with failed edits before falling back (at least 1).
    pub max_local_attempts: u32,
    /// Fall back after those attempts (else the last local `diff_error` stands).
    pub on_schema_fail: bool,
    /// Fall back when the prompt overflows the local context window.
    pub on_context_overflow: bool,
    /// How long a local attempt may take; `None` is no limit.
    pub local_timeout: Option<Duration>,
    /// Retrieval calls a local attempt may make (`hybrid_tool_budget`); `None` leaves
    /// the turn's own limit.
    pub tool_budget: Option<u32>,
    /// Whether `hybrid_validate_command` is set: a local attempt's edits are checked
    /// before they stand.
    pub validate: bool,
}

impl Default for HybridPolicy {
    fn default() -> Self {
        HybridPolicy {
            max_local_attempts: DEFAULT_MAX_LOCAL_ATTEMPTS,
            on_schema_fail: true,
            on_context_overflow: true,
            local_timeout: Some(Duration::from_millis(DEFAULT_LOCAL_TIMEOUT_MS)),
            tool_budget: None,
            validate: false,
        }
    }
}

impl HybridPolicy {
    /// The policy of `cfg`, defaults filled in.
    pub fn from_config(cfg: &Config) -> HybridPolicy {
        let timeout_ms = cfg
            .hybrid_remote_on_timeout_ms
            .unwrap_or(DEFAULT_LOCAL_TIMEOUT_MS);
        HybridPolicy {
            max_local_attempts: cfg
                .hybrid_max_local_attempts
                .unwrap_or(DEFAULT_MAX_LOCAL_ATTEMPTS)
                .max(1),
            on_schema_fail: cfg.hybrid_remote_on_schema_fail.unwrap_or(true),
            on_context_overflow: cfg.hybrid_remote_on_context_overflow.unwrap_or(true),
            local_timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)),
            tool_budget: cfg.hybrid_tool_budget,
            validate: cfg
                .hybrid_validate_command
                .as_deref()
                .is_some_and(|c| !c.trim().is_empty()),
        }
    }
}

/// Where a turn is in its route: carried by every attempt's spec, so the server can
/// decide the next step from an attempt's outcome alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// The turn's mode.
    pub mode: AgentMode,
    /// The provider of the current attempt.
    pub role: ProviderRole,
    /// Local attempts made so far, the current one included (0 on remote only).
    pub local_attempts: u32,
    /// Why the turn fell back, once it did.
    pub fallback: Option<FallbackReason>,
    /// The policy of the `hybrid_*` keys.
    pub policy: HybridPolicy,
    /// Messages of the original request: a retry or a fallback starts from these.
    pub base_messages: usize,
    /// The model the remote provider runs (the chat's).
    pub remote_model: String,
    /// Usage of the dropped attempts, added to the answer's.
    pub spent: Usage,
    /// Seconds of the dropped attempts, added to the answer's.
    pub spent_secs: f64,
    /// The local provider's `base_url`, user info and query removed
    /// (`llm::url::redacted`), when one is configured: a local server that refuses the
    /// connection is named by it ([`failure_message`]).
    pub local_url: Option<String>,
}

impl Default for Route {
    fn default() -> Self {
        Route {
            mode: AgentMode::Remote,
            role: ProviderRole::Remote,
            local_attempts: 0,
            fallback: None,
            policy: HybridPolicy::default(),
            base_messages: 0,
            remote_model: String::new(),
            spent: Usage::default(),
            spent_secs: 0.0,
            local_url: None,
        }
    }
}

impl Route {
    /// Whether the current attempt is a local one of a `hybrid_auto` turn (the only
    /// kind that can be dropped).
    pub fn is_hybrid_local(&self) -> bool {
        self.mode == AgentMode::HybridAuto && self.role == ProviderRole::Local
    }

    /// Retrieval calls the current attempt may make: `hybrid_tool_budget` for a local
    /// attempt of a `hybrid_auto` turn when set (never above `turn_limit`), else
    /// `turn_limit` (`max_tool_calls_per_job`).
    pub fn tool_budget(&self, turn_limit: usize) -> usize {
        match self.policy.tool_budget {
            Some(b) if self.is_hybrid_local() => (b as usize).min(turn_limit),
            _ => turn_limit,
        }
    }

    /// How long the current attempt may run: a local attempt of a `hybrid_auto` turn
    /// has the policy's timeout, every other attempt none.
    pub fn attempt_deadline(&self) -> Option<Duration> {
        self.is_hybrid_local()
            .then_some(self.policy.local_timeout)
            .flatten()
    }
}

/// How an attempt ended, as far as routing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptEnd {
    /// An answer whose edits (if any) all apply.
    Answered,
    /// Some edits had an invalid schema or did not match.
    EditsFailed,
    /// The server refused the prompt as too long.
    ContextOverflow,
    /// The server answered after reading far fewer prompt tokens than were sent.
    ContextTruncated,
    /// The attempt ran past the local timeout.
    TimedOut,
    /// The server cannot call tools.
    NoToolSupport,
    /// Any other API failure.
    ApiFailed,
    /// The user cancelled.
    Cancelled,
    /// The attempt spent its whole tool budget and left no usable edit.
    ToolBudgetExhausted,
    /// The attempt's edits failed the validation command.
    ValidationFailed,
}

/// The step after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// This attempt is the turn's answer (or its failure).
    Finish,
    /// Try the local provider once more, told what failed.
    RetryLocal,
    /// Drop the attempt and run the turn on the remote provider.
    Fallback(FallbackReason),
}

/// The route a turn starts on, before any estimate: `mode`'s first provider.
pub fn start(
    mode: AgentMode,
    policy: HybridPolicy,
    base_messages: usize,
    remote_model: &str,
) -> Route {
    let role = first_role(mode);
    Route {
        mode,
        role,
        local_attempts: u32::from(role == ProviderRole::Local),
        policy,
        base_messages,
        remote_model: remote_model.to_owned(),
        ..Route::default()
    }
}

/// What the user is told of an attempt on `route` that failed with `e`: a local server
/// that could not be connected to is named by its address ("local server not reachable
/// at …"), so it is not mistaken for the remote API or for a slow model; any other
/// failure in [`ApiError::user_message`]'s words.
pub fn failure_message(route: &Route, e: &crate::llm::ApiError) -> String {
    match (e, route.role, &route.local_url) {
        (crate::llm::ApiError::Network(m), ProviderRole::Local, Some(url)) => {
            format!("local server not reachable at {url}: {m}")
        }
        _ => e.user_message(),
    }
}

/// Before the first request: a `hybrid_auto` turn whose prompt (`estimated` tokens)
/// does not fit the local `context_window` goes to remote at once.
pub fn before_send(
    route: &Route,
    estimated: u64,
    context_window: Option<u64>,
) -> Option<FallbackReason> {
    let overflow = context_window.is_some_and(|w| estimated > w);
    (route.mode == AgentMode::HybridAuto
        && route.role == ProviderRole::Local
        && route.policy.on_context_overflow
        && overflow)
        .then_some(FallbackReason::ContextOverflow)
}

/// Tokens of a request's messages (`cl100k_base`, close enough to tell a prompt that
/// cannot fit), plus the tool definitions.
pub fn estimate(body: &crate::llm::ChatRequest) -> u64 {
    let messages: usize = body
        .messages
        .iter()
        .map(|m| crate::tokens::count(&m.content.text()) + 4)
        .sum();
    let tools: usize = body
        .tools
        .iter()
        .map(|t| crate::tokens::count(&t.to_string()))
        .sum();
    (messages + tools) as u64
}

/// How many tokens short of bb7's estimate a server's count must be, besides under
/// half of it, before a prompt counts as cut: tokenizers that differ from
/// `cl100k_base` (by a third at most on code and prose) and short prompts (a servers'
/// context is rarely under 2,048 tokens) never look cut.
pub const PROMPT_CUT_MIN_TOKENS: u64 = 2000;

/// Whether a server that reported `reported` prompt tokens for a request bb7
/// estimated at `estimated` read only part of it: under half the estimate, and at
/// least [`PROMPT_CUT_MIN_TOKENS`] short. A server that fits a prompt to its context
/// by dropping its start (Ollama past `num_ctx`) answers without the system prompt
/// and the tools, and only this count shows it.
pub fn prompt_was_cut(estimated: u64, reported: u64) -> bool {
    reported > 0
        && reported.saturating_mul(2) < estimated
        && estimated - reported >= PROMPT_CUT_MIN_TOKENS
}

/// After an attempt ended as `end`: finish, retry locally or fall back. Only a local
/// attempt of a `hybrid_auto` turn is ever dropped; `local` never falls back.
pub fn after_attempt(route: &Route, end: AttemptEnd) -> Next {
    if route.mode != AgentMode::HybridAuto || route.role != ProviderRole::Local {
        return Next::Finish;
    }
    let policy = &route.policy;
    match end {
        AttemptEnd::Answered | AttemptEnd::Cancelled => Next::Finish,
        AttemptEnd::EditsFailed if route.local_attempts < policy.max_local_attempts => {
            Next::RetryLocal
        }
        AttemptEnd::EditsFailed | AttemptEnd::NoToolSupport if policy.on_schema_fail => {
            Next::Fallback(FallbackReason::SchemaFail)
        }
        AttemptEnd::ContextOverflow if policy.on_context_overflow => {
            Next::Fallback(FallbackReason::ContextOverflow)
        }
        AttemptEnd::ContextTruncated if policy.on_context_overflow => {
            Next::Fallback(FallbackReason::ContextTruncated)
        }
        AttemptEnd::TimedOut => Next::Fallback(FallbackReason::Timeout),
        AttemptEnd::ApiFailed => Next::Fallback(FallbackReason::LocalError),
        AttemptEnd::ToolBudgetExhausted => Next::Fallback(FallbackReason::ToolBudget),
        AttemptEnd::ValidationFailed => Next::Fallback(FallbackReason::ValidationFailed),
        _ => Next::Finish,
    }
}

/// The route of the next attempt after `next` (`Finish` keeps it), with the dropped
/// attempt's `usage` and `secs` counted.
pub fn advance(route: &Route, next: Next, usage: Option<&Usage>, secs: f64) -> Route {
    let mut r = route.clone();
    if next == Next::Finish {
        return r;
    }
    if let Some(u) = usage {
        r.spent.add(u);
    }
    r.spent_secs += secs;
    match next {
        Next::RetryLocal => r.local_attempts += 1,
        Next::Fallback(reason) => {
            r.role = ProviderRole::Remote;
            r.fallback = Some(reason);
        }
        Next::Finish => {}
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hybrid() -> Route {
        start(
            AgentMode::HybridAuto,
            HybridPolicy::default(),
            2,
            "remote/model",
        )
    }

    #[test]
    fn a_prompt_counts_as_cut_only_far_below_the_estimate() {
        assert!(prompt_was_cut(10_000, 2_048));
        assert!(!prompt_was_cut(10_000, 6_000), "a tokenizer a third off");
        assert!(!prompt_was_cut(2_500, 600), "too short to tell");
        assert!(!prompt_was_cut(10_000, 0), "no usage reported");
    }

    #[test]
    fn modes_start_where_they_should() {
        assert_eq!(hybrid().role, ProviderRole::Local);
        assert_eq!(hybrid().local_attempts, 1);
        let local = start(AgentMode::Local, HybridPolicy::default(), 2, "m");
        assert_eq!(local.role, ProviderRole::Local);
        let remote = start(AgentMode::Remote, HybridPolicy::default(), 2, "m");
        assert_eq!(remote.role, ProviderRole::Remote);
        assert_eq!(remote.local_attempts, 0);
    }

    #[test]
    fn failed_edits_retry_locally_then_fall_back() {
        let first = hybrid();
        assert_eq!(
            after_attempt(&first, AttemptEnd::EditsFailed),
            Next::RetryLocal
        );
        let usage = Usage {
            cost: 0.5,
            ..Usage::default()
        };
        let second = advance(&first, Next::RetryLocal, Some(&usage), 1.5);
        assert_eq!(second.local_attempts, 2);
        let next = after_attempt(&second, AttemptEnd::EditsFailed);
        assert_eq!(next, Next::Fallback(FallbackReason::SchemaFail));
        let remote = advance(&second, next, Some(&usage), 1.0);
        assert_eq!(remote.role, ProviderRole::Remote);
        assert_eq!(remote.fallback, Some(FallbackReason::SchemaFail));
        assert_eq!(remote.spent.cost, 1.0);
        assert_eq!(remote.spent_secs, 2.5);
        // The remote attempt's own failure stands.
        assert_eq!(
            after_attempt(&remote, AttemptEnd::EditsFailed),
            Next::Finish
        );
    }

    #[test]
    fn each_trigger_has_its_reason_and_its_switch() {
        let r = hybrid();
        assert_eq!(
            after_attempt(&r, AttemptEnd::ContextOverflow),
            Next::Fallback(FallbackReason::ContextOverflow)
        );
        assert_eq!(
            after_attempt(&r, AttemptEnd::TimedOut),
            Next::Fallback(FallbackReason::Timeout)
        );
        assert_eq!(
            after_attempt(&r, AttemptEnd::NoToolSupport),
            Next::Fallback(FallbackReason::SchemaFail)
        );
        assert_eq!(
            after_attempt(&r, AttemptEnd::ApiFailed),
            Next::Fallback(FallbackReason::LocalError)
        );
        assert_eq!(
            after_attempt(&r, AttemptEnd::ToolBudgetExhausted),
            Next::Fallback(FallbackReason::ToolBudget)
        );
        assert_eq!(
            after_attempt(&r, AttemptEnd::ValidationFailed),
            Next::Fallback(FallbackReason::ValidationFailed)
        );
        assert_eq!(after_attempt(&r, AttemptEnd::Answered), Next::Finish);
        assert_eq!(after_attempt(&r, AttemptEnd::Cancelled), Next::Finish);

        let mut off = hybrid();
        off.policy.on_context_overflow = false;
        off.policy.on_schema_fail = false;
        off.policy.max_local_attempts = 1;
        assert_eq!(
            after_attempt(&off, AttemptEnd::ContextOverflow),
            Next::Finish
        );
        assert_eq!(after_attempt(&off, AttemptEnd::EditsFailed), Next::Finish);
        assert_eq!(after_attempt(&off, AttemptEnd::NoToolSupport), Next::Finish);
    }

    #[test]
    fn strictly_local_and_remote_turns_never_fall_back() {
        for mode in [AgentMode::Local, AgentMode::Remote] {
            let r = start(mode, HybridPolicy::default(), 2, "m");
            for end in [
                AttemptEnd::EditsFailed,
                AttemptEnd::ContextOverflow,
                AttemptEnd::TimedOut,
                AttemptEnd::ApiFailed,
            ] {
                assert_eq!(after_attempt(&r, end), Next::Finish, "{mode:?} {end:?}");
            }
            assert_eq!(before_send(&r, 10_000, Some(10)), None);
        }
    }

    #[test]
    fn an_estimate_over_the_local_window_goes_remote_before_sending() {
        let r = hybrid();
        assert_eq!(
            before_send(&r, 9000, Some(8192)),
            Some(FallbackReason::ContextOverflow)
        );
        assert_eq!(before_send(&r, 8000, Some(8192)), None);
        assert_eq!(before_send(&r, 9000, None), None);
        let cfg: Config = serde_json::from_str(
            r#"{"hybrid_max_local_attempts":0,"hybrid_remote_on_timeout_ms":0,"hybrid_remote_on_context_overflow":false}"#,
        )
        .unwrap();
        let policy = HybridPolicy::from_config(&cfg);
        assert_eq!(policy.max_local_attempts, 1);
        assert_eq!(policy.local_timeout, None);
        let quiet = start(AgentMode::HybridAuto, policy, 2, "m");
        assert_eq!(before_send(&quiet, 9000, Some(8192)), None);
    }
}
