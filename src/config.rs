//! User configuration (`~/.config/bb7/config.json`) and
//! global state (`~/.bb7/state.json`).

pub mod keys;
pub mod mcp;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::project::fsutil::write_json_atomic;

/// The model used when neither config nor state names one.
pub const FALLBACK_MODEL: &str = "anthropic/claude-sonnet-4";

/// `config.json`. Every field is optional; unknown fields are ignored.
#[derive(Clone, Deserialize, Default)]
#[serde(default)]
pub struct Config {
    /// API key; `OPENROUTER_API_KEY` in the environment overrides it. Never logged.
    pub api_key: Option<String>,
    /// OpenAI-compatible base URL; default `https://openrouter.ai/api/v1`.
    pub base_url: Option<String>,
    /// Model for new chats (overrides the last used one when set).
    pub default_model: Option<String>,
    /// Model for automatic titles.
    pub title_model: Option<String>,
    /// Send `prompt_cache_key` (`bb7:<chat-id>:<model>`).
    pub explicit_cache_key: bool,
    /// `cache_control` breakpoints for models that need them: `auto` (default, 5
    /// minutes), `5m`, `1h` or `off` (`prompt::cache::PromptCache`).
    pub prompt_cache: Option<String>,
    /// Largest expected input cost of one send in USD; a send expected to cost more
    /// fails before anything is billed. Unset: no limit.
    pub max_cost_per_send: Option<f64>,
    /// Budget of one chat in USD (the sum of its answers' costs): at 80% a turn's
    /// `done` warns once, and once it is spent a send fails before anything is billed.
    /// Unset: no limit.
    pub max_cost_per_chat: Option<f64>,
    /// The remote model's context window in tokens, for the context gauge when
    /// `providers.remote.context_window` is not set (docs/PROTOCOL.md, "Extension:
    /// context gauge"). Unset: the models list's `context_length`.
    pub context_window: Option<u64>,
    /// Budget of one local calendar day in USD, summed from `~/.bb7/usage.csv` (every
    /// project); warned and enforced as `max_cost_per_chat`. Unset: no limit.
    pub max_cost_per_day: Option<f64>,
    /// One hidden repair round after partly failed edits.
    pub auto_retry_partial_edits: bool,
    /// Allow providers that retain data transiently (default true).
    pub allow_data_retention: Option<bool>,
    /// Allow providers that train on inputs (default false).
    pub allow_training: bool,
    /// `edit_file` schema: `search_replace_multi` (default), `search_replace`,
    /// `anchored` or `off`.
    pub diff_mode: Option<String>,
    /// How the model sends file edits (default [`EditFormat::Auto`]).
    pub edit_format: Option<EditFormat>,
    /// `edit_format` for single models, by model id; wins over `edit_format`.
    pub model_edit_formats: std::collections::BTreeMap<String, EditFormat>,
    /// Seconds without any bytes from the server (keep-alive pings included) before a
    /// turn whose answer has begun fails as stalled (default 120).
    pub stream_timeout_secs: Option<u64>,
    /// Seconds from sending a request to its first text, reasoning or tool call before
    /// the turn fails (default 600, never below `stream_timeout_secs`): a local server
    /// reading a long prompt sends nothing else, or only keep-alive pings, meanwhile.
    pub first_token_timeout_secs: Option<u64>,
    /// First retry delay in milliseconds for 429/5xx before any content (default
    /// 1000, doubled per retry; `Retry-After` wins when sent).
    pub retry_backoff_ms: Option<u64>,
    /// Flush bb7's own state (chats, snapshots, index) before each reply instead of in
    /// the background (docs/ARCHITECTURE.md, Durability 8). Default false.
    pub sync_writes: bool,
    /// Send the API key over plain `http://` to a host other than this machine
    /// (refused by default: anyone on the way could read it). Default false.
    pub allow_insecure_http: bool,
    /// Named model endpoints: `local` and `remote` are the ones routing uses. A
    /// `remote` missing here is the top-level `base_url` / `api_key` / `default_model`.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Which provider a turn uses (default `remote`); a chat's own `agent_mode` wins.
    pub agent_mode: Option<AgentMode>,
    /// `hybrid_auto`: local attempts whose edits fail (bad schema or no match) before
    /// the turn moves to the remote provider (default 2).
    pub hybrid_max_local_attempts: Option<u32>,
    /// `hybrid_auto`: move to remote after the failed local attempts (default true;
    /// false ends the turn with the local `diff_error`).
    pub hybrid_remote_on_schema_fail: Option<bool>,
    /// `hybrid_auto`: move to remote when the prompt does not fit the local context
    /// window, estimated before sending or reported by the server (default true).
    pub hybrid_remote_on_context_overflow: Option<bool>,
    /// `hybrid_auto`: milliseconds a local attempt may take before the turn moves to
    /// remote (default 60000; 0 waits as long as the stream sends data).
    pub hybrid_remote_on_timeout_ms: Option<u64>,
    /// `hybrid_auto`: retrieval tool calls a local attempt may make; an attempt that
    /// spends them all and leaves no usable edit moves the turn to remote
    /// (`tool_budget`). Unset: the local attempt has `max_tool_calls_per_job` like any.
    pub hybrid_tool_budget: Option<u32>,
    /// `hybrid_auto`: a shell command (`sh -c`) run in a scratch copy of the project
    /// with the local attempt's edits applied (never in the project itself); a
    /// non-zero exit moves the turn to remote (`validation_failed`). Unset: no check.
    pub hybrid_validate_command: Option<String>,
    /// `hybrid_auto`: directories besides its scratch copy where the validation
    /// command may write (Linux with Landlock confines it to those; a leading `~/` is
    /// the home directory), e.g. a build tool's cache such as `~/.cargo`. Unset: none.
    pub hybrid_validate_writable: Option<Vec<String>>,
    /// Retrieval tools: most calls in one turn (default 12).
    pub max_tool_calls_per_job: Option<u32>,
    /// Retrieval tools: `search_project` results when the model gives no `limit`
    /// (default 20).
    pub max_search_results_default: Option<u32>,
    /// Retrieval tools: most `search_project` results, whatever `limit` asks (default 50).
    pub max_search_results_cap: Option<u32>,
    /// Retrieval tools: most lines of one search snippet (default 20).
    pub max_search_snippet_lines: Option<u32>,
    /// Retrieval tools: bytes `read_file` returns when the model gives no `max_bytes`
    /// (default 65536).
    pub max_read_bytes_default: Option<u64>,
    /// Retrieval tools: most lines one `read_file` returns (default 800).
    pub max_read_lines_default: Option<u32>,
    /// Rules files (conventions files of coding assistants) to include as project
    /// instructions, in order of preference; unset: `prompt::rules::DEFAULT_RULES_FILES`.
    pub rules_files: Option<Vec<String>>,
    /// Whether the first rules file found is used or every one (default
    /// [`RulesMode::First`]).
    pub rules_mode: RulesMode,
    /// MCP servers whose resources and prompts the user may attach, by name
    /// (`config::mcp`, docs/PROTOCOL.md "MCP resources and prompts").
    pub mcp_servers: BTreeMap<String, mcp::McpServerSpec>,
}

