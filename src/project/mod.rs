//! The project and bb7's directories on disk: `.bb7/`, `~/.bb7/` for global chats and state, `~/.config/bb7/` for config and
//! instructions. Knows files; knows nothing about models.

pub mod command_files;
pub mod confine;
pub mod confine_seccomp;
pub mod descendants;
pub mod external_grants;
pub mod flush_queue;
pub mod fsutil;
pub mod lock;
pub mod paths;
pub mod scratch;
pub mod state_file;
pub mod usage_index;
pub mod usage_log;
pub mod validate_runner;

use std::path::{Path, PathBuf};

use crate::error::ErrorCode;
use crate::error::{Error, Result};

/// bb7's per-user directories.
#[derive(Debug, Clone)]
pub struct UserDirs {
    /// `~/.bb7`: global chats (`chats/`) and `state.json`.
    pub state: PathBuf,
    /// `$XDG_CONFIG_HOME/bb7` (usually `~/.config/bb7`): `config.json`,
    /// `instructions.md`, `system_prompt.md`.
    pub config: PathBuf,
}

impl UserDirs {
    /// Finds the directories from the environment (`HOME`, `XDG_CONFIG_HOME`) through
    /// the `directories` crate. Errors when no home directory can be determined.
    pub fn from_env() -> Result<UserDirs> {
        let base = directories::BaseDirs::new()
            .ok_or_else(|| Error::new(ErrorCode::Io, "Cannot determine the home directory"))?;
        Ok(UserDirs {
            state: base.home_dir().join(".bb7"),
            config: base.config_dir().join("bb7"),
        })
    }

    /// `~/.bb7/chats`, where global chats live.
    pub fn global_chats(&self) -> PathBuf {
        self.state.join("chats")
    }

    /// The global instructions file.
    pub fn global_instructions(&self) -> PathBuf {
        self.config.join("instructions.md")
    }

    /// The optional file that replaces the embedded system prompt.
    pub fn system_override(&self) -> PathBuf {
        self.config.join("system_prompt.md")
    }
}

/// An initialised project: a canonical root that holds `.bb7/`.
#[derive(Debug, Clone)]
pub struct Project {
    /// Canonical absolute project root.
    pub root: PathBuf,
}

impl Project {
    /// Name of the state directory inside a project.
    pub const STATE_DIR: &'static str = ".bb7";

    /// `{root}/.bb7`.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(Self::STATE_DIR)
    }

    /// `{root}/.bb7/chats`.
    pub fn chats_dir(&self) -> PathBuf {
        self.state_dir().join("chats")
    }

    /// `{root}/.bb7/instructions`.
    pub fn instructions_path(&self) -> PathBuf {
        self.state_dir().join("instructions")
    }

    /// Whether `.bb7/` exists as a real directory (a symlink does not count: state
    /// from a cloned repository must not point elsewhere).
    pub fn is_initialized(root: &Path) -> bool {
        root.join(Self::STATE_DIR)
            .symlink_metadata()
            .map(|m| m.is_dir())
            .unwrap_or(false)
    }

    /// Creates `.bb7/chats/` (the `bb7_init` action). Errors: `Already initialized`
    /// when `.bb7` exists in any form.
    pub fn create(root: &Path) -> Result<()> {
        let dir = root.join(Self::STATE_DIR);
        if dir.symlink_metadata().is_ok() {
            return Err(Error::new(ErrorCode::Conflict, "Already initialized"));
        }
        std::fs::create_dir_all(dir.join("chats")).map_err(|e| Error::io("Cannot create .bb7", e))
    }
}

/// Canonicalises a `project_root` from a request. Errors when it does not exist or is
/// not a directory.
pub fn canonical_root(path: &str) -> Result<PathBuf> {
    if path.is_empty() {
        return Err(Error::invalid("Field 'project_root' must not be empty"));
    }
    let root = std::fs::canonicalize(path)
        .map_err(|_| Error::not_found(format!("Project root does not exist: {path}")))?;
    if !root.is_dir() {
        return Err(Error::invalid(format!(
            "Project root is not a directory: {path}"
        )));
    }
    Ok(root)
}

/// Whether a process with `pid` runs (it may belong to another user). Unknown on
/// systems without `kill(pid, 0)`, where it answers true so nothing is taken over.
#[cfg(unix)]
pub(crate) fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// See the Unix version.
#[cfg(not(unix))]
pub(crate) fn process_alive(_pid: u32) -> bool {
    true
}
