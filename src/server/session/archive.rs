//! `chat_archive`: archiving the chat this process has active moves it on to another
//! chat, so an archived chat is never the one a send goes to (docs/PROTOCOL.md,
//! "Extension: pins and archive").

use std::borrow::Cow;

use super::Session;
use crate::error::{ErrorCode, Result};
use crate::protocol::params::{self, ChatNew, Scope};
use crate::protocol::replies::Archived;

impl Session {
    pub(super) fn chat_archive(&mut self, args: params::ChatFlag) -> Result<Archived<'static>> {
        let store = self.store(args.scope.is_global())?;
        let id = args.id.as_str().to_owned();
        // This process's active chat, or, when it has none (a command run from the
        // shell), the one the index names: the chat the next process would open.
        let leaving = args.archived == Some(true)
            && (self.is_active(&store, &id)
                || (self.active.is_none()
                    && store.read_index().active_chat_id.as_deref() == Some(id.as_str())));
        self.chat_flag(args.clone(), "archived")?;
        if !leaving {
            return Ok(Archived::default());
        }
        // The next chat is the first of the list as the chats pane shows it (pinned
        // first, then the newest) that this process can open: one another process holds
        // is passed over. None: a new chat, as a project without chats starts.
        for next in store.list(false)? {
            if next.id == id || next.locked {
                continue;
            }
            match self.activate(store.clone(), &next.id) {
                Ok(()) => {
                    return Ok(Archived {
                        active_id: Some(Cow::Owned(next.id)),
                        active_new: false,
                    });
                }
                Err(e) if e.code == ErrorCode::Locked => continue,
                Err(e) => {
                    tracing::info!(chat = %next.id, error = %e.message, "not opened after an archive");
                    continue;
                }
            }
        }
        let created = self.chat_new(ChatNew {
            name: None,
            model: None,
            scope: Scope {
                global: store.global.then_some(true),
            },
        })?;
        Ok(Archived {
            active_id: Some(Cow::Owned(created.id.into_owned())),
            active_new: true,
        })
    }
}