/// Which of the rules files found are included (`rules_mode` in the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RulesMode {
    /// Only the first file of `rules_files` that exists (the default: projects often
    /// carry the same conventions in several of these files, e.g. a `CLAUDE.md` that
    /// repeats `AGENTS.md`, and each copy would be paid for on every request).
    #[default]
    First,
    /// Every file of `rules_files` that exists, in that order.
    All,
}

/// Which provider answers a turn (`agent_mode` in the config and per chat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AgentMode {
    /// Only the `local` provider; never falls back.
    Local,
    /// Only the `remote` provider (the single endpoint of older configs).
    #[default]
    Remote,
    /// Start on `local`, move to `remote` on a detectable failure.
    HybridAuto,
}

impl AgentMode {
    /// The mode's name on the wire and in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentMode::Local => "local",
            AgentMode::Remote => "remote",
            AgentMode::HybridAuto => "hybrid_auto",
        }
    }

    /// Reads a mode name. Errors: any other text, with the accepted names.
    pub fn parse(text: &str) -> Result<AgentMode> {
        match text {
            "local" => Ok(AgentMode::Local),
            "remote" => Ok(AgentMode::Remote),
            "hybrid_auto" => Ok(AgentMode::HybridAuto),
            _ => Err(Error::invalid(
                "Field 'agent_mode' must be local, remote or hybrid_auto",
            )),
        }
    }
}

