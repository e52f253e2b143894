//! `bb7 archive [CHAT]`, `bb7 unarchive CHAT` and `/archive [CHAT]` in `bb7 chat`: the
//! protocol's `chat_archive` (docs/PROTOCOL.md, "Chats"). An archived chat leaves
//! `bb7 chats` and the editors' chat lists; its folder, messages and checkpoints stay
//! as they are, and unarchiving brings it back unchanged.

use super::info;
use super::session::{Session, active_in_index};
use crate::front::client::{Failure, Res};
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::Archived;

/// Sets chat `which`'s archived flag to `archived`. `which` is an id, a unique id
/// prefix or a name (`unarchive` looks among the archived chats too); `None` is the
/// project's active chat. Prints what it did on stderr. Errors: no such chat, several
/// chats of that name, no active chat, or the server's.
pub(super) async fn set(s: &mut Session, which: Option<&str>, archived: bool) -> Res<()> {
    let id = match which {
        Some(w) => info::resolve_chat_in(s, w, !archived).await?,
        None => active_in_index(&s.root).ok_or_else(|| {
            Failure::new(format!(
                "no active chat: name the chat to {} (ids in `{}`)",
                if archived { "archive" } else { "unarchive" },
                s.cmd("bb7 chats", "/chats")
            ))
        })?,
    };
    // The project's active chat is archived where it is open: when an editor or `bb7
    // chat` holds it, that process serves the request and moves on to another chat
    // (its panes show it). A holder that does not answer leaves it to this process.
    if archived && active_in_index(&s.root).as_deref() == Some(id.as_str()) {
        let _ = s.active().await;
    }
    let done =
        s.c.call::<Archived>(Action::ChatArchive(params::ChatFlag {
            id: params::NonEmpty(id.clone()),
            pinned: None,
            archived: Some(archived),
            scope: params::Scope::default(),
        }))
        .await?;
    if archived {
        eprintln!(
            "bb7: archived chat {id}; it is left out of `{}` (`{}` brings it back)",
            s.cmd("bb7 chats", "/chats"),
            s.cmd(&format!("bb7 unarchive {id}"), &format!("/unarchive {id}"))
        );
        // The active chat was archived: the one that took its place is named.
        if let Some(next) = done.active_id {
            let how = if done.active_new { "a new chat, " } else { "" };
            eprintln!("bb7: the active chat is now {how}{next}");
        }
    } else {
        eprintln!("bb7: chat {id} is listed again");
    }
    Ok(())
}
