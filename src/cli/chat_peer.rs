//! What other bb7 processes do on the chat `bb7 chat` holds, printed above its prompt
//! as it happens: the `peer_change` notes its holder socket sends, and the turns a
//! guest (`bb7 ask`, another `bb7 chat`, an editor) runs there, mirrored under their
//! `peer:` ids (docs/PROTOCOL.md, "One chat, many front-ends"): a dimmed line naming
//! the other front-end, the answer rendered as it streams, its reasoning counted
//! (src/cli/reasoning.rs), its tool steps and changes. The approval and clarification
//! questions of that turn go to the guest, which answers them.

use std::collections::HashMap;

use rustyline::history::DefaultHistory;
use rustyline::{Editor, ExternalPrinter, Helper};

use super::reasoning::Collapsed;
use super::render::{Markdown, paint_err, style};
use super::terminal;
use crate::protocol::events::{HolderLeft, PeerChange, TurnMessage};

/// Starts printing `c`'s notes and peer turns through `editor`'s printer, which
/// redraws the prompt and the line being typed below each piece.
pub(super) fn show<H: Helper>(
    editor: &mut Editor<H, DefaultHistory>,
    c: &mut crate::front::client::Client,
) {
    let (Some(mut notes), Some(mut turns), Some(mut left)) = (c.notes(), c.peer_turns(), c.left())
    else {
        return;
    };
    let Ok(mut printer) = editor.create_external_printer() else {
        return;
    };
    tokio::spawn(async move {
        let mut views: HashMap<String, View> = HashMap::new();
        loop {
            let text = tokio::select! {
                Some(n) = notes.recv() => note(&n),
                Some(l) = left.recv() => holder_left(&l),
                Some(t) = turns.recv() => {
                    let view = views.entry(t.id.clone()).or_default();
                    let (text, ended) = view.message(t.message);
                    if ended {
                        views.remove(&t.id);
                    }
                    text
                }
                else => break,
            };
            if !text.is_empty() && printer.print(text).is_err() {
                break;
            }
        }
    });
}

/// The dimmed line of a `peer_change` note, with its line end.
fn note(n: &PeerChange) -> String {
    let who = match n.pid {
        Some(pid) => format!("{} (PID {pid})", front_end(pid)),
        None => "another bb7".to_owned(),
    };
    let what = match (n.action.as_str(), n.status.as_str()) {
        ("send", "started") => "is asking the model in this chat:".to_owned(),
        ("send", _) => "got its answer in this chat (/diff, /review)".to_owned(),
        (a, _) => format!("ran {} on this chat", terminal::err(a)),
    };
    format!("{}\n", paint_err(style::DIM, &format!("bb7: {who} {what}")))
}

/// What `bb7 chat` says when the process that held its chat let it go (the chat is
/// taken over, or joined where it is held now, before the next line: src/cli/chat.rs).
fn holder_left(l: &HolderLeft) -> String {
    let who = match l.pid {
        Some(pid) => format!("{} (PID {pid}), which held this chat,", front_end(pid)),
        None => "the bb7 process that held this chat".to_owned(),
    };
    let what = match l.reason.as_str() {
        "switched" => "switched to another chat; your next line takes this one over",
        _ => "has quit; your next line takes the chat over",
    };
    format!(
        "{}\n",
        paint_err(style::HEADING, &format!("bb7: {who} {what}"))
    )
}

/// The other process's front-end, from its command line where the system shows it
/// (`/proc/PID/cmdline`, Linux): `bb7 ask`, `bb7 chat`, `bb7 acp`, else `bb7`.
fn front_end(pid: u32) -> &'static str {
    let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = args.split(|b| *b == 0).skip(1).collect();
    for (word, name) in [
        (&b"ask"[..], "bb7 ask"),
        (b"chat", "bb7 chat"),
        (b"acp", "bb7 acp"),
    ] {
        if args.contains(&word) {
            return name;
        }
    }
    "bb7"
}

/// One peer turn as shown so far.
#[derive(Default)]
struct View {
    markdown: Markdown,
    reasoning: Collapsed,
}

impl View {
    /// What to print for `m` (whole lines), and whether the turn ended with it.
    fn message(&mut self, m: TurnMessage) -> (String, bool) {
        let mut out = String::new();
        if !matches!(m, TurnMessage::Thinking { .. }) {
            out.extend(self.reasoning.end());
        }
        let dim = |t: &str| format!("{}\n", paint_err(style::DIM, &format!("bb7: {t}")));
        let ended = matches!(
            m,
            TurnMessage::Done { .. } | TurnMessage::Error { .. } | TurnMessage::DiffError { .. }
        );
        match m {
            TurnMessage::Thinking { content, .. } => self.reasoning.push(&content),
            TurnMessage::Chunk { content, .. } => {
                let safe = terminal::safe(&content, terminal::Sink::Stdout);
                out.push_str(&self.markdown.push(&safe));
            }
            TurnMessage::ToolCall {
                name,
                status,
                summary,
                ..
            } if status != "requested" => {
                out.push_str(&self.flush());
                let what = if summary.is_empty() { name } else { summary };
                out.push_str(&dim(&format!("tool {status}: {}", terminal::err(&what))));
            }
            TurnMessage::Attempt {
                provider, reason, ..
            } => {
                out.push_str(&self.flush());
                out.push_str(&dim(&format!(
                    "── dropped ({reason}); the answer again, from {provider} ──"
                )));
            }
            TurnMessage::Done { changes, .. } => {
                out.push_str(&self.flush());
                for ch in &changes {
                    out.push_str(&format!("bb7: {}\n", terminal::err(ch.description())));
                }
            }
            TurnMessage::Error { message, .. } => {
                out.push_str(&self.flush());
                out.push_str(&dim(&format!(
                    "its turn ended: {}",
                    terminal::err(&message)
                )));
            }
            TurnMessage::DiffError { errors, .. } => {
                out.push_str(&self.flush());
                out.push_str(&dim(&format!(
                    "its edits could not be applied, nothing was written: {}",
                    terminal::err(&errors.join("; "))
                )));
            }
            _ => {}
        }
        (out, ended)
    }

    /// The rest of the answer, ending its line.
    fn flush(&mut self) -> String {
        let mut rest = self.markdown.finish();
        if !rest.is_empty() && !rest.ends_with('\n') {
            rest.push('\n');
        }
        rest
    }
}