/// The wire protocol of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ProviderApi {
    /// OpenAI-compatible chat completions (OpenRouter, Ollama, llama.cpp, vLLM, …).
    #[default]
    Openai,
    /// Anthropic's native Messages API.
    Anthropic,
}

/// One entry of `providers`: a model endpoint. Every field is optional.
#[derive(Clone, Deserialize, Default)]
#[serde(default)]
pub struct ProviderConfig {
    /// Base URL, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    /// `openai` (default) or `anthropic` (`base_url` e.g. `https://api.anthropic.com/v1`).
    pub api: Option<ProviderApi>,
    /// Model id this provider runs.
    pub model: Option<String>,
    /// API key. Never logged.
    pub api_key: Option<String>,
    /// Name of an environment variable holding the API key (used when `api_key` is
    /// not set).
    pub api_key_env: Option<String>,
    /// How this provider's model proposes edits.
    pub edit_format: Option<EditFormat>,
    /// Extra HTTP headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// The model's context window in tokens; a prompt estimated above it is not sent
    /// (in `hybrid_auto` it goes to remote instead). Also read as `context_length`
    /// (OpenRouter's model list) or `num_ctx` (Ollama).
    #[serde(alias = "context_length", alias = "num_ctx")]
    pub context_window: Option<u64>,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api", &self.api)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("api_key_env", &self.api_key_env)
            .field("edit_format", &self.edit_format)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("context_window", &self.context_window)
            .finish()
    }
}

/// How the model sends file edits (config `edit_format`, docs/PROTOCOL.md, "Edits as
/// text blocks").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EditFormat {
    /// The `write_file` / `edit_file` tool calls.
    Tools,
    /// No tools in the request: SEARCH/REPLACE blocks in the answer text.
    Blocks,
    /// Tools when the model list says the model supports them (or does not know the
    /// model), blocks otherwise; a server that refuses `tools` makes the turn retry
    /// once as blocks, remembered for that model.
    #[default]
    Auto,
}

impl Config {
    /// The edit format configured for `model`: its `model_edit_formats` entry, else
    /// `edit_format`, else `auto`.
    pub fn edit_format_for(&self, model: &str) -> EditFormat {
        self.model_edit_formats
            .get(model)
            .copied()
            .or(self.edit_format)
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            // A URL may hold a key in its user info or query (invariant 16).
            .field("base_url", &self.base_url.as_ref().map(|_| "<set>"))
            .field("default_model", &self.default_model)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Loads `dir/config.json` (missing file: defaults) and applies
    /// `OPENROUTER_API_KEY`. Errors: the file exists but is not valid JSON; the message
    /// starts with `path:line:column:`.
    pub fn load(dir: &Path) -> Result<Config> {
        let path = dir.join("config.json");
        // Opened as a regular file within its cap: a named pipe or a device in its place
        // is an error, never a hang (invariant 13). The user's own file: never moved.
        let mut cfg: Config = match crate::project::fsutil::read_regular_capped(
            &path,
            crate::project::state_file::SMALL_CAP,
        ) {
            Ok(bytes) => {
                let de = &mut serde_json::Deserializer::from_slice(&bytes);
                serde_path_to_error::deserialize(de)
                    .map_err(|e| Error::invalid(broken(&path, &e.path().to_string(), e.inner())))?
            }
            Err(e) if crate::project::fsutil::is_damage(&e) => {
                return Err(Error::invalid(format!("{}: {e}", path.display())));
            }
            Err(_) => Config::default(),
        };
        if let Ok(key) = std::env::var("OPENROUTER_API_KEY")
            && !key.is_empty()
        {
            cfg.api_key = Some(key);
        }
        Ok(cfg)
    }

    /// Whether an API key is configured.
    pub fn has_api_key(&self) -> bool {
        self.api_key.as_deref().is_some_and(|k| !k.is_empty())
    }
}

/// The message for a config file that does not parse: the file, line and column
/// first (as compilers print them, so editors can jump there), then what is wrong.
fn broken(path: &Path, key: &str, e: &serde_json::Error) -> String {
    let full = e.to_string();
    // serde_json ends its message with " at line L column C"; the position leads here.
    let what = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(head, _)| head);
    let (line, column) = (e.line(), e.column());
    // Well-formed JSON with a value of the wrong type is not a syntax error.
    let problem = match e.classify() {
        serde_json::error::Category::Data => format!("{key} has the wrong type"),
        _ => "the config file is not valid JSON".to_owned(),
    };
    format!(
        "{}:{line}:{column}: {problem} (line {line}, column {column}): {what}",
        path.display()
    )
}

