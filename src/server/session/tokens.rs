//! Token estimates for the context, history and draft (`estimate_tokens`,
//! `estimate_text_tokens`), the expected cost of a send, and compaction of the prompt
//! (`chat_compact`).

use super::estimate::Job;
use super::expected::Expected;
use super::{Call, Session};
use crate::error::{Error, Result};
use crate::prompt::cache::{Pricing, PromptCache};
use crate::prompt::ledger;
use crate::protocol::params;
use crate::protocol::replies::*;
use crate::tokens;
use crate::tools::ToolsMode;

impl Session {
    /// `estimate_tokens`: the parts of the next request, answered later from a blocking
    /// thread (`estimate.rs`); only what the estimate reads from the session is taken
    /// here, in arrival order. Errors (now): not initialized, no active chat.
    pub(super) fn estimate_tokens(
        &mut self,
        args: params::EstimateTokens,
        call: &Call<'_>,
    ) -> Result<Deferred> {
        self.estimates.admit()?;
        let a = self.active()?;
        let (store, chat) = (a.store.clone(), a.chat.clone());
        // The estimate counts what a send carries: never an entry it leaves out.
        let chat = self.without_ungranted(&store, &chat).unwrap_or(chat);
        let instructions = self.instruction_files(store.global).unwrap_or_default();
        let tools_mode = ToolsMode::parse(chat.tools.as_deref()).unwrap_or(ToolsMode::Off);
        let format = self.edit_format_for(&chat.model, chat.edit_format);
        let system = self.request_system(store.global, tools_mode, format, &instructions);
        let cache_writes = PromptCache::parse(self.config.prompt_cache.as_deref())
            .ok()
            .map(|c| c.breakpoints(&chat.model).is_some());
        let window = self.context_window_of(&chat, &chat.model);
        let job = Job {
            window,
            root: self.root()?.to_path_buf(),
            system_base: self.system_prompt_base(),
            instructions,
            system,
            input: args.input_text.unwrap_or_default(),
            models: self.dirs.as_ref().map(|d| d.state.join("models.json")),
            state: self.dirs.as_ref().map(|d| d.state.clone()),
            chat_cost: self.chat_spent(&chat),
            cache_writes,
            store,
            chat,
        };
        job.spawn(
            self.estimates.clone(),
            call.ctx.outbox.clone(),
            call.request_id.map(str::to_owned),
        );
        Ok(Deferred)
    }

    /// `chat_compact`: the active chat's next request starts a new context block with
    /// the current version of every file, so versions a later one replaced are no
    /// longer sent (that request is not served from the cache). The history stays.
    pub(super) fn chat_compact(&mut self, _args: params::NoParams) -> Result<Ack> {
        let a = self.active()?;
        let path = a.store.cache_path(&a.chat.id, ledger::FILE_NAME)?;
        ledger::save(&path, a.store.base(), ledger::Ledger::default());
        Ok(Ack {})
    }

    /// The prices of `model` from the saved model list (`get_models`), if it lists it.
    pub(super) fn pricing(&self, model: &str) -> Option<Pricing> {
        let dirs = self.dirs.as_ref()?;
        let list = crate::llm::models::ModelsCache::load(&dirs.state.join("models.json"))?;
        let row = list.models.iter().find(|m| m.id == model)?;
        Pricing::from_prices(&row.pricing)
    }

    /// Fails a send whose expected cost (`expected.rs`: input at the listed prices and
    /// the expected answer) exceeds the config `max_cost_per_send`, before anything is
    /// sent. A model whose price is unknown (`expected` is `None`) is not limited.
    pub(super) fn check_cost(&self, expected: Option<&Expected>) -> Result<()> {
        let (Some(limit), Some(e)) = (self.config.max_cost_per_send, expected) else {
            return Ok(());
        };
        if e.cost > limit {
            return Err(Error::invalid(format!(
                "This send would cost about ${:.4} ({}), more than max_cost_per_send (${limit:.4}); nothing was sent. Remove context files, start a new chat, or raise max_cost_per_send in the config.",
                e.cost,
                e.parts()
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
