//! The prompt's layout: one pure function, [`assemble`], from a chat's state to the
//! messages of its next request (docs/ARCHITECTURE.md, "The prompt's layout").
//!
//! Everything that stays the same during a chat comes first, so the provider's prompt
//! cache serves it on every turn: the system prompt with the instruction files (the tool
//! schemas travel beside it), then the context block with every file as the chat's
//! ledger first showed it, read-only files before writable ones, each sorted by path,
//! then the history, one block per message.
//! What changed comes last, as an update the model can follow: before the new user
//! message, the current text of every file whose version the model has not seen yet
//! (a pending output, a re-added snapshot, a new file), and after a failed edit the
//! retry context. The ledger records each update, so the next request renders this
//! one's tail inside its history, byte for byte: the previous request is a prefix of
//! the next one. Text bb7 does not control is fenced (`quote.rs`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;

pub use super::attachments::BlockImage;
use super::attachments::{attachment_attrs, images_of};
use super::ledger::{Ledger, ShownDiff, ShownFile, ShownImage, ShownUpdate, text_id};
use super::quote::{attr, fenced, push_fenced_by_id};
use super::retry::retry_context;
use crate::chat::model::{Chat, ContextFile, Message};
use crate::llm::request::{CacheControl, ChatMessage, Content, ContentPart, ImageUrl, Role};

/// One file as the prompt shows it now.
#[derive(Debug, Clone)]
pub struct PromptFile {
    /// The context entry.
    pub entry: ContextFile,
    /// The text shown: the pending output for writable files that have one, else the
    /// snapshot.
    pub content: String,
    /// The file id shown (of `content`).
    pub file_id: String,
    /// The content is the model's pending output, not the user's snapshot.
    pub pending_output: bool,
    /// With a pending output of a context file: the user's snapshot it changes.
    pub snapshot: Option<String>,
    /// The model may change it.
    pub writable: bool,
}

impl PromptFile {
    /// The user's version, as a new context block shows it: the snapshot, which a
    /// pending output then follows as an update. `None` for a file only the model has
    /// (its output goes to the update).
    fn shown_snapshot(&self) -> Option<ShownFile> {
        let mut shown = self.shown();
        if self.pending_output {
            shown.text = self.snapshot.clone()?;
            shown.file_id = self.entry.version.clone();
            shown.pending_output = false;
        }
        Some(shown)
    }

    /// This version as shown: a diff against `earlier` when the change is small, else
    /// the whole text.
    fn shown_after(&self, earlier: Option<&ShownFile>) -> ShownFile {
        let mut shown = self.shown();
        if let Some(prev) = earlier.filter(|_| !self.entry.is_attachment()) {
            let diff = crate::diff::unified_diff(&self.entry.path, &prev.text, &self.content);
            if !diff.is_empty() && diff.len() * DIFF_SHARE <= self.content.len() {
                shown.diff = Some(ShownDiff {
                    from_file_id: prev.file_id.clone(),
                    text: diff,
                });
            }
        }
        shown
    }

    fn shown(&self) -> ShownFile {
        ShownFile {
            path: self.entry.path.clone(),
            start_line: self.entry.start_line,
            end_line: self.entry.end_line,
            file_id: self.file_id.clone(),
            writable: self.writable,
            external: self.entry.external,
            pending_output: self.pending_output,
            text: self.content.clone(),
            diff: None,
            attachment: self.entry.kind.map(|_| attachment_attrs(&self.entry)),
            image: crate::context::image::entry_tokens(&self.entry).map(|tokens| ShownImage {
                media_type: crate::context::image::entry_media_type(&self.entry).to_owned(),
                tokens,
            }),
        }
    }
}

/// An instruction file to append to the system prompt.
#[derive(Debug, Clone)]
pub struct Instructions {
    /// Shown as `source`, e.g. `~/.config/bb7/instructions.md`.
    pub source: String,
    /// The (expanded) text.
    pub text: String,
}

