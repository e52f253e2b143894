//! Fork and edit of a chat at a user message (the work is in `context::fork`), and a new
//! chat with the same context, its full files read fresh from disk.

use super::*;
use crate::chat::ids;
use crate::chat::model::ContextFile;
use crate::context::fork;
use crate::context::{self, ChatFiles};
use crate::error::Result;
use crate::project::fsutil::read_text;
use crate::protocol::params;
use crate::protocol::replies::*;

impl Session {
    /// The project root for reading project files; `None` in global-only mode.
    pub(super) fn project_root(&self) -> Option<PathBuf> {
        self.root.clone().filter(|_| !self.global_only)
    }

    pub(super) fn chat_edit(&mut self, args: params::ChatEdit) -> Result<Edited<'_>> {
        let id = args.chat_id.as_str().to_owned();
        let index = args.message_index.0 as usize;
        let content = args.content.as_str().to_owned();
        let store = self.find_store(&id)?;
        let root = self.project_root();
        let warnings = self.with_chat(&store, &id, |chat, files, _| {
            fork::edit(chat, files, root.as_deref(), index, content)
        })?;
        Ok(Edited {
            context_warnings: warnings.into(),
        })
    }

    pub(super) fn fork_chat(&mut self, args: params::ForkChat) -> Result<ForkResult<'_>> {
        let id = args.chat_id.as_str().to_owned();
        let index = args.fork_message_index.0 as usize;
        let store = self.find_store(&id)?;
        let source = if self.is_active(&store, &id) {
            self.active()?.chat.clone()
        } else {
            store.load(&id)?
        };
        let fork::Forked {
            chat,
            lock,
            content,
            warnings,
        } = fork::fork(&source, &store, self.project_root().as_deref(), index)?;
        let new_id = chat.id;
        self.locks.insert(chat_key(&store, &new_id), lock);
        self.activate(store, &new_id)?;
        Ok(ForkResult {
            new_chat_id: new_id.into(),
            fork_message_content: content.into(),
            context_warnings: warnings.into(),
        })
    }

    /// `chat_new_with_context`: an empty chat with the source's model, effort and
    /// context. Full files are read fresh from disk (the snapshot is kept for a file
    /// that cannot be read); sections are copied as they are.
    pub(super) fn chat_new_with_context(
        &mut self,
        args: params::ChatNewWithContext,
    ) -> Result<Created<'_>> {
        let id = args.source_chat_id.as_str().to_owned();
        let store = self.find_store(&id)?;
        let source = if self.is_active(&store, &id) {
            self.active()?.chat.clone()
        } else {
            store.load(&id)?
        };
        let src_files = ChatFiles::new(&store, &id);
        let (mut chat, lock) = store.create_locked(None, &source.model)?;
        self.locks.insert(chat_key(&store, &chat.id), lock);
        chat.reasoning_effort = source.reasoning_effort.clone();
        chat.tools = source.tools.clone();
        let new_id = chat.id.clone();
        let files = ChatFiles::new(&store, &new_id);
        for cf in &source.context_files {
            let fresh = if !cf.is_whole_file() {
                None
            } else {
                self.read_fresh(&cf.path)
            };
            let mut cf = cf.clone();
            let text = match fresh {
                Some(text) => {
                    cf.version = ids::file_version(&cf.path, &text);
                    text
                }
                None => src_files.read_snapshot_exact(&cf)?,
            };
            files.write_snapshot(&cf, &text)?;
            context::push_event(&mut chat, context::event_for(add_action(&cf), &cf));
            chat.context_files.push(cf);
        }
        store.save(&chat)?;
        self.activate(store, &new_id)?;
        Ok(Created { id: new_id.into() })
    }

    /// The current text of a context path on disk, as it is (a snapshot holds the
    /// file's own line endings), if it can be read.
    fn read_fresh(&self, path: &str) -> Option<String> {
        let loc = self.locate(path).ok()?;
        read_text(loc.abs(), path).ok()
    }
}

pub(super) fn add_action(cf: &ContextFile) -> &'static str {
    if cf.is_attachment() {
        "UserAttach"
    } else if cf.is_section() {
        "UserAddSection"
    } else {
        "UserAddFile"
    }
}
