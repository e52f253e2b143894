//! Reads of the user's file through the editor (`fs/read_text_file`) that cannot get
//! the editor's text: a proposal's old text and the read-back after a write. Neither
//! takes the disk's text for the editor's without a word (docs/PROTOCOL.md, "Agent
//! Client Protocol"): a buffer over the line limit refuses the proposal by name, as
//! an apply and `/undo` refuse it; a client that refuses the read or does not answer
//! in time gets the disk's text, and the user is told so in an agent message.

use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate, TextContent};

use super::context::editor_text;
use super::state::{Cx, Sess, notify};

/// Tells the user `text` as an agent message of the session.
fn say(sess: &Sess, cx: &Cx, text: String) {
    let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
    notify(cx, sess, SessionUpdate::AgentMessageChunk(chunk));
}

/// The editor's text of `abs` (project path `path`) for a proposal's old text:
/// `Ok(Some)` the editor's, `Ok(None)` when the client refused the read or did not
/// answer (the caller shows the disk's text; the user is told), `Err` the message
/// naming the file and the limit when the buffer is too large to come over the wire.
pub(super) async fn proposal_text(
    sess: &Sess,
    cx: &Cx,
    abs: &std::path::Path,
    path: &str,
) -> Result<Option<String>, String> {
    match editor_text(sess, cx, abs).await {
        Ok(Some(t)) => Ok(Some(t)),
        Ok(None) => {
            say(
                sess,
                cx,
                format!(
                    "The editor did not give its text of {path}; the proposal shows {path} \
                     as saved on disk (unsaved edits in the editor are not in it).\n"
                ),
            );
            Ok(None)
        }
        Err(why) => Err(format!(
            "Not proposed: the editor's text of {path} could not be read ({why}); \
             nothing was written and the change stays pending in bb7"
        )),
    }
}

/// Reads `abs` (project path `path`) back from the editor after a write; `None`,
/// with the user told why, when the editor's text cannot be had (the write itself
/// was answered, so it stands).
pub(super) async fn read_back(
    sess: &Sess,
    cx: &Cx,
    abs: &std::path::Path,
    path: &str,
) -> Option<String> {
    let why = match editor_text(sess, cx, abs).await {
        Ok(Some(t)) => return Some(t),
        Ok(None) => "the editor refused the read or did not answer".to_owned(),
        Err(why) => why,
    };
    say(
        sess,
        cx,
        format!(
            "bb7 wrote {path} through the editor but could not read it back ({why}); \
             if the editor added a final line break, it is still there.\n"
        ),
    );
    None
}
