//! From the config to the model endpoints a turn may use: the `local` and `remote`
//! entries of `providers`, with keys read from the config or the environment, and the
//! failures of a provider that routing can tell apart (a context window overflow, a
//! server without tool support). Every provider is reached through the one
//! [`Provider`] seam; what differs between providers stays in its adapter.

use std::sync::Arc;

use crate::config::{AgentMode, Config, EditFormat, ProviderApi, ProviderConfig};
use crate::error::{Error, ErrorCode, Result};

use super::anthropic::AnthropicMessages;
use super::openai::{OPENROUTER_BASE_URL, OpenAiCompatible};
use super::{ApiError, Provider};

/// The two roles a provider plays in routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderRole {
    /// A model on the user's machine or network (Ollama, llama.cpp, vLLM, LM Studio).
    Local,
    /// A hosted model (OpenRouter by default).
    Remote,
}

impl ProviderRole {
    /// `local` or `remote`: the key in `providers`, and `done.provider`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderRole::Local => "local",
            ProviderRole::Remote => "remote",
        }
    }
}

/// One resolved endpoint. The key is kept private so it cannot be logged by accident.
#[derive(Clone)]
pub struct Endpoint {
    /// Its role.
    pub role: ProviderRole,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// The wire protocol its adapter speaks.
    pub api: ProviderApi,
    /// The provider's own model; `None` runs the chat's model.
    pub model: Option<String>,
    /// How its model proposes edits, when configured.
    pub edit_format: Option<EditFormat>,
    /// Its context window in tokens, when configured.
    pub context_window: Option<u64>,
    headers: Vec<(String, String)>,
    api_key: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("role", &self.role)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Builds the client for this endpoint. Errors (code `api`): OpenRouter without a
    /// key, or an HTTP client that cannot be built.
    pub fn connect(&self) -> Result<Arc<dyn Provider>> {
        if self.api == ProviderApi::Anthropic {
            let client =
                AnthropicMessages::new(&self.base_url, self.api_key.clone(), self.headers.clone())
                    .map_err(Error::from)?;
            return Ok(Arc::new(client));
        }
        if self.base_url.starts_with(OPENROUTER_BASE_URL) && self.api_key.is_none() {
            let which = match self.role {
                ProviderRole::Remote => {
                    "set OPENROUTER_API_KEY or api_key in ~/.config/bb7/config.json"
                }
                ProviderRole::Local => "set providers.local.api_key or api_key_env",
            };
            return Err(Error::new(ErrorCode::Api, format!("No API key: {which}")));
        }
        let client = OpenAiCompatible::new(&self.base_url, self.api_key.clone())
            .map_err(Error::from)?
            .with_headers(self.headers.clone());
        Ok(Arc::new(client))
    }

    /// Whether a key is configured for it.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// The key to send as a bearer token (for a forwarding endpoint; never log it).
    pub fn api_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// The extra headers of the provider's config.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The model a turn sends: the provider's own, else the chat's.
    pub fn model_for(&self, chat_model: &str) -> String {
        self.model.clone().unwrap_or_else(|| chat_model.to_owned())
    }
}

/// The endpoints of the config: `remote` always (the top-level keys fill what
/// `providers.remote` leaves out), `local` when configured.
#[derive(Debug, Clone)]
pub struct Providers {
    /// `providers.local`, when it names a `base_url`.
    pub local: Option<Endpoint>,
    /// `providers.remote` over the top-level `base_url` / `api_key`.
    pub remote: Endpoint,
}

impl Providers {
    /// Reads the endpoints from `cfg`.
    pub fn from_config(cfg: &Config) -> Providers {
        let remote_cfg = cfg.providers.get("remote");
        let remote = Endpoint {
            role: ProviderRole::Remote,
            base_url: trimmed(
                remote_cfg
                    .and_then(|p| p.base_url.clone())
                    .or_else(|| cfg.base_url.clone())
                    .unwrap_or_else(|| OPENROUTER_BASE_URL.to_owned()),
            ),
            api: remote_cfg.and_then(|p| p.api).unwrap_or_default(),
            // The remote runs the chat's model (the model picker); its configured
            // model is the default of new chats instead (config::model_for_new_chat).
            model: None,
            edit_format: remote_cfg.and_then(|p| p.edit_format),
            context_window: remote_cfg.and_then(|p| p.context_window),
            headers: remote_cfg.map(headers_of).unwrap_or_default(),
            api_key: remote_cfg
                .and_then(key_of)
                .or_else(|| cfg.api_key.clone().filter(|k| !k.is_empty())),
        };
        let local = cfg
            .providers
            .get("local")
            .and_then(|p| Some((p, p.base_url.clone()?)))
            .map(|(p, base)| Endpoint {
                role: ProviderRole::Local,
                base_url: trimmed(base),
                api: p.api.unwrap_or_default(),
                model: p.model.clone().filter(|m| !m.is_empty()),
                edit_format: p.edit_format,
                context_window: p.context_window,
                headers: headers_of(p),
                api_key: key_of(p),
            });
        Providers { local, remote }
    }

    /// The endpoint of `role`. Errors (`invalid_params`): `local` is not configured.
    pub fn get(&self, role: ProviderRole) -> Result<&Endpoint> {
        match role {
            ProviderRole::Remote => Ok(&self.remote),
            ProviderRole::Local => self.local.as_ref().ok_or_else(|| {
                Error::invalid(
                    "agent_mode needs a local provider: set providers.local.base_url in ~/.config/bb7/config.json",
                )
            }),
        }
    }
}

/// The provider a turn in `mode` starts on.
pub fn first_role(mode: AgentMode) -> ProviderRole {
    match mode {
        AgentMode::Remote => ProviderRole::Remote,
        AgentMode::Local | AgentMode::HybridAuto => ProviderRole::Local,
    }
}

