//! `config.json` re-read when it changed: a process that holds a chat (an editor, `bb7
//! chat`) serves commands from other front-ends for hours, and after the user fixes the
//! config as an error told them, those commands must meet the fixed config, not repeat
//! the old advice (README, "One chat, many front-ends").

use std::path::Path;
use std::time::SystemTime;

use super::Session;
use crate::config::Config;

/// What tells one version of `config.json` from another without reading it: its
/// modification time and size; `None` while there is no such file.
type Stamp = Option<(SystemTime, u64)>;

/// The stamp of `config.json` in the config directory `dir`.
fn stamp(dir: &Path) -> Stamp {
    let meta = std::fs::metadata(dir.join("config.json")).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl Session {
    /// Loads the config again when its file's stamp changed since it was last loaded:
    /// the new config and its error (the previous config stays in force while the file
    /// does not parse, as at start), and the model clients built from the old one are
    /// dropped so the next turn connects as the new config says. One `stat` per request.
    pub(super) fn reload_config_if_changed(&mut self) {
        let Some(dirs) = &self.dirs else {
            return;
        };
        let now = stamp(&dirs.config);
        if now == self.config_stamp {
            return;
        }
        self.config_stamp = now;
        match Config::load(&dirs.config) {
            Ok(c) => {
                self.config = c;
                self.config_error = None;
            }
            Err(e) => self.config_error = Some(e.message),
        }
        tracing::info!(error = ?self.config_error, "config.json changed; read again");
        self.provider = None;
        self.warming = None;
        self.local_provider = None;
    }
}
