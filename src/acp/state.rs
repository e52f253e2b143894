//! What the ACP handlers share: the client's capabilities, the open sessions, the
//! connection type, and bb7 failures as JSON-RPC errors.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, SessionInfoUpdate, SessionNotification, SessionUpdate,
};
use agent_client_protocol::{Client as AcpClient, Error as RpcError};
use tokio::sync::mpsc;

use crate::error::ErrorCode;
use crate::front::{Client, Failure};

/// The ACP connection to the client, as handlers get it.
pub(super) type Cx = ConnectionTo<AcpClient>;

/// What all handlers share: the client's capabilities and the open sessions by id.
#[derive(Default)]
pub(super) struct Shared {
    /// From `initialize`; nothing is asked of a capability the client did not offer.
    pub(super) caps: Mutex<ClientCapabilities>,
    /// Open sessions by session id (= chat id).
    pub(super) sessions: tokio::sync::Mutex<HashMap<String, Arc<Sess>>>,
}

impl Shared {
    pub(super) fn caps(&self) -> ClientCapabilities {
        self.caps.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The open session `id`, or the schema's "resource not found" error.
    pub(super) async fn session(&self, id: &str) -> Result<Arc<Sess>, RpcError> {
        self.sessions.lock().await.get(id).cloned().ok_or_else(|| {
            // The schema's "resource not found" code.
            RpcError::new(-32002, format!("Session not found: {id}"))
                .data(serde_json::json!({ "uri": id }))
        })
    }
}

/// One open session.
pub(super) struct Sess {
    /// Session id = the chat's id.
    pub id: String,
    /// The project root (canonical).
    pub root: PathBuf,
    /// The chat's server; held for the length of a prompt.
    pub conn: tokio::sync::Mutex<Client>,
    /// While a prompt runs: where `session/cancel` signals it.
    pub(super) prompting: Mutex<Option<mpsc::UnboundedSender<()>>>,
    /// "Allow always" was chosen: later changes of this session apply unasked.
    pub allow_always: AtomicBool,
    /// The models offered in the `model` option: id, name, context length in tokens
    /// (0 when unknown).
    pub(super) models: Mutex<Vec<(String, String, u64)>>,
    /// The chat's model as the last `chat_get` or setting gave it.
    pub(super) model: Mutex<String>,
    /// The chat's name as the client last heard it.
    pub(super) title: Mutex<String>,
    /// What makes this process's tool-call ids differ from those of an earlier
    /// process serving the same session (its start time, base 36).
    pub(super) tag: String,
    /// Tool calls numbered so far in this process.
    pub(super) calls: std::sync::atomic::AtomicU64,
    /// The `messageId` of the running prompt's answer.
    pub(super) message: Mutex<Option<String>>,
    /// `session/cancel`s so far: a prompt that waited for the one before it to end
    /// (queued) and saw one meanwhile is cancelled without reaching the model.
    pub(super) cancels: std::sync::atomic::AtomicU64,
}

impl Sess {
    /// A tool-call id no other tool call of the session has (Zed looks ids up across
    /// the whole thread, so a new proposal must not reuse an old card's id):
    /// `<what>-<tag>-<n>`.
    pub fn call_id(&self, what: &str) -> String {
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{what}-{}-{n}", self.tag)
    }

    /// Starts a prompt: the receiver gets `()` when the client cancels it.
    pub fn start_prompt(&self) -> mpsc::UnboundedReceiver<()> {
        let id = self.call_id("msg");
        if let Ok(mut m) = self.message.lock() {
            *m = Some(id);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut p) = self.prompting.lock() {
            *p = Some(tx);
        }
        rx
    }

    /// Ends the prompt: a later cancel stops nothing.
    pub fn end_prompt(&self) {
        if let Ok(mut p) = self.prompting.lock() {
            *p = None;
        }
        if let Ok(mut m) = self.message.lock() {
            *m = None;
        }
    }

    /// `session/cancel`: stops the running prompt, if any, and the prompts queued
    /// behind it.
    pub fn cancel(&self) {
        self.cancels
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Ok(p) = self.prompting.lock()
            && let Some(tx) = p.as_ref()
        {
            let _ = tx.send(());
        }
    }

    /// The context window of the session's model in tokens, when the models list
    /// gave it.
    pub fn context_length(&self) -> Option<u64> {
        let model = self.model.lock().ok()?.clone();
        let models = self.models.lock().ok()?;
        models
            .iter()
            .find(|(id, _, _)| *id == model)
            .map(|m| m.2)
            .filter(|n| *n > 0)
    }

    /// The absolute path of project path `rel`.
    pub fn abs(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// A bb7 failure as a JSON-RPC error: requests the client got wrong (a path outside
/// the project, an unknown chat) are -32602 invalid params, others -32603; the message
/// is bb7's own, and `data.code` its code.
pub(super) fn rpc(f: Failure) -> RpcError {
    let code = match f.code {
        Some(
            ErrorCode::InvalidRequest
            | ErrorCode::PathEscape
            | ErrorCode::NotFound
            | ErrorCode::NotInitialized,
        ) => -32602,
        _ => -32603,
    };
    let data = f
        .code
        .and_then(|c| serde_json::to_value(c).ok())
        .map(|c| serde_json::json!({ "code": c }));
    RpcError::new(code, f.message).data(data)
}

/// An invalid-params error with `message`.
pub(super) fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::new(-32602, message.into())
}

/// Sends `update` for session `sess`; a closed connection only ends the prompt later.
/// The agent's chunks of a prompt carry the prompt's `messageId` (a change of it
/// starts a new message, so a client never joins two answers into one).
pub(super) fn notify(cx: &Cx, sess: &Sess, update: SessionUpdate) {
    let current = sess.message.lock().ok().and_then(|m| m.clone());
    let update = match (update, current) {
        (SessionUpdate::AgentMessageChunk(c), Some(id)) if c.message_id.is_none() => {
            SessionUpdate::AgentMessageChunk(c.message_id(id.as_str()))
        }
        (SessionUpdate::AgentThoughtChunk(c), Some(id)) if c.message_id.is_none() => {
            SessionUpdate::AgentThoughtChunk(c.message_id(id.as_str()))
        }
        (u, _) => u,
    };
    let _ = cx.send_notification(SessionNotification::new(sess.id.clone(), update));
}

/// A `session_info_update` with the chat's name `name` when the client has not heard
/// it yet (a title made for the chat, `title_model` in the config).
pub(super) fn retitle(cx: &Cx, sess: &Sess, name: &str) {
    let changed = match sess.title.lock() {
        Ok(mut t) if *t != name => {
            *t = name.to_owned();
            true
        }
        _ => false,
    };
    if changed {
        notify(
            cx,
            sess,
            SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(name.to_owned())),
        );
    }
}

/// A base-36 tag of the current time in milliseconds: see [`Sess::tag`].
pub(super) fn process_tag() -> String {
    let mut n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut out = Vec::new();
    loop {
        let d = (n % 36) as u32;
        out.push(std::char::from_digit(d, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.iter().rev().collect()
}
