//! The expected cost of the next send (docs/PROTOCOL.md, "Extension: budgets"): its
//! prompt at the model's listed prompt prices (the part a warm cache serves at the
//! cache-read price) plus [`EXPECTED_OUTPUT_TOKENS`] at the completion price. The send
//! request sets no output cap, so a fixed, documented answer size stands in for it.
//! `max_cost_per_send`, `max_cost_per_chat` and `max_cost_per_day` all compare the
//! spend so far plus this figure with their limit, so a send is refused before it is
//! billed rather than after it passed a budget.

use super::Session;
use crate::prompt::assemble::Prompt;

/// Answer tokens a send is expected to produce, priced at the model's completion
/// price: a typical answer with an edit or two. Stated in README.md and doc/bb7.txt.
pub(super) const EXPECTED_OUTPUT_TOKENS: usize = 1_000;

/// What the next send is expected to cost, and what the figure is made of.
#[derive(Debug, Clone, Copy)]
pub(super) struct Expected {
    /// USD: input plus expected output.
    pub cost: f64,
    /// Prompt tokens of the laid-out request, as the estimate counts them.
    pub prompt_tokens: usize,
    /// Of those, tokens a warm cache is expected to serve.
    pub cached: usize,
}

impl Expected {
    /// How the figure was made, for an error message:
    /// `12034 prompt tokens, 0 of them cached, and 1000 expected answer tokens`.
    pub fn parts(&self) -> String {
        format!(
            "{} prompt tokens, {} of them cached, and {EXPECTED_OUTPUT_TOKENS} expected answer tokens",
            self.prompt_tokens, self.cached
        )
    }
}

impl Session {
    /// The expected cost of sending `prompt` to `model`; `None` when the model's price
    /// is unknown (not in the saved model list, as local servers), when nothing is
    /// counted against a budget.
    pub(super) fn expected_cost(
        &self,
        model: &str,
        prompt: &Prompt,
        writes: bool,
    ) -> Option<Expected> {
        let pricing = self.pricing(model)?;
        let prompt_tokens = super::gauge::prompt_tokens(prompt);
        let cached = cached_share(Some(prompt), prompt_tokens);
        let input = pricing.input_cost(prompt_tokens, cached, writes);
        let output = EXPECTED_OUTPUT_TOKENS as f64 * pricing.completion;
        Some(Expected {
            cost: input + output,
            prompt_tokens,
            cached,
        })
    }
}

/// Of `tokens` prompt tokens, how many a warm cache serves: the share of the prompt's
/// bytes the chat's previous request sent exactly so.
fn cached_share(prompt: Option<&Prompt>, tokens: usize) -> usize {
    let Some(p) = prompt else { return 0 };
    let total = p.total_bytes().max(1);
    (tokens as f64 * p.reused_bytes as f64 / total as f64).round() as usize
}