/// The system message text: the base prompt, then each instruction file in a fenced
/// `<user-instructions source="…">` block.
pub fn system_text(base: &str, instructions: &[Instructions]) -> String {
    let mut s = base.trim_end().to_owned();
    for i in instructions {
        if i.text.trim().is_empty() {
            continue;
        }
        s.push_str("\n\n");
        let attrs = format!("source=\"{}\"", attr(&i.source));
        s.push_str(fenced("user-instructions", &attrs, i.text.trim_end()).trim_end());
    }
    s
}

/// What [`assemble`] reads: the chat's state before the new message.
#[derive(Debug, Clone, Copy)]
pub struct ChatState<'a> {
    /// The system text ([`system_text`]).
    pub system: &'a str,
    /// The chat's messages before the new one.
    pub history: &'a [Message],
    /// Every context entry and pending output as it is now.
    pub files: &'a [PromptFile],
    /// What earlier requests showed.
    pub ledger: &'a Ledger,
    /// The new user message.
    pub current: &'a str,
}

/// Which block of the user message a piece of text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// The context block (files as first shown).
    Context,
    /// One message of the history (with the update shown before it, for user messages).
    History,
    /// The update and the new user message.
    Tail,
}

/// One block of the user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Which part of the layout it is.
    pub kind: BlockKind,
    /// Its text.
    pub text: String,
    /// The images its text names, sent as image parts right after it, in order.
    pub images: Vec<BlockImage>,
}

/// A laid-out request: the system text, the user message's blocks in order, and the
/// ledger to save once the new user message is saved at index `history.len()`.
#[derive(Debug, Clone)]
pub struct Prompt {
    /// The system message.
    pub system: String,
    /// The user message, block by block.
    pub blocks: Vec<Block>,
    /// The ledger with this request's update recorded.
    pub ledger: Ledger,
    /// Bytes at the start of system and user text that the chat's previous request
    /// sent exactly so (0 when there was none): what a warm cache serves.
    pub reused_bytes: usize,
}

/// Where the provider is asked to cache: `ttl` (`None` for the default 5 minutes), and
/// the fewest tokens a cached prefix must have (shorter ones are not marked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakpoints {
    /// `Some("1h")` for an hour.
    pub ttl: Option<&'static str>,
    /// The provider's minimum cacheable prefix, in tokens.
    pub min_tokens: usize,
}

/// At most this many `cache_control` markers per request (Anthropic's limit).
pub const MAX_BREAKPOINTS: usize = 4;

/// A rough token count for deciding whether a prefix is long enough to cache: four bytes
/// per token, which undercounts code and prose in most tokenizers, so a marked prefix is
/// long enough.
pub fn rough_tokens(bytes: usize) -> usize {
    bytes / 4
}

impl Prompt {
    /// The user message as one text.
    pub fn user_text(&self) -> String {
        let mut s = String::with_capacity(self.blocks.iter().map(|b| b.text.len()).sum());
        for b in &self.blocks {
            s.push_str(&b.text);
        }
        s
    }

    /// Bytes of the system and user text that the next request repeats unchanged when
    /// nothing but new messages is added: everything before the tail.
    pub fn stable_bytes(&self) -> usize {
        self.system.len()
            + self
                .blocks
                .iter()
                .filter(|b| b.kind != BlockKind::Tail)
                .map(|b| b.text.len())
                .sum::<usize>()
    }

    /// The file summary shown with the new message (see [`message_bytes`]).
    pub fn summary(&self) -> &str {
        self.ledger
            .updates
            .last()
            .map_or("", |u| u.summary.as_str())
    }

    /// Bytes of system and user text together.
    pub fn total_bytes(&self) -> usize {
        self.system.len() + self.blocks.iter().map(|b| b.text.len()).sum::<usize>()
    }