/// `~/.bb7/state.json`: `{"favorites":[model ids],"last_model":"…","models_without_tools":[model ids]}`.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct GlobalState {
    /// Favourite model ids, in the user's order.
    #[serde(default)]
    pub favorites: Vec<String>,
    /// The model used last, for new chats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_model: Option<String>,
    /// Models whose server refused a request with `tools`: `auto` sends them blocks
    /// for [`TOOLS_REPROBE_SECS`] after the refusal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models_without_tools: Vec<String>,
    /// When each model of `models_without_tools` was refused, in Unix seconds. A model
    /// listed without a time (written by an older bb7) is tried with tools again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools_refused_at: BTreeMap<String, i64>,
    /// Fields this version does not know, kept.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// How long a server's refusal of `tools` is believed: after an hour a turn tries
/// tools again (the server may have been restarted with them on, e.g. llama.cpp's
/// `--jinja`), and a new refusal starts another hour.
pub const TOOLS_REPROBE_SECS: i64 = 3600;

impl GlobalState {
    /// Whether `model`'s server refused `tools` less than [`TOOLS_REPROBE_SECS`]
    /// before `now` (Unix seconds).
    pub fn refuses_tools(&self, model: &str, now: i64) -> bool {
        self.models_without_tools.iter().any(|m| m == model)
            && self
                .tools_refused_at
                .get(model)
                .is_some_and(|at| now - at < TOOLS_REPROBE_SECS)
    }

    /// Records that `model`'s server refused `tools` at `now` (Unix seconds).
    pub fn remember_tools_refused(&mut self, model: &str, now: i64) {
        if !self.models_without_tools.iter().any(|m| m == model) {
            self.models_without_tools.push(model.to_owned());
        }
        self.tools_refused_at.insert(model.to_owned(), now);
    }

    /// Forgets every refusal of `tools`: the next turn of each model tries them.
    pub fn reset_tools(&mut self) {
        self.models_without_tools.clear();
        self.tools_refused_at.clear();
    }

    /// Loads `dir/state.json`; a missing or damaged file gives the defaults.
    pub fn load(dir: &Path) -> GlobalState {
        // bb7's own settings: a damaged file is set aside (invariant 13).
        use crate::project::state_file;
        state_file::own_path(dir, "state.json")
            .ok()
            .and_then(|p| state_file::load_or_set_aside(&p, state_file::SMALL_CAP))
            .unwrap_or_default()
    }

    /// Writes `dir/state.json` atomically.
    pub fn save(&self, dir: &Path) -> Result<()> {
        write_json_atomic(&dir.join("state.json"), self)
    }
}

/// The model for a new chat: config `default_model`, else the `remote` provider's
/// `model`, else the last used model, else [`FALLBACK_MODEL`].
pub fn model_for_new_chat(cfg: &Config, state: &GlobalState) -> String {
    cfg.default_model
        .clone()
        .filter(|m| !m.is_empty())
        .or_else(|| {
            cfg.providers
                .get("remote")
                .and_then(|p| p.model.clone())
                .filter(|m| !m.is_empty())
        })
        .or_else(|| state.last_model.clone())
        .unwrap_or_else(|| FALLBACK_MODEL.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_config_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            "{\n  \"api_key\": \"k\",\n}\n",
        )
        .unwrap();
        let err = Config::load(dir.path()).unwrap_err().message;
        let want = format!("{}:3:1: ", dir.path().join("config.json").display());
        assert!(err.starts_with(&want), "{err}");
        assert!(err.contains("trailing comma"), "{err}");
        assert!(!err.contains(" at line "), "{err}");
    }

    #[test]
    fn a_wrong_type_is_called_so_and_names_the_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"stream_timeout_secs": "soon"}"#,
        )
        .unwrap();
        let err = Config::load(dir.path()).unwrap_err().message;
        assert!(
            err.contains("stream_timeout_secs has the wrong type"),
            "{err}"
        );
        assert!(!err.contains("not valid JSON"), "{err}");
    }
}
