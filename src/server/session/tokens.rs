//! Token estimates for the context, history and draft (`estimate_tokens`,
//! `estimate_text_tokens`).

use super::Session;
use crate::context::ChatFiles;
use crate::error::{Error, Result};
use crate::output;
use crate::prompt::assemble::{self};

use crate::protocol::params;
use crate::protocol::replies::*;
use crate::tokens;

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
        Ok(TokenEstimate {
            total: system_prompt + instructions + history + context_total + input_tokens,
            context_files: context_total,
            history,
            instructions,
            system_prompt,
            input_text: input_tokens,
            files: rows.into(),
            // bb7 sends only the pending version of a changed file, so applying
            // output saves no prompt tokens.
            potential_savings: 0,
        })
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
