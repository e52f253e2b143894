//! Authentication as ACP has it (<https://agentclientprotocol.com/protocol/initialization>):
//! bb7 needs no login, only a model provider it can reach, so "authenticated" means a
//! key is configured (`OPENROUTER_API_KEY`, `api_key` in the config, a provider's own
//! key) or the configured endpoint needs none (a local provider, a base URL other than
//! OpenRouter's). The method offered is `terminal` when the client can run the agent in
//! a terminal (`clientCapabilities.auth.terminal`): it runs `bb7 acp --login`, which
//! asks for the key and stores it in the config ([`login`]); otherwise `agent`, whose
//! `authenticate` succeeds exactly when bb7 is ready. A `session/new` while bb7 is not
//! ready answers the schema's auth-required error (-32000), so the client offers its
//! login.

use std::io::{BufRead, Write};

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    AuthMethod, AuthMethodAgent, AuthMethodTerminal, ClientCapabilities,
};

use crate::config::Config;
use crate::llm::providers::Providers;
use crate::project::UserDirs;

/// The id of the `terminal` method.
pub const TERMINAL_METHOD: &str = "bb7-login";
/// The id of the `agent` method.
pub const AGENT_METHOD: &str = "bb7-config";

/// What to set when no key is configured.
const HOW: &str = "set OPENROUTER_API_KEY, or api_key in ~/.config/bb7/config.json \
                   (`bb7 acp --login` stores one), or configure a local provider";

/// Whether bb7 can reach a model: a key configured, or an endpoint that needs none.
/// An unreadable config is not ready (its error names the file).
pub fn ready() -> Result<(), String> {
    let dirs = UserDirs::from_env().map_err(|e| e.message)?;
    let cfg = Config::load(&dirs.config).map_err(|e| e.message)?;
    let p = Providers::from_config(&cfg);
    let remote_needs_no_key = !p
        .remote
        .base_url
        .starts_with(crate::llm::openai::OPENROUTER_BASE_URL);
    if p.remote.has_api_key() || remote_needs_no_key || p.local.is_some() {
        Ok(())
    } else {
        Err(format!("No API key: {HOW}"))
    }
}

/// The schema's auth-required error with why.
pub(super) fn required(why: String) -> RpcError {
    RpcError::auth_required().data(serde_json::json!({ "message": why }))
}

/// The methods `initialize` offers the client.
pub(super) fn methods(caps: &ClientCapabilities) -> Vec<AuthMethod> {
    if caps.auth.terminal {
        vec![AuthMethod::Terminal(
            AuthMethodTerminal::new(TERMINAL_METHOD, "Enter an API key")
                .description(
                    "Stores an OpenRouter API key in bb7's config (~/.config/bb7/config.json)"
                        .to_owned(),
                )
                .args(vec!["--login".to_owned()]),
        )]
    } else {
        vec![AuthMethod::Agent(
            AuthMethodAgent::new(AGENT_METHOD, "API key from bb7's config")
                .description(format!("bb7 reads its key from its config: {HOW}")),
        )]
    }
}

/// `authenticate`: succeeds when bb7 is ready, whichever method the client names.
pub(super) fn authenticate(method: &str) -> Result<(), RpcError> {
    if method != TERMINAL_METHOD && method != AGENT_METHOD {
        return Err(RpcError::invalid_params().data(serde_json::json!({
            "message": format!("unknown authentication method: {method}")
        })));
    }
    ready().map_err(required)
}

/// `bb7 acp --login`: asks for an API key on the terminal (stderr, read from stdin)
/// and stores it as `api_key` in `config.json`, keeping its other keys; the file is
/// made readable by its owner only (mode 0600). An empty answer stores nothing.
pub fn login() -> Result<String, String> {
    let dirs = UserDirs::from_env().map_err(|e| e.message)?;
    let path = dirs.config.join("config.json");
    eprint!("OpenRouter API key (https://openrouter.ai/keys) for bb7: ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let echo = EchoOff::on_stdin();
    let read = std::io::stdin().lock().read_line(&mut line);
    if echo.is_some() {
        // The user's Enter was not echoed either.
        eprintln!();
    }
    drop(echo);
    read.map_err(|e| format!("cannot read the key: {e}"))?;
    let key = line.trim();
    if key.is_empty() {
        return Err("no key given: nothing stored".into());
    }
    let mut cfg: serde_json::Value = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not valid JSON ({e}); fix it first", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let Some(obj) = cfg.as_object_mut() else {
        return Err(format!("{}: not a JSON object", path.display()));
    };
    obj.insert("api_key".into(), serde_json::Value::from(key));
    let text = serde_json::to_string_pretty(&cfg).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&dirs.config)
        .map_err(|e| format!("cannot create {}: {e}", dirs.config.display()))?;
    write_private(&path, format!("{text}\n").as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(format!("Stored the key in {}", path.display()))
}

/// Writes `bytes` to `path` with mode 0600 (an existing file's mode is narrowed too).
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        opts.mode(0o600);
        let f = opts.open(path)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        let mut f = f;
        f.write_all(bytes)?;
        return f.sync_all();
    }
    #[allow(unreachable_code)]
    {
        let mut f = opts.open(path)?;
        f.write_all(bytes)?;
        f.sync_all()
    }
}

/// The terminal on stdin with its echo off while this lives (the key is not shown as
/// it is typed); `None` when stdin is no terminal.
struct EchoOff {
    #[cfg(unix)]
    saved: libc::termios,
}

impl EchoOff {
    #[cfg(unix)]
    fn on_stdin() -> Option<EchoOff> {
        // SAFETY: `termios` is plain data that tcgetattr fills; fd 0 is stdin, and an
        // error (not a terminal) leaves it unused.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(0, &mut saved) } != 0 {
            return None;
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        // SAFETY: a termios tcgetattr filled, with one flag cleared.
        if unsafe { libc::tcsetattr(0, libc::TCSANOW, &quiet) } != 0 {
            return None;
        }
        Some(EchoOff { saved })
    }

    #[cfg(not(unix))]
    fn on_stdin() -> Option<EchoOff> {
        None
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: the settings tcgetattr gave, back on the same fd.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &self.saved);
        }
    }
}
