//! What other bb7 processes do on the chat `bb7 chat` holds, printed above its prompt
//! as it happens: the `peer_change` notes its holder socket sends (docs/PROTOCOL.md,
//! "Extension: holder socket").

use rustyline::history::DefaultHistory;
use rustyline::{Editor, ExternalPrinter, Helper};

use super::render::{paint_err, style};
use super::terminal;

/// Starts printing `c`'s notes through `editor`'s printer, which redraws the prompt
/// and the line being typed below each one.
pub(super) fn show<H: Helper>(
    editor: &mut Editor<H, DefaultHistory>,
    c: &mut crate::front::client::Client,
) {
    let Some(mut notes) = c.notes() else {
        return;
    };
    let Ok(mut printer) = editor.create_external_printer() else {
        return;
    };
    tokio::spawn(async move {
        while let Some(n) = notes.recv().await {
            let who = match n.pid {
                Some(pid) => format!("bb7 (PID {pid})"),
                None => "another bb7".to_owned(),
            };
            let what = match (n.action.as_str(), n.status.as_str()) {
                ("send", "started") => "is asking the model in this chat".to_owned(),
                ("send", _) => "got its answer in this chat (/diff, /review)".to_owned(),
                (a, _) => format!("ran {} on this chat", terminal::err(a)),
            };
            let line = paint_err(style::DIM, &format!("bb7: {who} {what}"));
            if printer.print(format!("{line}\n")).is_err() {
                break;
            }
        }
    });
}