    /// The `messages` array: system, then the one user message. With `breakpoints`,
    /// both are text parts, and `cache_control` marks the end of the system text, of the
    /// context block, of the history and of the whole message (at most
    /// [`MAX_BREAKPOINTS`]), each only when the prefix up to it is long enough to be
    /// cached. The user text is moved, not copied.
    pub fn messages(self, breakpoints: Option<Breakpoints>) -> Vec<ChatMessage> {
        let has_images = self.blocks.iter().any(|b| !b.images.is_empty());
        let breakpoints = match breakpoints {
            // Images need parts: with no breakpoints asked for, none is marked.
            None if has_images => Some(Breakpoints {
                ttl: None,
                min_tokens: usize::MAX,
            }),
            other => other,
        };
        let Some(bp) = breakpoints else {
            // The first block (the context block, the largest) grows into the whole
            // text: a large buffer grows in place, so its text is not copied again.
            let total: usize = self.blocks.iter().map(|b| b.text.len()).sum();
            let mut blocks = self.blocks.into_iter();
            let mut user = blocks.next().map(|b| b.text).unwrap_or_default();
            user.reserve(total - user.len());
            for b in blocks {
                user.push_str(&b.text);
            }
            return vec![
                ChatMessage::text(Role::System, self.system),
                ChatMessage::text(Role::User, user),
            ];
        };
        let marker = CacheControl {
            kind: "ephemeral",
            ttl: bp.ttl,
        };
        let mut prefix = self.system.len();
        let long_enough = |bytes: usize| rough_tokens(bytes) >= bp.min_tokens;
        let system_part = ContentPart {
            kind: "text",
            cache_control: long_enough(prefix).then(|| marker.clone()),
            text: self.system,
            image_url: None,
        };
        let mut marks = usize::from(system_part.cache_control.is_some());
        let last_history = self
            .blocks
            .iter()
            .rposition(|b| b.kind == BlockKind::History);
        let count = self.blocks.len();
        let mut parts = Vec::with_capacity(count);
        for (i, block) in self.blocks.into_iter().enumerate() {
            prefix += block.text.len();
            let stable_end = block.kind == BlockKind::Context || Some(i) == last_history;
            let mark =
                (stable_end || i + 1 == count) && marks < MAX_BREAKPOINTS && long_enough(prefix);
            marks += usize::from(mark);
            parts.push(ContentPart {
                kind: "text",
                text: block.text,
                cache_control: None,
                image_url: None,
            });
            parts.extend(block.images.into_iter().map(|i| ContentPart {
                kind: "image_url",
                text: String::new(),
                cache_control: None,
                image_url: Some(ImageUrl {
                    url: format!("data:{};base64,{}", i.media_type, i.data),
                }),
            }));
            // The breakpoint goes after the block's last part, its images included.
            if let Some(last) = parts.last_mut() {
                last.cache_control = mark.then(|| marker.clone());
            }
        }
        let message = |role, parts| ChatMessage {
            content: Content::Parts(parts),
            ..ChatMessage::text(role, "")
        };
        vec![
            message(Role::System, vec![system_part]),
            message(Role::User, parts),
        ]
    }
}

type Key<'a> = (&'a str, Option<u64>, Option<u64>);

/// A new version is shown as a diff when the diff is at most this fraction (1/n) of
/// its whole text: a small edit of a large file then adds a few lines to the prompt,
/// not the file again; a large rewrite is shown whole.
const DIFF_SHARE: usize = 4;

