//! The context gauge on the session's side: which window the next request of a chat
//! is measured against, and the refusal of a send that fills it (docs/PROTOCOL.md,
//! "Extension: context gauge").

use super::Session;
use crate::chat::model::Chat;
use crate::chat::store::ChatStore;
use crate::config::AgentMode;
use crate::context::ChatFiles;
use crate::error::{Error, Result};
use crate::llm::providers::{self, ProviderRole, Providers};
use crate::prompt::assemble::Prompt;
use crate::tokens::{self, gauge::Gauge};

/// How many of the largest context files a refusal names.
const NAMED_FILES: usize = 3;

impl Session {
    /// The context window of the model a turn of `chat` starts on, in tokens: the
    /// provider's `context_window` in the config, else for `local` what its server
    /// reported (`n_ctx`, `loaded_context_length`, …), else for `remote` the config's
    /// top-level `context_window`, else the saved models list's `context_length` of
    /// `model`. `None` when none of them knows.
    pub(super) fn context_window_of(&self, chat: &Chat, model: &str) -> Option<u64> {
        let role = providers::first_role(self.agent_mode_of(chat));
        let all = Providers::from_config(&self.config);
        let endpoint = all.get(role).ok()?;
        if let Some(w) = endpoint.context_window.filter(|w| *w > 0) {
            return Some(w);
        }
        match role {
            ProviderRole::Local => self.local_window.lock().ok().and_then(|w| *w),
            ProviderRole::Remote => {
                if let Some(w) = self.config.context_window.filter(|w| *w > 0) {
                    return Some(w);
                }
                let dirs = self.dirs.as_ref()?;
                let list = crate::llm::models::ModelsCache::load(&dirs.state.join("models.json"))?;
                let id = endpoint.model_for(model);
                let row = list.models.iter().find(|m| m.id == id)?;
                Some(row.context_length).filter(|n| *n > 0)
            }
        }
    }

    /// Refuses a send whose prompt fills the model's whole window, before anything is
    /// sent or billed, naming the largest context files to drop. A `hybrid_auto` turn
    /// is not refused: a prompt over the local window goes to the remote provider
    /// instead (docs/PROTOCOL.md, "Extension: providers and routing"). An unknown
    /// window refuses nothing.
    pub(super) fn check_window(
        &self,
        store: &ChatStore,
        chat: &Chat,
        model: &str,
        prompt: &Prompt,
    ) -> Result<()> {
        if self.agent_mode_of(chat) == AgentMode::HybridAuto {
            return Ok(());
        }
        let Some(window) = self.context_window_of(chat, model) else {
            return Ok(());
        };
        let gauge = Gauge::new(prompt_tokens(prompt) as u64, Some(window));
        if gauge.level() != tokens::gauge::Level::Full {
            return Ok(());
        }
        let largest = self.largest_context_files(store, chat);
        let drop = if largest.is_empty() {
            "Start a new chat (the history alone fills the window)".to_owned()
        } else {
            format!(
                "Drop context files, the largest first: {}",
                largest.join(", ")
            )
        };
        Err(Error::invalid(format!(
            "This send fills the model's context window: {} tokens of {window}; nothing was sent. {drop}.",
            gauge.text()
        )))
    }

    /// The chat's largest context files as `path (~12k)`, largest first.
    fn largest_context_files(&self, store: &ChatStore, chat: &Chat) -> Vec<String> {
        let Ok(root) = self.root() else {
            return Vec::new();
        };
        let files = ChatFiles::new(store, &chat.id);
        let Ok(mut rows) = crate::output::statuses(chat, files, root, false) else {
            return Vec::new();
        };
        rows.sort_by(|x, y| y.tokens.cmp(&x.tokens).then_with(|| x.path.cmp(&y.path)));
        rows.iter()
            .filter(|r| r.tokens > 0)
            .take(NAMED_FILES)
            .map(|r| format!("{} (~{})", r.path, tokens::gauge::short(r.tokens as u64)))
            .collect()
    }
}

/// Tokens of a laid-out request: its system text and every block.
pub(super) fn prompt_tokens(prompt: &Prompt) -> usize {
    tokens::count_memo(&prompt.system)
        + prompt
            .blocks
            .iter()
            .map(|b| tokens::count_memo(&b.text))
            .sum::<usize>()
}
