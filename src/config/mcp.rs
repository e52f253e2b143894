//! MCP servers in the configuration (`mcp_servers`, docs/PROTOCOL.md "MCP resources and
//! prompts"): the user's in `~/.config/bb7/config.json`, the project's in
//! `{project}/.bb7/config.json`, each a name → `{command, args, env}` (a child process
//! over stdio) or `{url, headers}` (Streamable HTTP), the shape Claude Code and VS Code
//! use. A project's servers run a command that came with the project: they start only
//! once the user has allowed that project's list ([`Consents`]), so a cloned
//! repository never runs a command on open.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::project::fsutil::write_json_atomic;

/// Seconds each request to an MCP server may take (starting it included) when its
/// entry gives no `timeout_secs`: a server that hangs is an error naming it, never a
/// stuck request.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// One entry of `mcp_servers`. Every field is optional so that one odd entry never
/// makes the whole config unreadable; [`McpServerSpec::transport`] says what is wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServerSpec {
    /// The program of a stdio server (looked up in `PATH`).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: BTreeMap<String, String>,
    /// The endpoint of a Streamable HTTP server (`http://` or `https://`).
    pub url: Option<String>,
    /// HTTP headers sent with every request (e.g. `Authorization`); never logged.
    pub headers: BTreeMap<String, String>,
    /// Claude Code's `type` (`stdio`, `http`); read only to refuse `sse`, the older
    /// transport the SDK bb7 uses does not speak.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Seconds one request may take (default [`DEFAULT_TIMEOUT_SECS`]).
    pub timeout_secs: Option<u64>,
}

/// How bb7 reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking line-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP at `url`.
    Http,
}

impl Transport {
    /// The name on the wire: `stdio` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }
    }
}

impl McpServerSpec {
    /// The entry's transport. Errors: neither or both of `command` and `url`, a `url`
    /// that is not http(s), or `type` `sse`.
    pub fn transport(&self) -> std::result::Result<Transport, String> {
        if self.kind.as_deref() == Some("sse") {
            return Err("type sse (the older HTTP+SSE transport) is not supported; use the server's Streamable HTTP endpoint".into());
        }
        match (&self.command, &self.url) {
            (Some(c), None) if !c.trim().is_empty() => Ok(Transport::Stdio),
            (None, Some(u)) if u.starts_with("http://") || u.starts_with("https://") => {
                Ok(Transport::Http)
            }
            (None, Some(_)) => Err("url must start with http:// or https://".into()),
            (Some(_), Some(_)) => Err("give either command or url, not both".into()),
            _ => Err("needs a command (stdio) or a url (Streamable HTTP)".into()),
        }
    }

    /// The request timeout.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1))
    }
}

/// The part of `{project}/.bb7/config.json` bb7 reads: its MCP servers.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ProjectConfig {
    #[serde(alias = "mcpServers")]
    mcp_servers: BTreeMap<String, McpServerSpec>,
}

/// The MCP servers of the project at `root` (`{root}/.bb7/config.json`, key
/// `mcp_servers`; `mcpServers` is read too). A missing file: none. Errors: the file
/// exists but is not JSON of that shape (the message names it).
pub fn project_servers(root: &Path) -> Result<BTreeMap<String, McpServerSpec>> {
    let path = root.join(".bb7").join("config.json");
    match crate::project::fsutil::read_regular_capped(&path, crate::project::state_file::SMALL_CAP)
    {
        Ok(bytes) => serde_json::from_slice::<ProjectConfig>(&bytes)
            .map(|c| c.mcp_servers)
            .map_err(|e| Error::invalid(format!("{}: {e}", path.display()))),
        Err(e) if crate::project::fsutil::is_damage(&e) => {
            Err(Error::invalid(format!("{}: {e}", path.display())))
        }
        Err(_) => Ok(BTreeMap::new()),
    }
}

/// The fingerprint of a project's server list: what the user allowed. A list changed
/// since (another command, another argument) must be allowed again.
pub fn fingerprint(servers: &BTreeMap<String, McpServerSpec>) -> String {
    let json = serde_json::to_vec(servers).unwrap_or_default();
    hex::encode(Sha256::digest(&json))
}

/// The user's answers about project servers, kept in `~/.bb7/mcp_consent.json`:
/// project root → the [`fingerprint`] of the server list the user allowed there.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Consents {
    /// Allowed lists by canonical project root.
    pub projects: BTreeMap<String, String>,
}

impl Consents {
    fn path(state_dir: &Path) -> std::path::PathBuf {
        state_dir.join("mcp_consent.json")
    }

    /// Loads the answers (none when the file is missing or damaged: a damaged file
    /// only means being asked again).
    pub fn load(state_dir: &Path) -> Consents {
        crate::project::fsutil::read_regular_capped(
            &Self::path(state_dir),
            crate::project::state_file::SMALL_CAP,
        )
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
    }

    /// Whether the project at `root` may start `servers` (this very list).
    pub fn allows(&self, root: &Path, servers: &BTreeMap<String, McpServerSpec>) -> bool {
        self.projects.get(&root.to_string_lossy().into_owned()) == Some(&fingerprint(servers))
    }

    /// Records that the project at `root` may start `servers` (or, with `allow` false,
    /// forgets any earlier answer) and saves the file. Errors: the file cannot be
    /// written.
    pub fn set(
        state_dir: &Path,
        root: &Path,
        servers: &BTreeMap<String, McpServerSpec>,
        allow: bool,
    ) -> Result<()> {
        let mut all = Self::load(state_dir);
        let key = root.to_string_lossy().into_owned();
        if allow {
            all.projects.insert(key, fingerprint(servers));
        } else {
            all.projects.remove(&key);
        }
        std::fs::create_dir_all(state_dir)
            .map_err(|e| Error::io(format!("creating {}", state_dir.display()), e))?;
        write_json_atomic(&Self::path(state_dir), &all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_and_fingerprints() {
        let stdio: McpServerSpec =
            serde_json::from_str(r#"{"command":"npx","args":["-y","x"]}"#).unwrap();
        assert_eq!(stdio.transport(), Ok(Transport::Stdio));
        let http: McpServerSpec =
            serde_json::from_str(r#"{"url":"http://127.0.0.1:1/mcp"}"#).unwrap();
        assert_eq!(http.transport(), Ok(Transport::Http));
        assert!(McpServerSpec::default().transport().is_err());
        let sse: McpServerSpec =
            serde_json::from_str(r#"{"type":"sse","url":"http://h/sse"}"#).unwrap();
        assert!(sse.transport().unwrap_err().contains("sse"));
        let a = BTreeMap::from([("a".to_owned(), stdio.clone())]);
        let mut changed = stdio;
        changed.args.push("--evil".into());
        let b = BTreeMap::from([("a".to_owned(), changed)]);
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }
}
