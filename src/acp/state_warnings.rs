//! What `chat_select` found wrong reading a session's chat (`state_warnings`: its
//! context journal skipped, or its replay stopped early; `chat::journal_skips`), told
//! to the client as an agent message when the session is loaded or resumed, as a
//! send's notices are (`(bb7: …)`; docs/PROTOCOL.md, "Agent Client Protocol").

use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate, TextContent};

use super::state::{Cx, Sess, notify};

/// Sends each of `warnings` to the client of `sess` as an agent message.
pub(super) fn tell(cx: &Cx, sess: &Sess, warnings: &[String]) {
    for w in warnings {
        let text = TextContent::new(format!("(bb7: {w})\n\n"));
        let chunk = ContentChunk::new(ContentBlock::Text(text));
        notify(cx, sess, SessionUpdate::AgentMessageChunk(chunk));
    }
}
