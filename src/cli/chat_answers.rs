//! `bb7 chat`: the answers of the questions queued while an answer streamed
//! (src/cli/chat_queue.rs), shown in order once it ends.

use tokio::signal::unix::Signal;

use super::ask::AskOptions;
use super::chat_queue::{TypeAhead, note};
use super::render::{Markdown, paint_err, style};
use super::session::Session;
use super::terminal;
use crate::front::client::Res;

/// After the answer that was streaming (`done`, its result): the queued questions'
/// answers, each under a dimmed line naming it. An answer that failed or was stopped
/// leaves the queue to the server, which holds it until an answer ends well: the
/// queue is then dropped here with a note, so nothing runs unseen.
pub(super) async fn answer_queued(
    s: &mut Session,
    t: &mut TypeAhead,
    opts: &AskOptions,
    sigint: &mut Signal,
    mut done: Res<()>,
) -> Res<()> {
    loop {
        if t.queued.is_empty() {
            return done;
        }
        // The server holds the queue after an answer that did not end well (an
        // error, a cancel, a `diff_error`): it is dropped here rather than left
        // waiting unseen. A stopped answer (Ctrl-C) needs no message of its own.
        if let Err(f) = &done {
            if f.status != crate::front::client::exit::INTERRUPTED {
                eprintln!(
                    "{}",
                    paint_err(style::ERROR, &format!("bb7: {}", terminal::err(&f.message)))
                );
            }
            t.unqueue(s).await;
            return Ok(());
        }
        let (id, text) = t.queued.remove(0);
        note(&format!("answering: {}", terminal::err(&text)));
        let md = Markdown::default();
        done = super::ask::follow(s, &id, opts, sigint, md, Some(t)).await;
    }
}
