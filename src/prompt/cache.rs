//! Prompt caching per model: which requests carry `cache_control` breakpoints (the
//! config key `prompt_cache`), and what the cache is expected to save.
//!
//! OpenAI, DeepSeek, xAI and most other providers cache a repeated prefix by
//! themselves; Anthropic models cache only up to explicit breakpoints, and Gemini models
//! on OpenRouter accept them too. A prefix is cached only from a minimum length
//! (1,024 tokens; 2,048 on Haiku models).

use super::assemble::Breakpoints;
use crate::error::{Error, Result};

/// The config key `prompt_cache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptCache {
    /// Breakpoints for models that need them, cached for 5 minutes (the default).
    #[default]
    Auto,
    /// As `Auto`, cached for an hour (writing costs 2× the input price, not 1.25×).
    OneHour,
    /// No breakpoints.
    Off,
}

impl PromptCache {
    /// Reads the config value: absent or `auto` / `5m`, `1h`, `off`. Errors: any other
    /// value, naming the accepted ones.
    pub fn parse(value: Option<&str>) -> Result<PromptCache> {
        match value.unwrap_or("auto") {
            "auto" | "5m" => Ok(PromptCache::Auto),
            "1h" => Ok(PromptCache::OneHour),
            "off" => Ok(PromptCache::Off),
            other => Err(Error::invalid(format!(
                "Config prompt_cache must be \"auto\", \"5m\", \"1h\" or \"off\", not {other:?}"
            ))),
        }
    }

    /// The breakpoints a request to `model` carries, if any.
    pub fn breakpoints(self, model: &str) -> Option<Breakpoints> {
        if self == PromptCache::Off || !needs_breakpoints(model) {
            return None;
        }
        Some(Breakpoints {
            ttl: (self == PromptCache::OneHour).then_some("1h"),
            min_tokens: min_cached_tokens(model),
        })
    }
}

/// Whether `model` (an OpenRouter id) caches only at explicit breakpoints.
pub fn needs_breakpoints(model: &str) -> bool {
    let id = model.to_ascii_lowercase();
    id.starts_with("anthropic/") || id.starts_with("google/gemini")
}

/// The shortest prefix `model` caches, in tokens.
pub fn min_cached_tokens(model: &str) -> usize {
    if model.to_ascii_lowercase().contains("haiku") {
        2048
    } else {
        1024
    }
}

/// Prices of one model in USD per token, from the models endpoint (`pricing`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pricing {
    /// Uncached input.
    pub prompt: f64,
    /// Output.
    pub completion: f64,
    /// Input read from the cache (the input price when the model lists none).
    pub cache_read: f64,
    /// Input written to the cache (the input price when the model lists none).
    pub cache_write: f64,
}

impl Pricing {
    /// Reads the `pricing` of a models row: decimal strings (numbers are taken too).
    /// `None` without a `prompt` price.
    pub fn from_prices(pricing: &serde_json::Map<String, serde_json::Value>) -> Option<Pricing> {
        let price = |key: &str| {
            let v = pricing.get(key)?;
            v.as_str()
                .and_then(|s| s.parse::<f64>().ok())
                .or_else(|| v.as_f64())
                .filter(|p| p.is_finite() && *p >= 0.0)
        };
        let prompt = price("prompt")?;
        Some(Pricing {
            prompt,
            completion: price("completion").unwrap_or(0.0),
            cache_read: price("input_cache_read").unwrap_or(prompt),
            cache_write: price("input_cache_write").unwrap_or(prompt),
        })
    }

    /// The input cost of a request of `prompt_tokens`, of which `cached` are read from
    /// the cache and, for models with breakpoints, the rest written to it.
    pub fn input_cost(&self, prompt_tokens: usize, cached: usize, writes: bool) -> f64 {
        let cached = cached.min(prompt_tokens);
        let fresh = (prompt_tokens - cached) as f64;
        let fresh_price = if writes {
            self.cache_write
        } else {
            self.prompt
        };
        cached as f64 * self.cache_read + fresh * fresh_price
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakpoints_only_for_models_that_need_them() {
        let auto = PromptCache::parse(None).unwrap();
        assert!(auto.breakpoints("openai/gpt-5").is_none());
        let bp = auto.breakpoints("anthropic/claude-sonnet-4.5").unwrap();
        assert_eq!((bp.ttl, bp.min_tokens), (None, 1024));
        let hour = PromptCache::parse(Some("1h")).unwrap();
        let bp = hour.breakpoints("anthropic/claude-haiku-4.5").unwrap();
        assert_eq!((bp.ttl, bp.min_tokens), (Some("1h"), 2048));
        assert!(hour.breakpoints("google/gemini-2.5-pro").is_some());
        let off = PromptCache::parse(Some("off")).unwrap();
        assert!(off.breakpoints("anthropic/claude-sonnet-4.5").is_none());
        let e = PromptCache::parse(Some("always")).unwrap_err();
        assert!(e.message.contains("\"auto\""), "{}", e.message);
    }

    #[test]
    fn cost_with_and_without_the_cache() {
        let row = serde_json::json!({"prompt": "0.000003", "completion": "0.000015",
            "input_cache_read": "0.0000003", "input_cache_write": "0.00000375"});
        let p = Pricing::from_prices(row.as_object().unwrap()).unwrap();
        let cold = p.input_cost(10_000, 0, false);
        let warm = p.input_cost(10_000, 9_000, true);
        assert!((cold - 0.03).abs() < 1e-9, "{cold}");
        assert!((warm - (9_000.0 * 0.0000003 + 1_000.0 * 0.00000375)).abs() < 1e-9);
        assert!(Pricing::from_prices(&serde_json::Map::new()).is_none());
    }
}
