//! The chat this session shows read-only (`chat_select` with `read_only`), for the
//! server's viewer (`server::viewer`), which follows its holder's turns and has it
//! read again from disk when one ends (docs/PROTOCOL.md, "One chat, many front-ends").

use std::path::PathBuf;

use super::{PathIndex, Session, chat_key};
use crate::chat::ChatKey;
use crate::error::{Error, ErrorCode, Result};
use crate::protocol::params::NoParams;
use crate::protocol::replies::Ack;

impl Session {
    /// The chat open read-only and its folder (where its holder's socket is); `None`
    /// when the active chat is held here, or there is none.
    pub fn viewed_chat(&self) -> Option<(ChatKey, PathBuf)> {
        if !self.read_only {
            return None;
        }
        let a = self.active.as_ref()?;
        let dir = a.store.chat_dir(&a.chat.id).ok()?;
        Some((chat_key(&a.store, &a.chat.id), dir))
    }

    /// Reads the chat open read-only again from disk, as its holder saved it (after
    /// one of its turns or changes). A chat that cannot be read now (its holder is
    /// writing a new version, or deleted it) is kept as it was shown.
    pub fn reload_viewed(&mut self) {
        if !self.read_only {
            return;
        }
        let Some(a) = self.active.as_mut() else {
            return;
        };
        match a.store.load(&a.chat.id) {
            Ok(chat) => {
                a.chat = chat;
                a.paths = PathIndex::default();
            }
            Err(e) => tracing::info!(error = %e.message, "the viewed chat was not read again"),
        }
    }

    /// `watch` on stdin: it is served on a holder socket only (`server::holder`).
    pub(super) fn watch(&mut self, _: NoParams) -> Result<Ack> {
        Err(Error::new(
            ErrorCode::InvalidRequest,
            "`watch` is an action of the holder socket (.bb7/chats/{id}/holder.sock), \
             sent by a process that shows the chat read-only",
        ))
    }
}
