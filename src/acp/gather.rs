//! A prompt's content blocks sorted into what bb7 does with them: the files and
//! selections that become context snapshots (from `resource` and `resource_link`
//! blocks, and from the text forms of [`super::blocks`]), the attachments, the text for
//! the model (blocks joined by a blank line), and the user's typed text, where a slash
//! command may stand. A command is never taken from a resource, a link or a context
//! form: only from the last piece of text the user typed.

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, EmbeddedResourceResource,
};

use super::blocks::{self, Piece};
use super::context::{
    ContextItem, attachment_kind, attachment_name, is_file, locate_path, locate_uri, read_text,
};
use super::state::{Cx, Sess, invalid};
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::ChatView;

/// What a prompt brings.
#[derive(Default)]
pub(super) struct Gathered {
    /// Files and sections for the chat's context, in prompt order.
    pub items: Vec<ContextItem>,
    /// Attachments: kind, name, content.
    pub attachments: Vec<(&'static str, String, String)>,
    /// The message for the model: the text pieces joined by a blank line.
    pub message: String,
    /// The last piece of text the user typed: a slash command when it starts with `/`.
    pub typed: Option<String>,
}

impl Gathered {
    /// Appends a piece of the message.
    fn say(&mut self, s: &str) {
        if s.trim().is_empty() {
            return;
        }
        if !self.message.is_empty() {
            self.message.push_str("\n\n");
        }
        self.message.push_str(s);
    }

    /// Appends text the user typed.
    fn typed(&mut self, s: &str) {
        self.say(s);
        self.typed = Some(s.to_owned());
    }

    /// Adds file `path` (a path the editor wrote) read through the editor or from disk.
    async fn file(
        &mut self,
        sess: &Sess,
        caps: &ClientCapabilities,
        path: &str,
        cx: &Cx,
    ) -> Result<(), RpcError> {
        let rel = locate_path(&sess.root, path)?;
        if self.items.iter().any(|i| i.rel == rel && i.range.is_none()) {
            return Ok(());
        }
        let content = read_text(sess, caps, &rel, cx).await?;
        self.items.push(ContextItem {
            rel,
            content,
            range: None,
        });
        Ok(())
    }
}

/// Sorts `blocks` (see the module doc).
pub(super) async fn gather(
    sess: &Sess,
    caps: &ClientCapabilities,
    c: &mut Client,
    blocks: Vec<ContentBlock>,
    cx: &Cx,
) -> Result<Gathered, RpcError> {
    let mut g = Gathered::default();
    let mut previous = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => {
                for piece in blocks::split(&t.text) {
                    match piece {
                        Piece::Text(s) => g.typed(&s),
                        Piece::File(p) => g.file(sess, caps, &p, cx).await?,
                        Piece::Selection { path, snippet } => {
                            selection(&mut g, sess, caps, &path, snippet, cx).await?
                        }
                        Piece::Previous(s) => previous.push(s),
                    }
                }
            }
            ContentBlock::Resource(r) => match r.resource {
                // A diff, diagnostics, a command's output: an attachment of that kind.
                EmbeddedResourceResource::TextResourceContents(t)
                    if let Some(kind) =
                        attachment_kind(&sess.root, t.mime_type.as_deref(), &t.uri) =>
                {
                    g.attachments.push((kind, attachment_name(&t.uri), t.text));
                }
                // Text that is no file (an editor's rule, a fetched page, a symbol) is
                // part of the message; a file is context.
                EmbeddedResourceResource::TextResourceContents(t) if !is_file(&t.uri) => {
                    g.say(&format!("{}:\n{}", t.uri, t.text));
                }
                EmbeddedResourceResource::TextResourceContents(t) => {
                    let (rel, range) = locate_uri(&sess.root, &t.uri)?;
                    g.items.push(ContextItem {
                        rel,
                        content: t.text,
                        range,
                    });
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    return Err(invalid(format!(
                        "{}: bb7 takes text files only, not binary resources",
                        b.uri
                    )));
                }
                _ => return Err(invalid("unknown resource kind")),
            },
            ContentBlock::ResourceLink(l) if !is_file(&l.uri) => {
                g.say(&format!("{} ({})", l.name, l.uri));
            }
            ContentBlock::ResourceLink(l) => {
                let (rel, range) = locate_uri(&sess.root, &l.uri)?;
                let content = read_text(sess, caps, &rel, cx).await?;
                g.items.push(ContextItem {
                    rel,
                    content,
                    range,
                });
            }
            ContentBlock::Image(_) | ContentBlock::Audio(_) => {
                return Err(invalid(
                    "bb7 takes text and files only (promptCapabilities has no image or audio)",
                ));
            }
            _ => return Err(invalid("unknown content block")),
        }
    }
    if !previous.is_empty() {
        // avante repeats the last user messages, the new one among them: what the chat
        // holds already is not sent again.
        let held = held_messages(c).await?;
        for m in blocks::new_messages(&previous, &held) {
            g.typed(&m);
        }
    }
    Ok(g)
}

/// A selection: a section of its file where the snippet lies in it, else its text
/// quoted in the message.
async fn selection(
    g: &mut Gathered,
    sess: &Sess,
    caps: &ClientCapabilities,
    path: &str,
    snippet: String,
    cx: &Cx,
) -> Result<(), RpcError> {
    let rel = locate_path(&sess.root, path)?;
    let text = read_text(sess, caps, &rel, cx).await?;
    match blocks::find_lines(&text, &snippet) {
        Some(range) => g.items.push(ContextItem {
            rel,
            content: snippet,
            range: Some(range),
        }),
        None => g.say(&format!("Selected in {rel}:\n```\n{snippet}\n```")),
    }
    Ok(())
}

/// The text of the chat's user messages, oldest first.
async fn held_messages(c: &mut Client) -> Result<Vec<String>, RpcError> {
    let chat: ChatView = c
        .call(Action::ChatGet(params::NoParams {}))
        .await
        .map_err(super::state::rpc)?;
    Ok(chat
        .messages
        .iter()
        .filter(|m| m.role == "user")
        .map(|m| {
            m.parts
                .iter()
                .filter(|p| p.kind == "text")
                .filter_map(|p| p.content.as_deref())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .collect())
}
