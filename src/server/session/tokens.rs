//! Token estimates for the context, history and draft (`estimate_tokens`,
//! `estimate_text_tokens`), the expected cost of a send, and compaction of the prompt
//! (`chat_compact`).

use super::Session;
use crate::context::ChatFiles;
use crate::error::{Error, Result};
use crate::output;
use crate::prompt::assemble::{self, Prompt};
use crate::prompt::cache::{Pricing, PromptCache};
use crate::prompt::ledger;
use crate::protocol::params;
use crate::protocol::replies::*;
use crate::tokens;
use crate::tools::ToolsMode;

impl Session {
    /// `estimate_tokens`: the parts of the next request.
    pub(super) fn estimate_tokens(
        &self,
        args: params::EstimateTokens,
    ) -> Result<TokenEstimate<'_>> {
        let input = args.input_text.as_deref().unwrap_or("");
        let a = self.active()?;
        let system_prompt = tokens::count_memo(&self.system_prompt_base());
        let instructions: usize = self
            .instruction_files(a.store.global)
            .unwrap_or_default()
            .iter()
            .map(|i| tokens::count_memo(&i.text))
            .sum();
        let history = tokens::count_memo(&assemble::history_text(&a.chat.messages));
        let root = self.root()?.to_path_buf();
        let files = ChatFiles::new(&a.store, &a.chat.id);
        // The statuses hold every count, cached per file version.
        let statuses = output::statuses(&a.chat, files, &root, false)?;
        let context_total: usize = statuses.iter().map(|r| r.tokens).sum();
        let rows: Vec<FileEstimate> = statuses
            .into_iter()
            .map(|r| {
                let section = r.start_line.zip(r.end_line);
                FileEstimate {
                    path: r.path,
                    tokens: r.tokens,
                    has_output: r.has_output,
                    original_tokens: r.original_tokens,
                    output_tokens: r.output_tokens,
                    start_line: section.map(|(s, _)| s),
                    end_line: section.map(|(_, e)| e),
                }
            })
            .collect();
        let input_tokens = tokens::count(input);
        // The next request as `send` would lay it out: every file version it carries,
        // what the previous request already sent, what a new chat would not repeat.
        let tools_mode = ToolsMode::parse(a.chat.tools.as_deref()).unwrap_or(ToolsMode::Off);
        let instruction_files = self.instruction_files(a.store.global).unwrap_or_default();
        let format = self.edit_format_for(&a.chat.model, a.chat.edit_format);
        let next = self
            .next_prompt(
                &a.store,
                &a.chat,
                tools_mode,
                format,
                &instruction_files,
                input,
            )
            .ok();
        let (context_files, potential_savings) = match &next {
            Some((p, _)) => (
                p.ledger
                    .files()
                    .map(|f| match &f.diff {
                        Some(d) => tokens::count_memo(&d.text),
                        None => tokens::count_cached(&f.file_id, &f.text),
                    })
                    .sum(),
                p.ledger
                    .repeated()
                    .into_iter()
                    .map(|(carried, latest)| {
                        let carried: usize = carried.iter().map(|t| tokens::count_memo(t)).sum();
                        carried.saturating_sub(tokens::count_memo(latest))
                    })
                    .sum(),
            ),
            None => (context_total, 0),
        };
        let total = system_prompt + instructions + history + context_files + input_tokens;
        let model = a.chat.model.clone();
        let cost = next
            .as_ref()
            .and_then(|(p, _)| self.expected_cost(&model, p, total));
        Ok(TokenEstimate {
            total,
            context_files,
            history,
            instructions,
            system_prompt,
            input_text: input_tokens,
            files: rows.into(),
            potential_savings,
            cached_tokens: cached_share(next.as_ref().map(|(p, _)| p), total),
            expected_cost: cost,
        })
    }

    /// `chat_compact`: the active chat's next request starts a new context block with
    /// the current version of every file, so versions a later one replaced are no
    /// longer sent (that request is not served from the cache). The history stays.
    pub(super) fn chat_compact(&mut self, _args: params::NoParams) -> Result<Ack> {
        let a = self.active()?;
        let path = a.store.chat_path(&a.chat.id, ledger::FILE_NAME)?;
        let empty = serde_json::to_vec(&ledger::Ledger::default())
            .map_err(|e| Error::invalid(format!("Cannot reset the prompt ledger: {e}")))?;
        crate::project::flush_queue::write(
            &path,
            &empty,
            crate::project::flush_queue::Rank::Cache,
            a.store.base(),
            Some(&a.store.chat_dir(&a.chat.id)?),
        )?;
        Ok(Ack {})
    }

    /// The prices of `model` from the saved model list (`get_models`), if it lists it.
    pub(super) fn pricing(&self, model: &str) -> Option<Pricing> {
        let dirs = self.dirs.as_ref()?;
        let list = crate::llm::models::ModelsCache::load(&dirs.state.join("models.json"))?;
        let row = list.models.iter().find(|m| m.id == model)?;
        Pricing::from_prices(&row.pricing)
    }

    /// The expected input cost in USD of sending `prompt` to `model` with the cache
    /// warm from the chat's previous request; `None` when the price is unknown.
    fn expected_cost(&self, model: &str, prompt: &Prompt, prompt_tokens: usize) -> Option<f64> {
        let pricing = self.pricing(model)?;
        let cache = PromptCache::parse(self.config.prompt_cache.as_deref()).ok()?;
        let writes = cache.breakpoints(model).is_some();
        let cached = cached_share(Some(prompt), prompt_tokens);
        Some(pricing.input_cost(prompt_tokens, cached, writes))
    }

    /// Fails a send whose expected input cost exceeds the config `max_cost_per_send`,
    /// before anything is sent. A model whose price is unknown (not in the saved model
    /// list, as local servers) is not limited.
    pub(super) fn check_cost(&self, model: &str, prompt: &Prompt, writes: bool) -> Result<()> {
        let Some(limit) = self.config.max_cost_per_send else {
            return Ok(());
        };
        let Some(pricing) = self.pricing(model) else {
            return Ok(());
        };
        let prompt_tokens = tokens::count_memo(&prompt.system)
            + prompt
                .blocks
                .iter()
                .map(|b| tokens::count_memo(&b.text))
                .sum::<usize>();
        let cached = cached_share(Some(prompt), prompt_tokens);
        let cost = pricing.input_cost(prompt_tokens, cached, writes);
        if cost > limit {
            return Err(Error::invalid(format!(
                "This send would cost about ${cost:.4} ({prompt_tokens} prompt tokens, {cached} of them cached), more than max_cost_per_send (${limit:.4}); nothing was sent. Remove context files, start a new chat, or raise max_cost_per_send in the config."
            )));
        }
        Ok(())
    }

    /// `estimate_text_tokens`: one count per text.
    pub(super) fn estimate_text_tokens(
        &self,
        args: params::EstimateTextTokens,
    ) -> Result<TextTokenEstimate<'_>> {
        let texts = args.texts;
        if texts.is_empty() {
            return Err(Error::invalid("Field 'texts' must not be empty"));
        }
        let counts: Vec<usize> = texts.iter().map(|t| tokens::count(t)).collect();
        Ok(TextTokenEstimate {
            tokens: counts.into(),
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
