//! What a turn runs with and what it produces: the spec of one attempt, how its
//! edits arrive, the client's answers it waits for, and its outcome.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use crate::chat::ChatKey;
use crate::edit::blocks::Piece;
use crate::llm::request::ChatRequest;
use crate::llm::{ApiError, Usage};
use crate::protocol::trace::JobTrace;
use crate::tools::ToolCall;
use crate::tools::retrieval::{Limits, ToolsMode};
use crate::turn::route::Route;

/// Everything a turn needs to run.
#[derive(Debug, Clone)]
pub struct TurnSpec {
    /// The `send`'s request id, on every message of the stream.
    pub request_id: String,
    /// The chat.
    pub chat: ChatKey,
    /// The chat-completions request, shared: it holds the whole context, and a spec is
    /// cloned for every attempt and outcome.
    pub body: Arc<ChatRequest>,
    /// Model id (for the assistant message).
    pub model: String,
    /// Once the answer has begun, fail when no bytes (keep-alive pings included)
    /// arrive for this long (`stream_timeout_secs`).
    pub stall_timeout: Duration,
    /// Fail when no text, reasoning or tool call arrives this long after the request
    /// was sent, response headers and keep-alive pings notwithstanding
    /// (`first_token_timeout_secs`).
    pub first_token_timeout: Duration,
    /// The provider is a server on this machine (a loopback `base_url` or the `local`
    /// provider): the waiting note says "the local server".
    pub local_server: bool,
    /// Retries of 429/5xx/connection failures before any content.
    pub max_retries: u32,
    /// First backoff delay; doubled per retry unless `Retry-After` says otherwise.
    pub backoff: Duration,
    /// Forward deltas to the client (false for a hidden repair round).
    pub visible: bool,
    /// Retrieval tools mode of the chat.
    pub tools: ToolsMode,
    /// The retrieval limits (calls per turn, result sizes).
    pub limits: Limits,
    /// Project root, for the retrieval tools.
    pub root: PathBuf,
    /// Where approvals and clarifications wait for the client's answer.
    pub interactions: Interactions,
    /// How the model sends its file edits.
    pub edits: EditChannel,
    /// Which provider this attempt runs on and what happened before it.
    pub route: Route,
    /// The turn's event trace (tool and clarification steps are recorded here).
    pub trace: JobTrace,
}

/// How a turn's file edits arrive (config `edit_format`).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum EditChannel {
    /// As `write_file` / `edit_file` tool calls.
    #[default]
    ToolCalls,
    /// As SEARCH/REPLACE blocks in the answer text (the request carries no tools).
    Blocks,
    /// As tool calls; when the server refuses a request that carries `tools`, the
    /// turn is sent once more without them, as blocks, with this system prompt.
    ToolCallsElseBlocks {
        /// The system prompt that teaches the blocks.
        blocks_system: String,
    },
}

/// Pending questions to the client (`tool_approval`, `clarification`) by id; the
/// server loop answers them from `tool_approve` and `clarify` requests.
pub type Interactions = Arc<Mutex<HashMap<String, oneshot::Sender<ClientAnswer>>>>;

/// The client's answer to a pending question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAnswer {
    /// `tool_approve`: whether the read may happen.
    Approved(bool),
    /// `clarify`: the user's text (`no_user_answer` or empty skips).
    Text(String),
}

/// What a turn produced.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The spec it ran with.
    pub spec: TurnSpec,
    /// All text deltas.
    pub text: String,
    /// All reasoning deltas.
    pub thinking: String,
    /// File tool calls (`write_file`, `edit_file`, unknown names) of every round, in order.
    pub calls: Vec<ToolCall>,
    /// Retrieval steps, in order.
    pub steps: Vec<ToolStep>,
    /// Model calls made (1 without retrieval tools).
    pub rounds: usize,
    /// Usage, when the stream reported it.
    pub usage: Option<Usage>,
    /// Why it failed, if it did.
    pub error: Option<ApiError>,
    /// Stopped by `cancel`.
    pub cancelled: bool,
    /// Seconds from start to end.
    pub duration: f64,
    /// The SEARCH/REPLACE blocks of the answer (complete or broken), in order; the
    /// text above holds only the prose around them.
    pub blocks: Vec<Piece>,
    /// The server refused `tools`, and the turn was sent again as blocks.
    pub fell_back_to_blocks: bool,
    /// The `finish_reason` of the last round, when the server sent one (`stop`,
    /// `tool_calls`, `length`, …).
    pub finish_reason: Option<String>,
    /// The `local` provider's server read far fewer prompt tokens than bb7 sent
    /// (`route::prompt_was_cut`): `(reported, estimated)`.
    pub prompt_cut: Option<(u64, u64)>,
    /// The turn made retrieval calls and spent its whole tool budget.
    pub tools_exhausted: bool,
}

/// One retrieval tool step of a turn, kept in the chat as a `tool_call` part.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    /// The tool.
    pub name: String,
    /// The model's arguments (`null` when they were not JSON).
    pub arguments: Value,
    /// `completed` or `denied`.
    pub status: String,
    /// One line for the user.
    pub summary: String,
    /// The user's answer, for `clarify_user` when they answered: kept with the chat so
    /// the question and its answer stay in the history the model reads later.
    pub answer: Option<String>,
}
