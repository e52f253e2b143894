//! Liveness and progress of a streamed answer: what has arrived so far, the
//! `waiting` note while the first token is awaited, and the words of a stall, a
//! first-token timeout and a connection closed mid-answer.

use std::time::Duration;

use crate::protocol::events::TurnMessage;

/// What one attempt's response has delivered so far, for the waiting note and for
/// the messages of a stall, a first-token timeout and a dropped connection.
#[derive(Debug, Default)]
pub(super) struct Received {
    /// The response headers arrived (the server accepted the request).
    pub(super) headers: bool,
    /// Network reads that completed no event: keep-alive comments, mostly.
    pub(super) keepalive: u64,
    /// Characters of text and reasoning.
    pub(super) chars: usize,
    /// Tool calls begun.
    pub(super) calls: usize,
}

impl Received {
    pub(super) fn content(&self) -> bool {
        self.chars > 0 || self.calls > 0
    }

    /// What came before the first token: "the server sent its response headers and 14
    /// keep-alive pings".
    pub(super) fn before_content(&self) -> String {
        match (self.headers, self.keepalive) {
            (false, _) => "the server accepted the connection but sent no response headers".into(),
            (true, 0) => "the server sent its response headers, then nothing".into(),
            (true, n) => format!(
                "the server sent its response headers and {n} keep-alive ping{} (it was alive, likely still reading the prompt)",
                if n == 1 { "" } else { "s" }
            ),
        }
    }

    /// What of the answer had arrived: "1,204 characters of text and 1 tool call".
    pub(super) fn kept(&self) -> String {
        let mut parts = Vec::new();
        if self.chars > 0 {
            parts.push(format!("{} characters of text", self.chars));
        }
        if self.calls > 0 {
            parts.push(format!(
                "{} tool call{}",
                self.calls,
                if self.calls == 1 { "" } else { "s" }
            ));
        }
        if parts.is_empty() {
            "nothing of the answer".into()
        } else {
            parts.join(" and ")
        }
    }
}

/// The `notice` of a turn whose server refused tool calls.
pub const BLOCKS_NOTICE: &str = "the server refused tool calls; this model's edits are asked for as SEARCH/REPLACE blocks for the next hour, then tools are tried again (`bb7 models --reset-tools` tries them at once)";

/// How often a turn waiting for its first token says so: a quarter of the limit,
/// between 1 and 10 seconds.
pub(super) fn note_every(first_token: Duration) -> Duration {
    (first_token / 4).clamp(Duration::from_secs(1), Duration::from_secs(10))
}

/// The `waiting` note of a turn of `chat_id` that has waited `secs` for its first
/// token from a server on this machine (`local_server`) or not.
pub(super) fn waiting_note(
    local_server: bool,
    chat_id: &str,
    got: &Received,
    secs: u64,
) -> TurnMessage {
    let server = if local_server {
        "the local server"
    } else {
        "the model API"
    };
    let (received, message) = if !got.headers {
        (
            "nothing",
            format!("waiting for {server} to answer, {secs} s"),
        )
    } else if got.keepalive > 0 {
        ("pings", format!("{server} is reading the prompt, {secs} s"))
    } else {
        (
            "headers",
            format!("{server} is reading the prompt, {secs} s"),
        )
    };
    TurnMessage::Waiting {
        seconds: secs,
        received: received.to_owned(),
        message,
        chat_id: chat_id.to_owned(),
    }
}
