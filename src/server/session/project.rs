//! Project and session handlers: `bb7_init`, `init`, instructions and customization info.

use super::*;
use crate::config::Config;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::project::fsutil::{read_text_opt, write_atomic};
use crate::prompt::instructions;
use crate::protocol::params;
use crate::protocol::{Request, ok};
use serde_json::{Value, json};
use std::path::PathBuf;

impl Session {
    pub(super) fn bb7_init(&mut self, req: &Request) -> Result<Value> {
        let args: params::Init = req.params()?;
        let root = crate::project::canonical_root(
            args.project_root
                .as_deref()
                .ok_or_else(|| Error::invalid("Missing required field: project_root"))?,
        )?;
        Project::create(&root)?;
        self.open_root(root);
        Ok(ok())
    }

    pub(super) fn init(&mut self, req: &Request) -> Result<Value> {
        let args: params::Init = req.params()?;
        let root = crate::project::canonical_root(
            args.project_root
                .as_deref()
                .ok_or_else(|| Error::invalid("Missing required field: project_root"))?,
        )?;
        if let Some(dirs) = &self.dirs {
            match Config::load(&dirs.config) {
                Ok(c) => {
                    self.config = c;
                    self.config_error = None;
                }
                Err(e) => self.config_error = Some(e.message),
            }
        }
        self.open_root(root);
        // Restore the chat that was active when this store was last used; a chat
        // held by another process simply stays inactive.
        if let Ok(store) = self.store(false)
            && let Some(id) = store.read_index().active_chat_id
            && store.exists(&id)
        {
            let _ = self.activate(store, &id);
        }
        let mut reply = json!({"type": "ok"});
        if self.project.is_none() {
            reply["global_only"] = json!(true);
        }
        if let Some(m) = self.config.default_model.as_ref().filter(|m| !m.is_empty()) {
            reply["default_model"] = json!(m);
        }
        if let Some(e) = &self.config_error {
            reply["config_error"] = json!(e);
        }
        Ok(reply)
    }

    pub(super) fn open_root(&mut self, root: PathBuf) {
        self.deactivate();
        self.provider = None;
        self.project = Project::is_initialized(&root).then(|| Project { root: root.clone() });
        self.root = Some(root);
    }

    pub(super) fn instructions_info(&self) -> Value {
        let global_path = self.dirs.as_ref().map(|d| d.global_instructions());
        let project_path = self.project.as_ref().map(|p| p.instructions_path());
        json!({
            "global_path": global_path.as_ref().map(|p| p.to_string_lossy()).unwrap_or_default(),
            "global_exists": global_path.as_ref().is_some_and(|p| p.is_file()),
            "project_path": project_path.as_ref().map(|p| p.to_string_lossy()).unwrap_or_default(),
            "project_exists": project_path.as_ref().is_some_and(|p| p.is_file()),
            "project_error": self.project_instructions().err().unwrap_or_default(),
        })
    }

    /// The expanded project instructions (`None` when there are none), or the parse
    /// error that blocks sends.
    pub fn project_instructions(&self) -> std::result::Result<Option<String>, String> {
        let Some(project) = &self.project else {
            return Ok(None);
        };
        let path = project.instructions_path();
        match read_text_opt(&path, ".bb7/instructions") {
            Ok(None) => Ok(None),
            Ok(Some(text)) => instructions::expand_project(&project.root, &text).map(Some),
            Err(e) => Err(e.message),
        }
    }

    pub(super) fn customization_info(&self) -> Result<Value> {
        let dirs = self.dirs()?;
        Ok(json!({
            "type": "customization_info",
            "system_override": dirs.system_override().is_file(),
            "global_instructions": dirs.global_instructions().is_file(),
            "project_instructions": self.project.as_ref().is_some_and(|p| p.instructions_path().is_file()),
            "project_instructions_error": self.project_instructions().err().unwrap_or_default(),
        }))
    }

    pub(super) fn prepare_instructions(&self, req: &Request) -> Result<Value> {
        let args: params::PrepareInstructions = req.params()?;
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
        Ok(json!({"type": "instructions_path", "path": path}))
    }
}