/// Lays out the next request of a chat (see the module documentation). Pure: the same
/// state gives the same prompt, and a request made after another one in the same chat,
/// with only messages added in between, starts with that request's text.
pub fn assemble(state: ChatState<'_>) -> Prompt {
    let valid = state.ledger.valid_updates(state.history);
    let fresh = state.ledger.base.is_empty() && valid.is_empty();
    // Read-only files first, then writable ones, each sorted by path and range: the
    // flag is the one the block first showed (kept in the ledger), so the order never
    // changes during a chat and the cached prefix stays the same.
    let by_key = |a: &ShownFile, b: &ShownFile| (a.writable, a.key()).cmp(&(b.writable, b.key()));
    // The context block is shared with the ledger it came from: it holds every file's
    // text and is the same on every request of the chat.
    let base: Arc<Vec<ShownFile>> = if fresh {
        let mut files: Vec<ShownFile> = state
            .files
            .iter()
            .filter_map(PromptFile::shown_snapshot)
            .collect();
        files.sort_by(by_key);
        Arc::new(files)
    } else if state.ledger.base.is_sorted_by(|a, b| by_key(a, b).is_le()) {
        state.ledger.base.clone()
    } else {
        let mut files = state.ledger.base.as_ref().clone();
        files.sort_by(by_key);
        Arc::new(files)
    };

    // The version of each entry the model saw last.
    let mut seen: HashMap<Key<'_>, &ShownFile> = HashMap::new();
    for f in base.iter().chain(valid.iter().flat_map(|u| u.files.iter())) {
        seen.insert(f.key(), f);
    }
    let last_seen = |f: &PromptFile| {
        let key = (f.entry.path.as_str(), f.entry.start_line, f.entry.end_line);
        seen.get(&key).copied()
    };
    let mut changed: Vec<ShownFile> = state
        .files
        .iter()
        .filter(|f| last_seen(f).is_none_or(|s| s.file_id != f.file_id))
        .map(|f| f.shown_after(last_seen(f)))
        .collect();
    changed.sort_by(|a, b| a.key().cmp(&b.key()));
    let update = ShownUpdate {
        message: state.history.len(),
        text_id: text_id(state.current),
        summary: file_summary(state.files),
        files: changed,
        retry_context: retry_context(state.history),
    };

    let mut blocks = Vec::with_capacity(state.history.len() + 2);
    if !base.is_empty() {
        blocks.push(Block {
            kind: BlockKind::Context,
            text: context_block(&base),
            images: images_of(&base),
        });
    }
    let by_message: HashMap<usize, &ShownUpdate> = valid.iter().map(|u| (u.message, *u)).collect();
    let previous = valid.last().map(|u| u.message);
    let mut bytes = state.system.len() + blocks.iter().map(|b| b.text.len()).sum::<usize>();
    let mut reused_bytes = 0;
    for (i, m) in state.history.iter().enumerate() {
        let (text, images) = match by_message.get(&i) {
            Some(u) => (user_block(u, &m.text()), images_of(&u.files)),
            None => (message_block(m), Vec::new()),
        };
        bytes += text.len();
        if Some(i) == previous {
            reused_bytes = bytes;
        }
        if !text.is_empty() {
            blocks.push(Block {
                kind: BlockKind::History,
                text,
                images,
            });
        }
    }
    blocks.push(Block {
        kind: BlockKind::Tail,
        text: user_block(&update, state.current),
        images: images_of(&update.files),
    });

    let mut updates: Vec<ShownUpdate> = valid.into_iter().cloned().collect();
    updates.push(update);
    Prompt {
        system: state.system.to_owned(),
        blocks,
        ledger: Ledger {
            chat: None,
            base,
            updates,
        },
        reused_bytes,
    }
}

const CONTEXT_INTRO: &str = "The files of this conversation as they were when it started. A later <update> replaces the version of a file shown here.\n";
const UPDATE_INTRO: &str = "These files changed, or were added, since they were last shown. A <file> holds the whole new text; a <file-diff> holds a unified diff from the version with file_id from_file_id shown earlier to the new one. Each new version replaces every earlier version of its path: edit the new one, with its file_id.\n";

fn context_block(files: &[ShownFile]) -> String {
    let len: usize = files
        .iter()
        .map(|f| f.text.len() + f.path.len() + 200)
        .sum();
    let mut s = String::with_capacity(len + 64);
    s.push_str("<context>\n");
    s.push_str(CONTEXT_INTRO);
    for f in files {
        push_file_block(&mut s, f);
    }
    s.push_str("</context>\n");
    s
}

