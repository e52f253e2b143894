//! The user's record of external context entries, kept outside every repository in
//! `~/.bb7/external_context.json`: canonical project root → the absolute paths the
//! user added there as external context. A chat directory can be copied or cloned
//! with the project, so an external entry it lists says nothing about the user's
//! intent; only this record, written when the user adds the file on this machine,
//! lets bb7 read that file again (README, "Security": external context).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::project::fsutil::{read_regular_capped, write_json_atomic};
use crate::project::state_file::SMALL_CAP;

/// File name of the record inside `~/.bb7/`.
const FILE: &str = "external_context.json";

/// External paths the user added, by project.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExternalGrants {
    /// Absolute external paths by canonical project root.
    pub projects: BTreeMap<String, BTreeSet<String>>,
}

impl ExternalGrants {
    fn path(state_dir: &Path) -> PathBuf {
        state_dir.join(FILE)
    }

    /// Loads the record (empty when missing or damaged: a damaged record only means
    /// the user adds the file again).
    pub fn load(state_dir: &Path) -> ExternalGrants {
        read_regular_capped(&Self::path(state_dir), SMALL_CAP)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Whether the user added the external file `path` (absolute) in the project at
    /// `root`.
    pub fn allows(&self, root: &Path, path: &str) -> bool {
        self.projects
            .get(root.to_string_lossy().as_ref())
            .is_some_and(|paths| paths.contains(path))
    }

    /// Records that the user added the external file `path` in the project at `root`
    /// and saves the record. Errors (`io`): `~/.bb7/` or the record cannot be written.
    pub fn grant(state_dir: &Path, root: &Path, path: &str) -> Result<()> {
        let mut all = Self::load(state_dir);
        let set = all
            .projects
            .entry(root.to_string_lossy().into_owned())
            .or_default();
        if !set.insert(path.to_owned()) {
            return Ok(());
        }
        std::fs::create_dir_all(state_dir)
            .map_err(|e| Error::io(format!("creating {}", state_dir.display()), e))?;
        write_json_atomic(&Self::path(state_dir), &all)
    }
}

/// The message for an external entry the user did not add in this project.
pub fn not_granted(path: &str) -> String {
    format!(
        "External context {path} was not added in this project on this machine \
         (a copied or cloned chat can list it): it is kept out of the prompt and of \
         refresh until you add it again"
    )
}
