//! Context and output handlers: adding, syncing and reading context files, reading output
//! files, diff paths and applying output to the project.

use super::*;
use crate::apply;
use crate::chat::model::AttachKind;
use crate::context::{self, ChatFiles};
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::output;
use crate::project::external_grants::{ExternalGrants, not_granted};
use crate::project::fsutil::read_text;
use crate::project::paths::{Location, locate_in_project};
use crate::protocol::params;
use crate::protocol::replies::*;
use crate::text::invisible;

/// The `ok` of an add: the snapshot's hidden characters named, if any.
fn added(path: &str, content: &str) -> Added {
    Added {
        invisible_warnings: invisible::warnings(path, content),
    }
}

/// Records in the user's state directory that the user added the external entry `cf`
/// in this project (`project::external_grants`); project entries and global chats
/// (whose directory no repository carries) need no record. Errors (`io`): the record
/// cannot be written, so the add is refused rather than unusable later.
fn grant_external(
    dirs: Option<&crate::project::UserDirs>,
    root: Option<&std::path::Path>,
    store: &crate::chat::store::ChatStore,
    cf: &crate::chat::model::ContextFile,
) -> Result<()> {
    match (dirs, root) {
        (Some(d), Some(r)) if cf.external && !store.global => {
            ExternalGrants::grant(&d.state, r, &cf.path)
        }
        _ => Ok(()),
    }
}

impl Session {
    /// Whether the external context entry `path` of the active chat may be read or
    /// shown: always for a global chat, else only if the user added it in this project
    /// (`project::external_grants`).
    pub(super) fn external_granted(
        &self,
        store: &crate::chat::store::ChatStore,
        path: &str,
    ) -> bool {
        if store.global {
            return true;
        }
        match (self.dirs.as_ref(), self.root.as_deref()) {
            (Some(d), Some(r)) => ExternalGrants::load(&d.state).allows(r, path),
            _ => false,
        }
    }

    /// Refuses a refresh of an external entry the user did not add in this project.
    /// Errors (`path_escape`): the message names the entry and says to add it again.
    fn check_external_granted(&self, key: &str) -> Result<()> {
        let Ok(active) = self.active() else {
            return Ok(());
        };
        let external = active
            .chat
            .context_files
            .iter()
            .any(|cf| cf.external && cf.path == key);
        if external && !self.external_granted(&active.store, key) {
            return Err(Error::new(ErrorCode::PathEscape, not_granted(key)));
        }
        Ok(())
    }

    /// `chat` without the external entries the user did not add in this project (the
    /// prompt leaves them out), or `None` when every entry may be shown.
    pub(super) fn without_ungranted(
        &self,
        store: &crate::chat::store::ChatStore,
        chat: &crate::chat::model::Chat,
    ) -> Option<crate::chat::model::Chat> {
        let left_out = self.left_out_external(store, chat);
        if left_out.is_empty() {
            return None;
        }
        let mut kept = chat.clone();
        kept.context_files
            .retain(|cf| !(cf.external && left_out.contains(&cf.path)));
        Some(kept)
    }

