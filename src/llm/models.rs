//! The model list (`get_models`): OpenRouter's `/models` rows passed through with
//! the fields the reference plugin's picker reads, and the on-disk cache of it.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One model as `get_models` sends it. Prices stay exactly as the API sent them
/// (OpenRouter sends decimal strings such as `"0.000003"`, USD per token), so no
/// precision is lost and fields bb7 does not know (`internal_reasoning`,
/// `input_cache_read`, …) reach the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Model id, e.g. `anthropic/claude-sonnet-4.6`.
    pub id: String,
    /// Display name (the id when the API sends none).
    pub name: String,
    /// Description text (empty when none).
    #[serde(default)]
    pub description: String,
    /// Unix seconds when the model was added (0 when unknown).
    #[serde(default)]
    pub created: i64,
    /// Date the model is retired, if announced (`null` otherwise).
    #[serde(default)]
    pub expiration_date: Option<String>,
    /// Context window in tokens (0 when unknown).
    #[serde(default)]
    pub context_length: u64,
    /// Longest completion in tokens, from `top_provider` (0 when unknown).
    #[serde(default)]
    pub max_completion_tokens: u64,
    /// `reasoning` or `include_reasoning` is a supported parameter.
    #[serde(default)]
    pub supports_reasoning: bool,
    /// `tools` is a supported parameter.
    #[serde(default)]
    pub supports_tools: bool,
    /// The row lists its parameters (`supported_parameters`), so `supports_tools`
    /// says something: a row without them (llama.cpp, Ollama, LM Studio) leaves tool
    /// support unknown, never "no tools". Sent only when `false`, so an OpenRouter
    /// row keeps its shape.
    #[serde(default = "known", skip_serializing_if = "is_known")]
    pub tools_known: bool,
    /// Prices as sent: `prompt`, `completion` and whatever else the API lists.
    #[serde(default)]
    pub pricing: Map<String, Value>,
    /// What the model reads (`architecture.input_modalities`: `text`, `image`, …);
    /// absent when the API does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_modalities: Option<Vec<String>>,
}

impl ModelInfo {
    /// Whether the list says the model reads images: `Some(false)` only when it names
    /// its inputs and `image` is not among them.
    pub fn takes_images(&self) -> Option<bool> {
        self.input_modalities
            .as_ref()
            .map(|m| m.iter().any(|i| i == "image"))
    }
}

fn known() -> bool {
    true
}

fn is_known(known: &bool) -> bool {
    *known
}

/// A `/models` row as the API sends it; every field may be missing or `null`.
#[derive(Debug, Deserialize)]
struct RawModel {
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    created: Option<f64>,
    #[serde(default)]
    expiration_date: Option<Value>,
    #[serde(default)]
    context_length: Option<f64>,
    #[serde(default)]
    top_provider: Option<TopProvider>,
    #[serde(default)]
    pricing: Option<Map<String, Value>>,
    #[serde(default)]
    supported_parameters: Option<Vec<Value>>,
    /// llama.cpp's server: `meta.n_ctx` is its context size (`-c`).
    #[serde(default)]
    meta: Option<Meta>,
    /// LM Studio: the context the loaded model runs with.
    #[serde(default)]
    loaded_context_length: Option<f64>,
    #[serde(default)]
    architecture: Option<Architecture>,
}

#[derive(Debug, Deserialize)]
struct Architecture {
    #[serde(default)]
    input_modalities: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize)]
struct Meta {
    #[serde(default)]
    n_ctx: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct TopProvider {
    #[serde(default)]
    max_completion_tokens: Option<f64>,
}

/// The rows of a `/models` answer (`{"data":[…]}`). Rows without an id, or that
/// are not objects, are skipped; a missing `data` gives an empty list.
pub fn parse_models(answer: &Value) -> Vec<ModelInfo> {
    let Some(rows) = answer.get("data").and_then(Value::as_array) else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|row| serde_json::from_value::<RawModel>(row.clone()).ok())
        .filter_map(|raw| {
            let id = raw.id.filter(|i| !i.is_empty())?;
            let params: Vec<&str> = raw
                .supported_parameters
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let count = |n: Option<f64>| n.filter(|n| *n > 0.0).map(|n| n as u64).unwrap_or(0);
            Some(ModelInfo {
                name: raw
                    .name
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| id.clone()),
                description: raw.description.unwrap_or_default(),
                created: raw.created.map(|c| c as i64).unwrap_or(0),
                expiration_date: match raw.expiration_date {
                    Some(Value::String(s)) => Some(s),
                    Some(Value::Number(n)) => Some(n.to_string()),
                    _ => None,
                },
                // What the server runs with wins over what the model was trained for.
                context_length: [
                    raw.loaded_context_length,
                    raw.meta.and_then(|m| m.n_ctx),
                    raw.context_length,
                ]
                .into_iter()
                .map(count)
                .find(|n| *n > 0)
                .unwrap_or(0),
                max_completion_tokens: count(
                    raw.top_provider.and_then(|t| t.max_completion_tokens),
                ),
                supports_reasoning: params
                    .iter()
                    .any(|p| *p == "reasoning" || *p == "include_reasoning"),
                supports_tools: params.contains(&"tools"),
                tools_known: raw.supported_parameters.is_some(),
                pricing: raw.pricing.unwrap_or_default(),
                input_modalities: raw.architecture.and_then(|a| a.input_modalities).map(|m| {
                    m.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                }),
                id,
            })
        })
        .collect()
}

