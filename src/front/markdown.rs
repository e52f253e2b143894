//! A chat as Markdown, as `bb7 show` prints it and `bb7 export` and `bb7 acp`'s
//! `/export` write it: a heading per message, context events and tool steps as italic
//! notes, system messages as quotes. Shared by both fronts (neither imports the
//! other).

use crate::chat::model::Message;
use crate::protocol::replies::ChatView;

/// A context event's name as a user reads it (`UserAddFile` → `added`).
fn event_name(action: &str) -> String {
    let known = match action {
        "UserAddFile" => "added",
        "UserAddSection" => "added a section of",
        "UserRemoveFile" => "removed",
        "UserRemoveSection" => "removed a section of",
        "UserApplyFile" => "applied the changes to",
        "UserAcceptHunk" => "accepted a change to",
        "UserRejectHunk" => "rejected a change to",
        "UserRejectOutput" => "rejected the changes to",
        "UserRollback" => "rolled back",
        "UserSaveAs" => "saved the changes as",
        "UserSetReadOnly" => "made read-only",
        "UserWriteFile" => "wrote",
        "AssistantWriteFile" => "the model wrote",
        other => return other.to_owned(),
    };
    known.to_owned()
}

/// The text of a message's `text` parts, or of a system note's `content` (the form
/// `chat_get` sends it in).
pub fn text_of(m: &Message) -> String {
    if m.parts.is_empty() {
        return m.text();
    }
    m.parts
        .iter()
        .filter(|p| p.kind == "text")
        .filter_map(|p| p.content.as_deref())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The chat as Markdown: a heading per message, context events and tool steps as
/// italic notes, system messages as quotes.
pub fn markdown(chat: &ChatView) -> String {
    let mut md = format!("# {}\n\n_{} · {}_\n", chat.name, chat.id, chat.model);
    for m in chat.messages.iter() {
        let mut notes = Vec::new();
        for p in &m.parts {
            match p.kind.as_str() {
                "context_event" => notes.push(format!(
                    "_{} {}_",
                    event_name(p.action.as_deref().unwrap_or("event")),
                    p.path.as_deref().unwrap_or("")
                )),
                "tool_call" => {
                    notes.push(format!("_tool: {}_", p.content.as_deref().unwrap_or("")));
                    if let Some(answer) = p.extra.get("answer").and_then(|v| v.as_str()) {
                        let answer = answer.split_whitespace().collect::<Vec<_>>().join(" ");
                        notes.push(format!("_answer: {answer}_"));
                    }
                }
                _ => {}
            }
        }
        let text = text_of(m);
        match m.role.as_str() {
            "user" => md.push_str(&format!("\n## You\n\n{}\n", text.trim_end())),
            "assistant" if !text.is_empty() => {
                md.push_str(&format!("\n## Assistant\n\n{}\n", text.trim_end()))
            }
            "system" => {
                for line in text.lines() {
                    md.push_str(&format!("\n> {line}"));
                }
                md.push('\n');
            }
            _ => {}
        }
        if !notes.is_empty() {
            md.push_str(&format!("\n{}\n", notes.join("  \n")));
        }
    }
    md
}
