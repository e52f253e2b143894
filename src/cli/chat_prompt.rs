//! The `bb7 chat` prompt line: how full the model's window is and what was spent, before
//! each question (`~48k/200k (24%) · chat $0.0030 · today $0.0105 bb7> `), from the
//! server's `token_estimate` (docs/PROTOCOL.md, "Extension: context gauge" and
//! "Extension: budgets"). The gauge is painted in the `/tokens` colours: the warning
//! colour from 80%, the error colour when a send would be refused.

use super::render::style;
use super::session::Session;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::TokenEstimate;
use crate::tokens::gauge::Level;

/// What a prompt line is made of.
pub(super) struct PromptLine {
    /// The whole prompt, ending in `bb7> `.
    pub text: String,
    /// `text` with the gauge painted when stdout takes colours, which the line editor
    /// shows (it measures the width on `text`).
    pub painted: String,
}

/// The prompt without a gauge (no active chat, or the estimate failed).
pub(super) const PLAIN: &str = "bb7> ";

/// The prompt for the next question: the gauge and the spend of the active chat, or
/// [`PLAIN`] when the server cannot say.
pub(super) async fn prompt_line(s: &mut Session) -> PromptLine {
    let plain = PromptLine {
        text: PLAIN.to_owned(),
        painted: PLAIN.to_owned(),
    };
    if s.active().await.is_err() {
        return plain;
    }
    let estimate =
        s.c.call::<TokenEstimate>(Action::EstimateTokens(params::EstimateTokens {
            input_text: None,
        }))
        .await;
    match estimate {
        Ok(e) => line(&e),
        Err(_) => plain,
    }
}

/// The prompt line for estimate `e`.
fn line(e: &TokenEstimate) -> PromptLine {
    let gauge = super::terminal::err(&e.context_gauge);
    let mut spend = format!(" · chat ${:.4}", e.chat_cost);
    if let Some(today) = e.spent_today {
        spend.push_str(&format!(" · today ${today:.4}"));
    }
    spend.push(' ');
    spend.push_str(PLAIN);
    let colour = match e.context_level {
        Level::Ok | Level::Unknown => style::DIM,
        Level::Warning => style::HUNK,
        Level::Full => style::ERROR,
    };
    PromptLine {
        text: format!("{gauge}{spend}"),
        painted: format!("{}{spend}", super::render::paint(colour, &gauge)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(
        gauge: &str,
        level: Level,
        chat: f64,
        today: Option<f64>,
    ) -> TokenEstimate<'static> {
        let mut e: TokenEstimate = serde_json::from_value(serde_json::json!({
            "total": 1, "context_files": 0, "history": 0, "instructions": 0,
            "system_prompt": 0, "input_text": 0, "files": [], "potential_savings": 0,
            "context_gauge": gauge, "context_level": "ok"
        }))
        .unwrap();
        e.context_level = level;
        e.chat_cost = chat;
        e.spent_today = today;
        e
    }

    #[test]
    fn the_prompt_shows_the_gauge_and_both_spends() {
        let l = line(&estimate("~48k/200k (24%)", Level::Ok, 0.003, Some(0.0105)));
        assert_eq!(
            l.text,
            "~48k/200k (24%) · chat $0.0030 · today $0.0105 bb7> "
        );
        let l = line(&estimate("~1k (window unknown)", Level::Unknown, 0.0, None));
        assert_eq!(l.text, "~1k (window unknown) · chat $0.0000 bb7> ");
    }
}