/// The context window a server runs `model` with, asked of the server itself, for a
/// provider whose `context_window` is not configured: its model list (LM Studio
/// `loaded_context_length`, llama.cpp `meta.n_ctx`, OpenRouter `context_length`; the
/// row of `model`, or the only row), then llama.cpp's `/props`
/// (`default_generation_settings.n_ctx`), then Ollama's `/api/show`
/// ([`ollama_context`]). `None` when none says; each question has 10 seconds.
pub async fn probe_context_window(provider: &dyn super::Provider, model: &str) -> Option<u64> {
    if let Some(list) = ask(provider.get_json("models".into())).await {
        let rows = parse_models(&list);
        let row = match rows.iter().find(|m| m.id == model) {
            Some(r) => Some(r),
            None if rows.len() == 1 => rows.first(),
            None => None,
        };
        if let Some(n) = row.map(|r| r.context_length).filter(|n| *n > 0) {
            return Some(n);
        }
    }
    if let Some(props) = ask(provider.get_json("../props".into())).await
        && let Some(n) = props
            .pointer("/default_generation_settings/n_ctx")
            .or_else(|| props.get("n_ctx"))
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
    {
        return Some(n);
    }
    ollama_context(provider, model).await
}

/// The context Ollama runs `model` with, from `../api/show` of an OpenAI-compatible
/// base URL: `num_ctx` of its `parameters`, else the model's `*.context_length`.
/// `None` when the server does not say (or is not Ollama); 10 seconds at most.
pub async fn ollama_context(provider: &dyn super::Provider, model: &str) -> Option<u64> {
    let show = ask(provider.post_json("../api/show".into(), serde_json::json!({ "model": model })))
        .await?;
    let num_ctx = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
    num_ctx
        .or_else(|| {
            show.get("model_info")?
                .as_object()?
                .iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        })
        .filter(|n| *n > 0)
}

/// `f`'s JSON within 10 seconds; `None` on any failure.
async fn ask(
    f: futures_util::future::BoxFuture<'_, Result<Value, super::ApiError>>,
) -> Option<Value> {
    tokio::time::timeout(std::time::Duration::from_secs(10), f)
        .await
        .ok()
        .and_then(Result::ok)
}

/// Format of [`ModelsCache`]; a cache of another format is never fresh, so it is
/// fetched again (older bb7 stored prices as numbers and fewer fields, and read a
/// row without `supported_parameters` as one without tools).
pub const CACHE_FORMAT: u32 = 3;

/// `~/.bb7/models.json`: the last fetched list and when it was fetched.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelsCache {
    /// [`CACHE_FORMAT`] when written by this version; 0 when absent.
    #[serde(default)]
    pub format: u32,
    /// RFC 3339 time of the fetch.
    pub fetched_at: String,
    /// The list.
    pub models: Vec<ModelInfo>,
}

impl ModelsCache {
    /// A cache of `models` fetched now.
    pub fn new(models: Vec<ModelInfo>) -> ModelsCache {
        ModelsCache {
            format: CACHE_FORMAT,
            fetched_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            models,
        }
    }

    /// Reads the cache; a missing or unreadable file gives `None`, and a damaged one
    /// (a named pipe, a symlink, over its cap, not JSON) is set aside (invariant 13).
    pub fn load(path: &Path) -> Option<ModelsCache> {
        use crate::project::state_file;
        state_file::load_or_set_aside(path, state_file::SMALL_CAP)
    }

    /// Whether the list is of this format and younger than `max_age`.
    pub fn is_fresh(&self, max_age: chrono::Duration) -> bool {
        self.format == CACHE_FORMAT
            && chrono::DateTime::parse_from_rfc3339(&self.fetched_at)
                .is_ok_and(|t| chrono::Utc::now().signed_duration_since(t) < max_age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn local_servers_report_their_context_and_say_nothing_of_tools() {
        let rows = parse_models(&serde_json::json!({"data": [
            {"id": "lm", "loaded_context_length": 8192, "max_context_length": 131072},
            {"id": "llama", "meta": {"n_ctx": 2048, "n_ctx_train": 32768}},
            {"id": "or", "context_length": 200000, "supported_parameters": ["tools"]},
            {"id": "ollama"}
        ]}));
        let ctx: Vec<u64> = rows.iter().map(|m| m.context_length).collect();
        assert_eq!(ctx, [8192, 2048, 200000, 0]);
        let known: Vec<bool> = rows.iter().map(|m| m.tools_known).collect();
        assert_eq!(known, [false, false, true, false]);
    }

    #[test]
    fn openrouter_rows_pass_through() {
        let answer = json!({"data": [
            {"id": "a/b", "name": "A B", "description": "d", "created": 1700000000,
             "expiration_date": "2026-12-01", "context_length": 200000,
             "top_provider": {"max_completion_tokens": 64000, "is_moderated": false},
             "pricing": {"prompt": "0.000003", "completion": "0.000015", "internal_reasoning": "0.00001"},
             "supported_parameters": ["tools", "reasoning"]},
            {"id": "local", "context_length": null, "top_provider": {"max_completion_tokens": null}},
            {"name": "no id"},
            "junk"
        ]});
        let models = parse_models(&answer);
        assert_eq!(models.len(), 2);
        let v = serde_json::to_value(&models[0]).unwrap();
        assert_eq!(v["pricing"]["prompt"], "0.000003");
        assert_eq!(v["pricing"]["internal_reasoning"], "0.00001");
        assert_eq!(v["max_completion_tokens"], 64000);
        assert_eq!(v["created"], 1700000000);
        assert_eq!(v["expiration_date"], "2026-12-01");
        assert_eq!(v["supports_tools"], true);
        let local = serde_json::to_value(&models[1]).unwrap();
        assert_eq!(local["name"], "local");
        assert_eq!(local["expiration_date"], Value::Null);
        assert_eq!(local["max_completion_tokens"], 0);
    }
}
