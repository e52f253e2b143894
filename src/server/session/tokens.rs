//! Token estimates for the context, history and draft (`estimate_tokens`,
//! `estimate_text_tokens`).

use super::Session;
use crate::chat::ids;
use crate::context::{ChatFiles, find_file};
use crate::error::Result;
use crate::prompt::assemble::{self};
use crate::protocol::Request;
use crate::protocol::params;
use crate::tokens;
use serde_json::{Value, json};

impl Session {
    /// `estimate_tokens`: the parts of the next request (seed 001, "Token Estimation").
    pub(super) fn estimate_tokens(&self, req: &Request) -> Result<Value> {
        let args: params::EstimateTokens = req.params()?;
        let input = args.input_text.as_deref().unwrap_or("");
        let a = self.active()?;
        let system_prompt = tokens::count(&self.system_prompt_base());
        let instructions: usize = self
            .instruction_files()
            .unwrap_or_default()
            .iter()
            .map(|i| tokens::count(&i.text))
            .sum();
        let history = tokens::count(&assemble::history_text(&a.chat.messages));
        let files = ChatFiles::new(&a.store, &a.chat.id);
        let mut rows = Vec::new();
        let mut context_total = 0;
        for cf in &a.chat.context_files {
            let snap = files.read_snapshot(cf).unwrap_or_default();
            let original = tokens::count_cached(&cf.version, &snap);
            let output = if cf.is_section() || cf.external {
                None
            } else {
                files.read_output(&cf.path)?
            };
            let mut row =
                json!({"path": cf.path, "tokens": original, "has_output": output.is_some()});
            if let Some(out) = &output {
                let out_tokens = tokens::count_cached(&ids::file_version(&cf.path, out), out);
                row["tokens"] = json!(out_tokens);
                row["original_tokens"] = json!(original);
                row["output_tokens"] = json!(out_tokens);
                context_total += out_tokens;
            } else {
                context_total += original;
            }
            if let (Some(s), Some(e)) = (cf.start_line, cf.end_line) {
                row["start_line"] = json!(s);
                row["end_line"] = json!(e);
            }
            rows.push(row);
        }
        for rel in files.list_outputs()? {
            if find_file(&a.chat, &rel).is_some() {
                continue;
            }
            let out = files.read_output(&rel)?.unwrap_or_default();
            let t = tokens::count_cached(&ids::file_version(&rel, &out), &out);
            context_total += t;
            rows.push(json!({"path": rel, "tokens": t, "has_output": true, "output_tokens": t}));
        }
        let input_tokens = tokens::count(input);
        Ok(json!({
            "type": "token_estimate",
            "total": system_prompt + instructions + history + context_total + input_tokens,
            "context_files": context_total,
            "history": history,
            "instructions": instructions,
            "system_prompt": system_prompt,
            "input_text": input_tokens,
            "files": rows,
            // bb7 sends only the pending version of a changed file, so applying
            // output saves no prompt tokens.
            "potential_savings": 0,
        }))
    }

    /// `estimate_text_tokens`: one count per text.
    pub(super) fn estimate_text_tokens(&self, req: &Request) -> Result<Value> {
        let args: params::EstimateTextTokens = req.params()?;
        let texts = args.texts;
        let counts: Vec<usize> = texts.iter().map(|t| tokens::count(t)).collect();
        Ok(json!({"type": "text_token_estimate", "tokens": counts}))
    }
}