/// One file version as a block, appended to `s`; an attachment as an
/// `<attachment … file_id="…" mode="read-only">` block.
fn push_file_block(s: &mut String, f: &ShownFile) {
    if let (Some(attrs), Some(_)) = (&f.attachment, &f.image) {
        // The image itself is the image part sent right after this block.
        let _ = writeln!(
            s,
            "<attachment {attrs} file_id=\"{}\" mode=\"read-only\"/>",
            attr(&f.file_id)
        );
        return;
    }
    if let Some(attrs) = &f.attachment {
        let attrs = format!(
            "{attrs} file_id=\"{}\" mode=\"read-only\"",
            attr(&f.file_id)
        );
        push_fenced_by_id(s, "attachment", &attrs, &f.text, &f.file_id);
        return;
    }
    let mut attrs = format!(
        "path=\"{}\" file_id=\"{}\"",
        attr(&f.path),
        attr(&f.file_id)
    );
    if let Some(d) = &f.diff {
        let _ = write!(attrs, " from_file_id=\"{}\"", attr(&d.from_file_id));
    }
    if let (Some(a), Some(b)) = (f.start_line, f.end_line) {
        let _ = write!(attrs, " lines=\"{a}-{b}\"");
    }
    attrs.push_str(if f.writable {
        " mode=\"writable\""
    } else {
        " mode=\"read-only\""
    });
    if f.external {
        attrs.push_str(" external=\"true\"");
    }
    if f.pending_output {
        attrs.push_str(" state=\"your pending changes, not yet applied\"");
    }
    match &f.diff {
        Some(d) => s.push_str(&fenced("file-diff", &attrs, &d.text)),
        None => push_fenced_by_id(s, "file", &attrs, &f.text, &f.file_id),
    }
}

/// The update shown before a user message, then the message with the file summary.
fn user_block(update: &ShownUpdate, text: &str) -> String {
    let mut s = String::new();
    if !update.files.is_empty() || update.retry_context.is_some() {
        s.push_str("<update>\n");
        if let Some(retry) = &update.retry_context {
            s.push_str(&fenced("retry-context", "", retry));
        }
        if !update.files.is_empty() {
            s.push_str(UPDATE_INTRO);
            for f in &update.files {
                push_file_block(&mut s, f);
            }
        }
        s.push_str("</update>\n");
    }
    s.push_str(&message_text(&update.summary, text));
    s
}

/// The user's message as a request shows it: the file summary, then the text, fenced.
fn message_text(summary: &str, text: &str) -> String {
    let body = format!("{summary}\n\n{}", text.trim_end());
    fenced("message", "role=\"user\"", &body)
}

/// Bytes of the new message that ends a request's tail, with the file summary the
/// request shows with it ([`Prompt::summary`]): two requests laid out for different
/// drafts differ only there.
pub fn message_bytes(summary: &str, text: &str) -> usize {
    message_text(summary, text).len()
}

