//! Builds the messages of a chat request. The order keeps the prompt prefix stable
//! between requests: system prompt and instructions; then one user message with read-only
//! files sorted by path, the structured history, the latest message with a file
//! summary, and writable files sorted by path.

use crate::llm::request::{ChatMessage, Role};
use std::fmt::Write as _;

use serde_json::Value;

use crate::chat::model::{Chat, ContextFile, Message};

/// One file as the prompt shows it.
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
    /// The model may change it.
    pub writable: bool,
}

/// An instruction file to append to the system prompt.
#[derive(Debug, Clone)]
pub struct Instructions {
    /// Shown as `source`, e.g. `~/.config/bb7/instructions.md`.
    pub source: String,
    /// The (expanded) text.
    pub text: String,
}

/// The system message text: the base prompt, then each instruction file wrapped in
/// `<user-instructions source="…">`.
pub fn system_text(base: &str, instructions: &[Instructions]) -> String {
    let mut s = base.trim_end().to_owned();
    for i in instructions {
        if i.text.trim().is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "\n\n<user-instructions source=\"{}\">\n{}\n</user-instructions>",
            attr(&i.source),
            i.text.trim_end()
        );
    }
    s
}

/// The single user message for a request. `history` is the chat's messages before the
/// current one; `files` are all context entries and pending outputs.
pub fn user_text(history: &[Message], files: &[PromptFile], current: &str) -> String {
    let mut readonly: Vec<&PromptFile> = files.iter().filter(|f| !f.writable).collect();
    let mut writable: Vec<&PromptFile> = files.iter().filter(|f| f.writable).collect();
    let key = |f: &&PromptFile| (f.entry.path.clone(), f.entry.start_line, f.entry.end_line);
    readonly.sort_by_key(key);
    writable.sort_by_key(key);

    let hist = history_text(history);
    // Sized up front: the text holds every context file, and growing it by doubling
    // would hold two copies at once.
    let files_len: usize = files
        .iter()
        .map(|f| f.content.len() + f.entry.path.len() + 160)
        .sum();
    let mut s = String::with_capacity(files_len + hist.len() + current.len() + 1024);
    if !readonly.is_empty() {
        s.push_str("<read-only-files>\n");
        for f in &readonly {
            push_file(&mut s, f);
        }
        s.push_str("</read-only-files>\n\n");
    }
    if !hist.is_empty() {
        s.push_str("<history>\n");
        s.push_str(&hist);
        s.push_str("</history>\n\n");
    }
    s.push_str("<current-message>\n");
    s.push_str(&file_summary(&readonly, &writable));
    s.push('\n');
    s.push_str(current.trim_end());
    s.push_str("\n</current-message>\n");
    if !writable.is_empty() {
        s.push_str("\n<writable-files>\n");
        for f in &writable {
            push_file(&mut s, f);
        }
        s.push_str("</writable-files>\n");
    }
    s
}

fn push_file(s: &mut String, f: &PromptFile) {
    let _ = write!(
        s,
        "<file path=\"{}\" file_id=\"{}\"",
        attr(&f.entry.path),
        f.file_id
    );
    if let (Some(a), Some(b)) = (f.entry.start_line, f.entry.end_line) {
        let _ = write!(s, " lines=\"{a}-{b}\"");
    }
    if f.entry.external {
        s.push_str(" external=\"true\"");
    }
    if f.pending_output {
        s.push_str(" state=\"your pending changes, not yet applied\"");
    }
    s.push_str(">\n");
    s.push_str(&f.content);
    if !f.content.ends_with('\n') {
        s.push('\n');
    }
    s.push_str("</file>\n");
}

fn file_summary(readonly: &[&PromptFile], writable: &[&PromptFile]) -> String {
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
    let mut s = String::from("Files in context: ");
    if readonly.is_empty() && writable.is_empty() {
        s.push_str("none.");
        return s;
    }
    if !writable.is_empty() {
        let _ = write!(
            s,
            "writable: {}",
            writable.iter().map(describe).collect::<Vec<_>>().join(", ")
        );
    }
    if !readonly.is_empty() {
        if !writable.is_empty() {
            s.push_str("; ");
        }
        let _ = write!(
            s,
            "read-only: {}",
            readonly.iter().map(describe).collect::<Vec<_>>().join(", ")
        );
    }
    s.push('.');
    s
}

/// The history as tagged text: messages with their text, context events as
/// self-closing tags, assistant file writes as events.
pub fn history_text(history: &[Message]) -> String {
    let mut s = String::new();
    for m in history {
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
                    let _ = writeln!(
                        events,
                        "<tool-call name=\"{}\" status=\"{}\" summary=\"{}\"/>",
                        attr(name),
                        attr(status),
                        attr(p.content.as_deref().unwrap_or(""))
                    );
                }
                "context_event" => {
                    let mut e = format!(
                        "<context-event action=\"{}\"",
                        attr(p.action.as_deref().unwrap_or(""))
                    );
                    let _ = write!(e, " path=\"{}\"", attr(p.path.as_deref().unwrap_or("")));
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
                    events.push_str(&e);
                }
                _ => {}
            }
        }
        if !text.is_empty() || !m.is_context_event() {
            let role = match m.role.as_str() {
                "user" | "assistant" | "system" => m.role.as_str(),
                _ => "system",
            };
            let _ = writeln!(
                s,
                "<message role=\"{role}\">\n{}\n</message>",
                text.trim_end()
            );
        }
        s.push_str(&events);
    }
    s
}

fn attr(v: &str) -> String {
    v.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

/// The `messages` array: system, then the one user message.
pub fn messages(system: &str, user: String) -> Vec<ChatMessage> {
    // The user text holds every context file: it is moved, not copied.
    vec![
        ChatMessage::text(Role::System, system),
        ChatMessage::text(Role::User, user),
    ]
}

/// Whether `chat` has any user message yet (titles are generated after the first).
pub fn is_first_exchange(chat: &Chat) -> bool {
    chat.messages.iter().filter(|m| m.role == "user").count() == 1
}
