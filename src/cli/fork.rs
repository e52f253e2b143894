//! `/fork [N]` in `bb7 chat`: a new chat branched from the active one before its N-th
//! question (default: the last), the held chat shown read-only included (docs/PROTOCOL.md,
//! "One chat, many front-ends"). The question comes back to be asked again.

use super::session::Session;
use super::terminal;
use crate::front::client::{Failure, Res};
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::{ChatView, ForkResult};

/// Forks the active chat before its `n`-th user message (1-based; the last when
/// `None`) and makes the fork active. Errors: no such question, or the server's.
pub(super) async fn fork(s: &mut Session, n: Option<&str>) -> Res<()> {
    let chat: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
    let questions: Vec<usize> = chat
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == "user")
        .map(|(i, _)| i)
        .collect();
    let which = match n {
        None => questions.len(),
        Some(n) => n
            .parse::<usize>()
            .map_err(|_| Failure::new(format!("/fork takes a question's number, not {n:?}")))?,
    };
    let Some(&index) = which.checked_sub(1).and_then(|i| questions.get(i)) else {
        return Err(Failure::new(format!(
            "this chat has {} question{}: /fork 1 … /fork {}",
            questions.len(),
            if questions.len() == 1 { "" } else { "s" },
            questions.len()
        )));
    };
    let r: ForkResult =
        s.c.call(Action::ForkChat(params::ForkChat {
            chat_id: params::NonEmpty(chat.id.to_string()),
            fork_message_index: params::Uint(index as u64),
        }))
        .await?;
    eprintln!(
        "bb7: forked chat {} before question {which} into chat {}; ask it again (or anew):",
        chat.id, r.new_chat_id
    );
    println!(
        "{}",
        terminal::safe(&r.fork_message_content, terminal::Sink::Stdout)
    );
    Ok(())
}
