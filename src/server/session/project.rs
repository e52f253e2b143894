//! Project and session handlers: `bb7_init`, `init`, instructions and customization info.

use super::*;
use crate::config::Config;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::project::fsutil::{read_text_opt, write_atomic};
use crate::prompt::instructions;
use crate::protocol::params;
use crate::protocol::replies::*;
use std::path::PathBuf;

impl Session {
    pub(super) fn bb7_init(&mut self, args: params::Init) -> Result<Ack> {
        let root = crate::project::canonical_root(
            args.project_root
                .as_deref()
                .ok_or_else(|| Error::invalid("Missing required field: project_root"))?,
        )?;
        Project::create(&root)?;
        self.open_root(root);
        self.warm_provider();
        Ok(Ack {})
    }

    /// `init`: a root with `.bb7/` opens that project; an absent or empty root starts
    /// global-only mode; a root without `.bb7/` is the error the reference plugin
    /// answers by retrying with an empty root.
    pub(super) fn init(&mut self, args: params::Init) -> Result<Opened<'_>> {
        let root = match args.project_root.as_deref() {
            None | Some("") => None,
            Some(r) => {
                let root = crate::project::canonical_root(r)?;
                if !Project::is_initialized(&root) {
                    return Err(Error::new(
                        ErrorCode::NotInitialized,
                        "Not initialized. Run :BB7Init",
                    ));
                }
                Some(root)
            }
        };
        let mut config_warnings = Vec::new();
        if let Some(dirs) = &self.dirs {
            config_warnings = crate::config::keys::warnings(&dirs.config);
            match Config::load(&dirs.config) {
                Ok(c) => {
                    self.config = c;
                    self.config_error = None;
                }
                Err(e) => self.config_error = Some(e.message),
            }
        }
        match root {
            Some(root) => self.open_root(root),
            None => self.open_global_only()?,
        }
        self.warm_provider();
        // Restore the chat that was active when this store was last used; a chat
        // held by another process simply stays inactive.
        if let Ok(store) = self.store(false) {
            let index = store.read_index();
            let global = index
                .active_global_chat_id
                .filter(|_| self.project.is_some())
                .and_then(|id| Some((self.store(true).ok()?, id)))
                .filter(|(g, id)| g.exists(id));
            match global {
                Some((g, id)) => {
                    let _ = self.activate(g, &id);
                }
                None => {
                    if let Some(id) = index.active_chat_id.filter(|id| store.exists(id)) {
                        let _ = self.activate(store, &id);
                    }
                }
            }
        }
        // What reading the restored chat found wrong with its journal is told now,
        // once (`chat::journal_skips`), as the chat opens.
        let restored = self
            .active
            .as_ref()
            .and_then(|a| a.store.chat_dir(&a.chat.id).ok());
        if let Some(note) = restored.and_then(|d| crate::chat::journal_skips::take(&d)) {
            config_warnings.push(note.message);
        }
        // State files set aside while opening (invariant 13) are told like the
        // config's problems: each is something bb7 worked around.
        config_warnings.extend(crate::project::state_file::take_warnings());
        Ok(Opened {
            global_only: self.project.is_none(),
            default_model: self
                .config
                .default_model
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(Into::into),
            config_error: self.config_error.as_deref().map(Into::into),
            config_warnings: config_warnings.into(),
        })
    }

    pub(super) fn open_root(&mut self, root: PathBuf) {
        self.deactivate();
        self.provider = None;
        self.warming = None;
        self.project = Project::is_initialized(&root).then(|| Project { root: root.clone() });
        self.root = Some(root);
        self.global_only = false;
    }

    /// Global-only mode: no project. The root becomes a directory inside `~/.bb7`
    /// that is never created, so no project file can resolve to anything real;
    /// `locate` refuses relative paths outright.
    fn open_global_only(&mut self) -> Result<()> {
        let sentinel = self.dirs()?.state.join("no-project");
        self.deactivate();
        self.provider = None;
        self.warming = None;
        self.project = None;
        self.root = Some(sentinel);
        self.global_only = true;
        Ok(())
    }

    /// `chat_get.instructions_info` for the active chat. A global chat never gets
    /// project instructions, so for one the project file does not exist;
    /// `project_error` is left out when there is no error (the reference plugin
    /// treats any string, even an empty one, as an error).
    pub(super) fn instructions_info(&self) -> InstructionsInfo {
        let global_path = self.dirs.as_ref().map(|d| d.global_instructions());
        let project_path = self
            .project
            .as_ref()
            .filter(|_| !self.active_is_global())
            .map(|p| p.instructions_path());
        let exists = |p: &Option<PathBuf>| p.as_ref().is_some_and(|p| p.is_file());
        let shown = |p: &Option<PathBuf>| {
            p.as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        InstructionsInfo {
            global_path: shown(&global_path),
            global_exists: exists(&global_path),
            project_exists: exists(&project_path),
            project_path: shown(&project_path),
            project_error: project_path
                .as_ref()
                .and_then(|_| self.project_instructions().err()),
            rules_files: if self.active_is_global() {
                Vec::new()
            } else {
                self.rules_files().into_iter().map(|r| r.path).collect()
            },
            invisible_warnings: self.instruction_warnings(self.active_is_global()),
        }
    }

    /// Whether the active chat is a global one (global chats get no project
    /// instructions, no file tools and no writable files).
    pub(super) fn active_is_global(&self) -> bool {
        self.active.as_ref().is_some_and(|a| a.store.global)
    }

    /// The expanded project instructions (`None` when there are none), or the
    /// reason they are invalid (a bad `@include`), which blocks sends.
    pub fn project_instructions(&self) -> std::result::Result<Option<String>, String> {
        let Some(project) = &self.project else {
            return Ok(None);
        };
        // Through `state_path`, which refuses a symlink: `.bb7/` may come from a cloned
        // repository, and `instructions -> ~/.ssh/id_rsa` would send the key with every
        // request (invariant 3).
        let path = crate::project::paths::state_path(&project.state_dir(), "instructions")
            .map_err(|_| {
                ".bb7/instructions is a symlink; bb7 reads its instructions only from a regular file there".to_owned()
            })?;
        match read_text_opt(&path, ".bb7/instructions") {
            Ok(None) => Ok(None),
            Ok(Some(text)) => instructions::expand_project(&project.root, &text)
                .map(Some)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.message),
        }
    }

    /// The invisible characters of the instructions a send would carry (global,
    /// rules files, `.bb7/instructions`), named by file and line: a rules file a
    /// repository ships is the likeliest place to hide an instruction.
    fn instruction_warnings(&self, global: bool) -> Vec<crate::text::invisible::InvisibleWarning> {
        self.instruction_files(global)
            .unwrap_or_default()
            .iter()
            .flat_map(|i| crate::text::invisible::warnings(&i.source, &i.text))
            .collect()
    }

    /// The project's rules files as the config picks them (`rules_files`,
    /// `rules_mode`; `prompt::rules`); none without a project.
    pub(super) fn rules_files(&self) -> Vec<crate::prompt::rules::RulesFile> {
        let Some(project) = &self.project else {
            return Vec::new();
        };
        let defaults = || {
            crate::prompt::rules::DEFAULT_RULES_FILES
                .iter()
                .map(|s| (*s).to_owned())
                .collect::<Vec<_>>()
        };
        let names = self.config.rules_files.clone().unwrap_or_else(defaults);
        crate::prompt::rules::find(&project.root, &names, self.config.rules_mode)
    }

    /// `get_customization_info`: `project_instructions` is true only for a project
    /// instruction file that is valid; the reason it is not goes in
    /// `project_instructions_error`, which is otherwise left out.
    pub(super) fn customization_info(&self, _: params::NoParams) -> Result<CustomizationInfo<'_>> {
        let dirs = self.dirs()?;
        let project = self.project_instructions();
        let exists = self
            .project
            .as_ref()
            .is_some_and(|p| p.instructions_path().is_file());
        Ok(CustomizationInfo {
            system_override: dirs.system_override().is_file(),
            global_instructions: dirs.global_instructions().is_file(),
            project_instructions: exists && project.is_ok(),
            project_instructions_error: project.err().map(Into::into),
            rules_files: self.rules_files().into_iter().map(|r| r.path).collect(),
            invisible_warnings: self.instruction_warnings(self.active_is_global()),
        })
    }

    pub(super) fn prepare_instructions(
        &self,
        args: params::PrepareInstructions,
    ) -> Result<InstructionsPath<'static>> {
        let level = args.level.as_str();
        let dirs = self.dirs()?;
        let (path, template) = match level {
            "project" => {
                let project = self.project.as_ref().ok_or_else(|| {
                    Error::new(ErrorCode::NotInitialized, "Not initialized. Run :BB7Init")
                })?;
                (
                    project.instructions_path(),
                    "@@ Project instructions for bb7. Lines starting with @@ are comments.\n\
                     @@ @include path/to/file includes a project file verbatim.\n",
                )
            }
            "global" => (dirs.global_instructions(), ""),
            "system" => (dirs.system_override(), ""),
            other => {
                return Err(Error::invalid(format!(
                    "Unknown instructions level: {other} (expected project, global or system)"
                )));
            }
        };
        if path.symlink_metadata().is_err() {
            write_atomic(&path, template.as_bytes())?;
        }
        Ok(InstructionsPath { path: path.into() })
    }
}
