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
use super::patch;
use super::state::{Cx, Sess, invalid};
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params::{self, NonEmpty};
use crate::protocol::replies::{ChatView, ContextList, FileContent};

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
    /// Where pasted images wait until `context_add` has read them.
    pub scratch: Vec<tempfile::TempDir>,
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

impl Gathered {
    /// A shared buffer that changed since the editor shared it: the editor's diff
    /// applied to the text the editor last shared — this prompt's own copy of the file,
    /// else the chat's snapshot of it, else the file as `fs/read_text_file` or the disk
    /// gives it (codecompanion reads the disk, so only the diff carries the unsaved
    /// edits). A text that holds the change already (a saved buffer) stands as it is.
    /// A diff that applies to none is refused by name: the model must not read a file
    /// other than the one in the user's buffer.
    async fn changed(
        &mut self,
        sess: &Sess,
        caps: &ClientCapabilities,
        c: &mut Client,
        path: &str,
        diff: &str,
        cx: &Cx,
    ) -> Result<(), RpcError> {
        let rel = locate_path(&sess.root, path)?;
        let mut bases = Vec::new();
        if let Some(i) = self
            .items
            .iter()
            .position(|i| i.rel == rel && i.range.is_none())
        {
            bases.push(self.items.remove(i).content);
        }
        // Only a whole-file snapshot is a base: a section's text would make a file of
        // a few lines.
        let whole = c
            .call::<ContextList>(Action::ContextList(params::NoParams {}))
            .await
            .is_ok_and(|l| {
                l.files
                    .iter()
                    .any(|f| f.path == rel && f.start_line.is_none() && f.kind.is_none())
            });
        if whole
            && let Ok(held) = c
                .call::<FileContent>(Action::GetContextFile(params::GetContextFile {
                    path: NonEmpty(rel.clone()),
                    start_line: None,
                    end_line: None,
                }))
                .await
        {
            bases.push(held.content.into_owned());
        }
        let mut content = buffer_text(&bases, diff);
        if content.is_none() {
            let read = read_text(sess, caps, &rel, cx).await?;
            content = buffer_text(std::slice::from_ref(&read), diff);
        }
        let Some(content) = content else {
            return Err(invalid(format!(
                "{rel}: the editor's changes to this buffer (its <attachment> diff) apply neither to bb7's snapshot of it nor to the file; nothing was sent. Save the buffer and share it again"
            )));
        };
        self.items.push(ContextItem {
            rel,
            content,
            range: None,
        });
        Ok(())
    }
}

/// The buffer's text from the first of `bases` the diff applies to, or that holds
/// its result already.
fn buffer_text(bases: &[String], diff: &str) -> Option<String> {
    bases
        .iter()
        .find_map(|b| patch::apply(b, diff).or_else(|| patch::applied(b, diff).then(|| b.clone())))
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
                        Piece::Changed { path, diff } => {
                            g.changed(sess, caps, c, &path, &diff, cx).await?
                        }
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
                // A resource an MCP server of the session lists is read and attached.
                if !super::mcp::attach_link(c, &l.uri).await? {
                    g.say(&format!("{} ({})", l.name, l.uri));
                }
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
            ContentBlock::Image(img) => image(&mut g, sess, img)?,
            ContentBlock::Audio(_) => {
                return Err(invalid(
                    "bb7 takes text, files and images only (promptCapabilities has no audio)",
                ));
            }
            _ => return Err(invalid("unknown content block")),
        }
    }
    if !previous.is_empty() {
        // avante repeats the last user messages, the new one among them: what the chat
        // holds already is not sent again.
        // A slash command is no chat message, so the chat never holds one: only the
        // newest repeated message may be one (the user just typed it); an older one
        // ran when it was new and is dropped, never run again nor sent to the model.
        let held = held_messages(c).await?;
        let fresh = blocks::new_messages(&previous, &held);
        let last = fresh.len().saturating_sub(1);
        for (i, m) in fresh.iter().enumerate() {
            let newest = i == last && previous.first() == Some(m);
            if m.trim_start().starts_with('/') && !newest {
                continue;
            }
            g.typed(m);
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

/// An `image` block: bb7's image attachment (docs/PROTOCOL.md, "Images"), with its
/// limits and refusals. An image of a project file is `context_add` of that file; a
/// pasted one (no `uri`, or not a project file) is written to a scratch file outside
/// the project, which `context_add` reads as an external, read-only image.
fn image(
    g: &mut Gathered,
    sess: &Sess,
    img: agent_client_protocol::v1::schema::ImageContent,
) -> Result<(), RpcError> {
    if let Some(uri) = img.uri.as_deref().filter(|u| is_file(u))
        && let Ok((rel, _)) = locate_uri(&sess.root, uri)
        && sess.abs(&rel).is_file()
    {
        g.items.push(ContextItem {
            rel,
            content: String::new(),
            range: None,
        });
        return Ok(());
    }
    let ext = match img.mime_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(invalid(format!(
                "an image of type {other}: bb7 takes PNG, JPEG, GIF or WebP images"
            )));
        }
    };
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(img.data.trim())
        .map_err(|e| invalid(format!("an image whose data is not base64: {e}")))?;
    let stem = img
        .uri
        .as_deref()
        .map(super::context::attachment_name)
        .map(|n| n.rsplit_once('.').map(|(s, _)| s.to_owned()).unwrap_or(n))
        .filter(|n| !n.is_empty() && !n.contains(['/', '\\']) && n != "resource")
        .unwrap_or_else(|| format!("image-{}", g.scratch.len() + 1));
    let dir = tempfile::Builder::new()
        .prefix("bb7-acp-image-")
        .tempdir()
        .map_err(|e| RpcError::new(-32603, format!("cannot keep the image: {e}")))?;
    let path = dir.path().join(format!("{stem}.{ext}"));
    std::fs::write(&path, bytes)
        .map_err(|e| RpcError::new(-32603, format!("cannot keep the image: {e}")))?;
    g.items.push(ContextItem {
        rel: path.to_string_lossy().into_owned(),
        content: String::new(),
        range: None,
    });
    g.scratch.push(dir);
    Ok(())
}