fn trimmed(url: String) -> String {
    url.trim_end_matches('/').to_owned()
}

fn headers_of(p: &ProviderConfig) -> Vec<(String, String)> {
    p.headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The provider's key: `api_key`, else the variable `api_key_env` names.
fn key_of(p: &ProviderConfig) -> Option<String> {
    p.api_key.clone().filter(|k| !k.is_empty()).or_else(|| {
        p.api_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.is_empty())
    })
}

impl ApiError {
    /// Whether the server refused the prompt as longer than the model's context window.
    /// Servers word it differently (OpenAI `context_length_exceeded`, vLLM "maximum
    /// context length", llama.cpp "exceeds the available context size", Ollama
    /// "context length"); all answer before streaming or as a stream error.
    pub fn is_context_overflow(&self) -> bool {
        let (code, message) = match self {
            ApiError::Http {
                status: 400 | 413 | 422,
                message,
                ..
            } => (None, message),
            ApiError::Stream { code, message } => (code.as_deref(), message),
            _ => return false,
        };
        if code == Some("context_length_exceeded")
            || matches!(self, ApiError::Http { status: 413, .. })
        {
            return true;
        }
        let m = message.to_ascii_lowercase();
        [
            "context length",
            "context_length",
            "context window",
            "context size",
            "maximum context",
            "too many tokens",
            "too long",
        ]
        .iter()
        .any(|w| m.contains(w))
            || (m.contains("exceed") && m.contains("token"))
    }

    /// Whether the server said its model cannot call tools (Ollama: "does not support
    /// tools"; vLLM without a tool parser: "tool choice requires").
    pub fn is_tool_support_missing(&self) -> bool {
        let message = match self {
            ApiError::Http { message, .. } | ApiError::Stream { message, .. } => message,
            _ => return false,
        };
        let m = message.to_ascii_lowercase();
        m.contains("support tools")
            || m.contains("tool choice requires")
            || m.contains("tools param requires")
            || m.contains("tools are not supported")
            || m.contains("does not support tool")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> Config {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn an_old_config_is_one_remote_endpoint() {
        let p = Providers::from_config(&config(
            r#"{"base_url":"http://h/v1/","api_key":"k","default_model":"m"}"#,
        ));
        assert!(p.local.is_none());
        assert_eq!(p.remote.base_url, "http://h/v1");
        assert_eq!(p.remote.api_key.as_deref(), Some("k"));
        assert_eq!(p.remote.model_for("chat/model"), "chat/model");
        assert!(p.get(ProviderRole::Local).is_err());
    }

    #[test]
    fn providers_override_the_top_level_keys_and_read_keys_from_the_environment() {
        // SAFETY of the test: a variable name no other test reads.
        unsafe { std::env::set_var("BB7_TEST_LOCAL_KEY_ZQ", "from-env") };
        let p = Providers::from_config(&config(
            r#"{"api_key":"top","providers":{
                "local":{"base_url":"http://l/v1","model":"qwen","api_key_env":"BB7_TEST_LOCAL_KEY_ZQ",
                         "headers":{"X-A":"1"},"context_window":8000,"edit_format":"blocks"},
                "remote":{"base_url":"http://r/v1","api_key":"rk"}}}"#,
        ));
        let local = p.get(ProviderRole::Local).unwrap();
        assert_eq!(local.model_for("chat/model"), "qwen");
        assert_eq!(local.api_key.as_deref(), Some("from-env"));
        assert_eq!(local.context_window, Some(8000));
        assert_eq!(local.edit_format, Some(EditFormat::Blocks));
        assert_eq!(local.headers, vec![("X-A".to_owned(), "1".to_owned())]);
        assert_eq!(p.remote.base_url, "http://r/v1");
        assert_eq!(p.remote.api_key.as_deref(), Some("rk"));
        assert!(!format!("{local:?}").contains("from-env"));
    }

    #[test]
    fn the_context_window_has_the_names_other_tools_give_it() {
        for key in ["context_window", "context_length", "num_ctx"] {
            let p = Providers::from_config(&config(&format!(
                r#"{{"providers":{{"local":{{"base_url":"http://l/v1","{key}":4096}}}}}}"#
            )));
            assert_eq!(p.local.unwrap().context_window, Some(4096), "{key}");
        }
    }

    #[test]
    fn openrouter_without_a_key_is_refused_before_any_request() {
        let p = Providers::from_config(&Config::default());
        let err = p.remote.connect().err().unwrap();
        assert!(err.message.contains("No API key"), "{}", err.message);
    }

    #[test]
    fn overflow_and_missing_tool_support_are_told_apart() {
        let http = |status, message: &str| ApiError::Http {
            status,
            message: message.into(),
            retry_after: None,
        };
        assert!(
            http(400, "This model's maximum context length is 8192 tokens").is_context_overflow()
        );
        assert!(http(400, "the request exceeds the available context size").is_context_overflow());
        assert!(
            ApiError::Stream {
                code: Some("context_length_exceeded".into()),
                message: "x".into()
            }
            .is_context_overflow()
        );
        assert!(!http(500, "context length").is_context_overflow());
        assert!(http(400, "Input is too long for requested model.").is_context_overflow());
        assert!(http(400, "requested 9000 tokens, which exceeds the limit").is_context_overflow());
        assert!(http(413, "payload").is_context_overflow());
        assert!(http(500, "tools param requires --jinja flag").is_tool_support_missing());
        assert!(!http(400, "bad request").is_context_overflow());
        assert!(http(400, "qwen does not support tools").is_tool_support_missing());
        assert!(!ApiError::Dropped("eof".into()).is_tool_support_missing());
    }
}