    pub(super) fn context_update(&mut self, args: params::ContextUpdate) -> Result<Added> {
        let path = args.path.as_str();
        let content = args.content.as_str();
        let key = self.locate(path)?.key();
        self.check_external_granted(&key)?;
        self.mutate(|chat, files, _| context::update_file(chat, files, &key, content))?;
        Ok(added(&key, content))
    }
    pub(super) fn context_attach(&mut self, args: params::ContextAttach) -> Result<Attached<'_>> {
        let kind = AttachKind::parse(args.kind.as_str()).map_err(Error::invalid)?;
        let (name, content, meta) = (args.name.as_str(), args.content.as_str(), args.meta);
        let done = self.mutate(|chat, files, _| {
            context::attach::attach(chat, files, kind, name, content, meta)
        })?;
        let invisible_warnings = invisible::warnings(&done.path, content);
        Ok(Attached {
            invisible_warnings,
            path: done.path.into(),
            version: done.version.into(),
            bytes: done.bytes,
            truncated: done.truncated,
        })
    }
    pub(super) fn context_remove(&mut self, args: params::PathOnly) -> Result<Ack> {
        // An attachment's path is a label, not a file: it is looked up as it is.
        let label = args.path.as_str();
        let is_attachment = self
            .active()
            .is_ok_and(|a| context::attach::find(&a.chat, label).is_some());
        if is_attachment {
            self.mutate(|chat, files, _| context::attach::remove(chat, files, label))?;
            return Ok(Ack {});
        }
        let key = self.locate(args.path.as_str())?.key();
        self.mutate(|chat, files, _| context::remove_file(chat, files, &key))?;
        Ok(Ack {})
    }
    pub(super) fn context_remove_section(&mut self, args: params::SectionRef) -> Result<Ack> {
        let key = self.locate(args.path.as_str())?.key();
        let (start, end) = (args.start_line.0, args.end_line.0);
        self.mutate(|chat, files, _| context::remove_section(chat, files, &key, start, end))?;
        Ok(Ack {})
    }
    pub(super) fn context_set_readonly(&mut self, args: params::ContextSetReadonly) -> Result<Ack> {
        let key = self.locate(args.path.as_str())?.key();
        let readonly = args.readonly;
        self.mutate(|chat, files, _| context::set_readonly(chat, files, &key, readonly))?;
        Ok(Ack {})
    }
    pub(super) fn context_list(&mut self, _: params::NoParams) -> Result<ContextList<'_>> {
        let active = self.active()?;
        Ok(ContextList {
            files: active.chat.context_files.as_slice().into(),
        })
    }
    pub(super) fn output_delete(&mut self, args: params::PathOnly) -> Result<Ack> {
        let path = args.path.as_str().to_owned();
        self.mutate(|chat, files, root| output::reject(chat, files, root, &path))?;
        self.forget_decisions(&path)?;
        Ok(Ack {})
    }
    pub(super) fn diff_local_done(&mut self, args: params::PathOnly) -> Result<MergedByHand<'_>> {
        let path = args.path.as_str().to_owned();
        let outcome =
            self.mutate(|chat, files, root| output::diff_local_done(chat, files, root, &path))?;
        if outcome == "full" {
            self.forget_decisions(&path)?;
        }
        Ok(MergedByHand {
            outcome: outcome.into(),
        })
    }
    pub(super) fn get_file_statuses(
        &mut self,
        args: params::FileStatuses,
    ) -> Result<FileStatusList<'_>> {
        let root = self.root()?.to_path_buf();
        let active = self.active()?;
        let files = ChatFiles::new(&active.store, &active.chat.id);
        let contents = args.contents.unwrap_or(true);
        let rows = output::statuses(&active.chat, files, &root, contents)?;
        Ok(FileStatusList { files: rows.into() })
    }

    /// Resolves a path for adding to context: a project path that leads outside the
    /// project through a symlink is taken as the external file it really is.
    pub(super) fn locate_for_context(&self, path: &str) -> Result<Location> {
        match self.locate(path) {
            // Only a symlink may lead out this way: a `..` that climbs out is an escape.
            Err(e)
                if e.code == ErrorCode::PathEscape
                    && !path.starts_with(".bb7")
                    && !std::path::Path::new(path)
                        .components()
                        .any(|c| c == std::path::Component::ParentDir) =>
            {
                let abs = self.root()?.join(path);
                match std::fs::canonicalize(&abs) {
                    Ok(real) if !real.starts_with(self.root()?) && real.is_file() => {
                        Ok(Location::External { abs: real })
                    }
                    _ => Err(e),
                }
            }
            other => other,
        }
    }

    /// `context_add`: the snapshot is stored, then the add is appended to the chat's
    /// journal (`chat::journal`) instead of rewriting `chat.json`, so a run of adds
    /// costs the same per add whatever the context's size; the chat in memory changes
    /// only once the journal holds the add (invariant 12).
    pub(super) fn context_add(&mut self, args: params::ContextAdd) -> Result<Added> {
        let loc = self.locate_for_context(args.path.as_str())?;
        if context::image::media_type_of(args.path.as_str()).is_some() {
            // An image: its bytes come from the file itself (a JSON string cannot
            // carry them), and it becomes an image attachment.
            let key = loc.key();
            let bytes = crate::project::fsutil::read_regular(loc.abs())
                .map_err(|e| Error::io(format!("Cannot read file {key}"), e))?;
            self.mutate(|chat, files, _| context::image::add(chat, files, &key, &bytes))?;
            return Ok(Added::default());
        }
        let content = args.content.as_str();
        let readonly = args.readonly.unwrap_or(false);
        self.check_active_held()?;
        // Adding again an external entry the chat lists but the user never added here
        // is the user's add: recorded, then its snapshot refreshed.
        if loc.is_external() {
            let key = loc.key();
            let active = self.active()?;
            let listed = context::find_file(&active.chat, &key).is_some();
            if listed && !self.external_granted(&active.store, &key) {
                let cf = context::find_file(&active.chat, &key)
                    .map(|i| active.chat.context_files[i].clone());
                if let Some(cf) = cf {
                    grant_external(self.dirs.as_ref(), self.root.as_deref(), &active.store, &cf)?;
                }
                self.mutate(|chat, files, _| context::update_file(chat, files, &key, content))?;
                return Ok(added(&key, content));
            }
        }
        let active = self.active.as_mut().ok_or_else(Error::no_active_chat)?;
        let key = loc.key();
        let index = active.paths.current(&active.chat);
        if index.contains(&key) && context::find_file(&active.chat, &key).is_some() {
            return Err(Error::new(ErrorCode::Conflict, context::FILE_EXISTS));
        }
        let files = ChatFiles::new(&active.store, &active.chat.id);
        let (cf, event) = context::new_file(&active.chat, files, &loc, content, readonly, true)?;
        grant_external(self.dirs.as_ref(), self.root.as_deref(), &active.store, &cf)?;
        active.store.journal_add(&active.chat, &cf, &event)?;
        active.chat.messages.push(event);
        active.chat.context_files.push(cf);
        active.paths.added(&active.chat, key.clone());
        Ok(added(&key, content))
    }

    pub(super) fn context_add_section(&mut self, args: params::ContextAddSection) -> Result<Added> {
        let loc = self.locate_for_context(args.path.as_str())?;
        let content = args.content.as_str();
        let (start, end) = (args.start_line.0, args.end_line.0);
        // Journaled like `context_add`.
        self.check_active_held()?;
        let active = self.active.as_mut().ok_or_else(Error::no_active_chat)?;
        let files = ChatFiles::new(&active.store, &active.chat.id);
        let (cf, event) = context::new_section(&active.chat, files, &loc, content, start, end)?;
        grant_external(self.dirs.as_ref(), self.root.as_deref(), &active.store, &cf)?;
        active.store.journal_add(&active.chat, &cf, &event)?;
        active.chat.messages.push(event);
        active.chat.context_files.push(cf);
        // Lines are named as in the file: the section starts at `start`.
        let found = invisible::find(content, usize::MAX);
        let key = loc.key();
        Ok(Added {
            invisible_warnings: invisible::warnings_for(&key, &found, |l| {
                l + usize::try_from(start).unwrap_or(1) - 1
            }),
        })
    }

    pub(super) fn sync_context(&mut self, args: params::PathOnly) -> Result<Ack> {
        let loc = self.locate_for_context(args.path.as_str())?;
        let key = loc.key();
        self.check_external_granted(&key)?;
        let text = read_text(loc.abs(), &key)?;
        self.mutate(|chat, files, _| context::update_file(chat, files, &key, &text))?;
        Ok(Ack {})
    }

    pub(super) fn get_context_file(&self, args: params::GetContextFile) -> Result<FileContent<'_>> {
        if let Ok(a) = self.active()
            && let Some(i) = context::attach::find(&a.chat, args.path.as_str())
        {
            let cf = &a.chat.context_files[i];
            let content = ChatFiles::new(&a.store, &a.chat.id).read_snapshot(cf)?;
            return Ok(FileContent {
                path: cf.path.clone().into(),
                content: content.into(),
            });
        }
        let key = self.locate_for_context(args.path.as_str())?.key();
        let start = args.start_line.map(|n| n.0);
        let end = args.end_line.map(|n| n.0);
        let a = self.active()?;
        let cf = a
            .chat
            .context_files
            .iter()
            .find(|c| {
                c.path == key && c.start_line == start && (start.is_none() || c.end_line == end)
            })
            .or_else(|| a.chat.context_files.iter().find(|c| c.path == key))
            .ok_or_else(|| Error::not_found(context::FILE_NOT_FOUND))?;
        // The snapshot as it was added, line endings included.
        let content = ChatFiles::new(&a.store, &a.chat.id).read_snapshot_exact(cf)?;
        Ok(FileContent {
            path: key.into(),
            content: content.into(),
        })
    }

    pub(super) fn get_output_file(&self, args: params::PathOnly) -> Result<FileContent<'_>> {
        let (rel, _) = locate_in_project(self.root()?, args.path.as_str())?;
        let a = self.active()?;
        let content = ChatFiles::new(&a.store, &a.chat.id)
            .read_output(&rel)?
            .ok_or_else(|| Error::not_found(context::FILE_NOT_FOUND))?;
        Ok(FileContent {
            path: rel.into(),
            content: content.into(),
        })
    }

    pub(super) fn get_diff_paths(&self, args: params::PathOnly) -> Result<DiffPaths<'_>> {
        let (rel, abs) = locate_in_project(self.root()?, args.path.as_str())?;
        let a = self.active()?;
        let output_path = ChatFiles::new(&a.store, &a.chat.id).output_path(&rel)?;
        Ok(DiffPaths {
            path: rel.into(),
            output_path: output_path.into(),
            local_path: abs.into(),
        })
    }

    /// `apply_file` / `apply_file_as`: the apply engine merges the output into the
    /// file on disk; the output is removed only once the chat recording the apply is
    /// saved (Durability 3).
    pub(super) fn apply_file(&mut self, args: params::ApplyFile) -> Result<Applied<'static>> {
        self.apply(args, false)
    }

    pub(super) fn apply_file_as(&mut self, args: params::ApplyFile) -> Result<Applied<'static>> {
        self.apply(args, true)
    }

    fn apply(&mut self, args: params::ApplyFile, to_destination: bool) -> Result<Applied<'static>> {
        let path = args.path.as_str().to_owned();
        let force = args.force.unwrap_or(false);
        let destination = match (to_destination, args.destination) {
            (true, None) => return Err(Error::invalid("Missing required field: destination")),
            (true, Some(d)) => Some(d.0),
            (false, _) => None,
        };
        self.ensure_project_chat()?;
        let checkpoints = self.checkpoints()?;
        if to_destination && args.editor_content.is_some() {
            return Err(Error::invalid(
                "editor_content is for apply_file only, not apply_file_as",
            ));
        }
        let args = apply::ApplyArgs {
            path: &path,
            destination: destination.as_deref(),
            force,
            editor_text: args.editor_content.as_deref(),
        };
        let applied = self.mutate(|chat, files, root| {
            apply::apply_output(chat, files, root, &checkpoints, &args)
        })?;
        let a = self.active()?;
        let files = ChatFiles::new(&a.store, &a.chat.id);
        files.remove_output(&applied.source)?;
        crate::review::decided::clear(files, &applied.source)?;
        Ok(Applied {
            path: applied.path.into(),
            content: applied.content.into(),
            checkpoint_id: applied.checkpoint_id.map(Into::into),
        })
    }

    /// Refuses a turn of `chat` with `model` when the chat holds images and the saved
    /// model list says the model reads no images (`input_modalities` without `image`).
    /// With no list saved yet, it is fetched (and saved) first. A model the list does
    /// not know, or that does not say, is given the images.
    pub(super) fn check_images(
        &mut self,
        chat: &crate::chat::model::Chat,
        model: &str,
    ) -> Result<()> {
        let images: Vec<&str> = chat
            .context_files
            .iter()
            .filter(|c| c.kind == Some(AttachKind::Image))
            .map(|c| c.path.as_str())
            .collect();
        if images.is_empty() {
            return Ok(());
        }
        let Some(dirs) = &self.dirs else {
            return Ok(());
        };
        let path = dirs.state.join("models.json");
        let Some(list) =
            crate::llm::models::ModelsCache::load(&path).or_else(|| self.fetch_models_now(&path))
        else {
            return Ok(());
        };
        let row = list.models.iter().find(|m| m.id == model);
        match row.and_then(|r| Some((r.takes_images()?, r))) {
            Some((false, r)) => Err(Error::invalid(format!(
                "{model} does not read images (the model list gives its input as {}); remove {} from the context, or choose a model that reads images",
                r.input_modalities.as_deref().unwrap_or_default().join(", "),
                images.join(", ")
            ))),
            _ => Ok(()),
        }
    }

    /// Drops the review decisions of `path`: its output is gone as a whole.
    fn forget_decisions(&self, path: &str) -> Result<()> {
        let (rel, _) = locate_in_project(self.root()?, path)?;
        let a = self.active()?;
        crate::review::decided::clear(ChatFiles::new(&a.store, &a.chat.id), &rel)
    }

    /// Refuses to write the active chat's work into the project when the chat is
    /// global: a global chat belongs to no project.
    pub(super) fn ensure_project_chat(&self) -> Result<()> {
        if self.active()?.store.global {
            return Err(Error::invalid(
                "This is a global chat: its output cannot be applied to a project",
            ));
        }
        Ok(())
    }
}