fn file_summary(files: &[PromptFile]) -> String {
    let attachments: Vec<&PromptFile> = {
        let mut a: Vec<&PromptFile> = files.iter().filter(|f| f.entry.is_attachment()).collect();
        a.sort_by_key(|f| &f.entry.path);
        a
    };
    let mut sorted: Vec<&PromptFile> = files.iter().filter(|f| !f.entry.is_attachment()).collect();
    sorted.sort_by_key(|f| (&f.entry.path, f.entry.start_line, f.entry.end_line));
    let describe = |f: &&PromptFile| {
        let mut d = f.entry.path.clone();
        if let (Some(a), Some(b)) = (f.entry.start_line, f.entry.end_line) {
            let _ = write!(d, " lines {a}-{b}");
        }
        let _ = write!(d, " ({})", f.file_id);
        if f.pending_output {
            d.push_str(", with your pending changes");
        }
        d
    };
    let list = |writable: bool| {
        sorted
            .iter()
            .filter(|f| f.writable == writable)
            .map(describe)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (writable, readonly) = (list(true), list(false));
    let mut s = String::from("Files in context: ");
    match (writable.is_empty(), readonly.is_empty()) {
        (true, true) => s.push_str("none"),
        (false, true) => {
            let _ = write!(s, "writable: {writable}");
        }
        (true, false) => {
            let _ = write!(s, "read-only: {readonly}");
        }
        (false, false) => {
            let _ = write!(s, "writable: {writable}; read-only: {readonly}");
        }
    }
    s.push('.');
    if !attachments.is_empty() {
        let listed: Vec<String> = attachments
            .iter()
            .map(|f| format!("{} ({})", f.entry.path, f.file_id))
            .collect();
        let _ = write!(s, " Attachments (read-only): {}.", listed.join(", "));
    }
    s
}

/// A message of the history without a ledger entry: its text fenced, then its tool
/// calls and context events as self-closing tags.
fn message_block(m: &Message) -> String {
    let mut events = String::new();
    let mut text = String::new();
    for p in &m.parts {
        match p.kind.as_str() {
            "text" | "code" | "raw" => {
                if let Some(c) = &p.content {
                    text.push_str(c);
                }
            }
            "tool_call" => {
                let name = p.extra.get("name").and_then(Value::as_str).unwrap_or("");
                let status = p.extra.get("status").and_then(Value::as_str).unwrap_or("");
                let answer = match p.extra.get("answer").and_then(Value::as_str) {
                    Some(a) => format!(" answer=\"{}\"", attr(a)),
                    None => String::new(),
                };
                let _ = writeln!(
                    events,
                    "<tool-call name=\"{}\" status=\"{}\" summary=\"{}\"{answer}/>",
                    attr(name),
                    attr(status),
                    attr(p.content.as_deref().unwrap_or(""))
                );
            }
            // An MCP resource for the user alone is never shown, nor its coming and
            // going (context::attach::is_user_only).
            "context_event" if p.extra.get("audience").and_then(Value::as_str) == Some("user") => {}
            "context_event" => events.push_str(&context_event(p)),
            _ => {}
        }
    }
    let mut s = String::new();
    if !text.is_empty() || !m.is_context_event() {
        let role = match m.role.as_str() {
            "user" | "assistant" | "system" => m.role.as_str(),
            _ => "system",
        };
        s.push_str(&fenced(
            "message",
            &format!("role=\"{role}\""),
            text.trim_end(),
        ));
    }
    s.push_str(&events);
    s
}

fn context_event(p: &crate::chat::model::Part) -> String {
    let mut e = format!(
        "<context-event action=\"{}\" path=\"{}\"",
        attr(p.action.as_deref().unwrap_or("")),
        attr(p.path.as_deref().unwrap_or(""))
    );
    if let (Some(a), Some(b)) = (p.start_line, p.end_line) {
        let _ = write!(e, " lines=\"{a}-{b}\"");
    }
    if let Some(v) = &p.version {
        let _ = write!(e, " file_id=\"{}\"", attr(v));
    }
    if let Some(v) = &p.prev_version {
        let _ = write!(e, " previous_file_id=\"{}\"", attr(v));
    }
    if p.readonly == Some(true) {
        e.push_str(" readonly=\"true\"");
    }
    if let Some(Value::String(reason)) = p.extra.get("reason") {
        let _ = write!(e, " reason=\"{}\"", attr(reason));
    }
    if let Some(Value::String(h)) = p.extra.get("hunk") {
        let _ = write!(e, " hunk=\"{}\"", attr(h));
    }
    e.push_str("/>\n");
    e
}

/// The history as the prompt shows it without a ledger (for estimates).
pub fn history_text(history: &[Message]) -> String {
    history.iter().map(message_block).collect()
}

/// Whether `chat` has any user message yet (titles are generated after the first).
pub fn is_first_exchange(chat: &Chat) -> bool {
    chat.messages.iter().filter(|m| m.role == "user").count() == 1
}

#[cfg(test)]
#[path = "assemble_tests.rs"]
mod tests;
