//! Whether a live `bb7 eval` run (with or without `--record`) fits its budget, checked
//! before any task runs: each task's first request is estimated as a send is
//! (docs/PROTOCOL.md, "Extension: budgets": its prompt at the model's listed prompt
//! price plus 1000 expected answer tokens at the completion price), once per mode that
//! may bill the remote model (`remote`, and `hybrid_auto`, which may fall back to it).
//! The prompt is the task's question and context files plus [`SYSTEM_TOKENS`] for the
//! system text and tool definitions. The budget is `--budget` and what is left of the
//! config's `max_cost_per_day` today, whichever is smaller.

use std::path::Path;

use super::task::Task;
use crate::front::client::{Failure, Res};
use crate::prompt::cache::Pricing;

/// Tokens counted for the system text and tool definitions of each request.
const SYSTEM_TOKENS: usize = 2_000;

/// Answer tokens expected per request (as the server's budget check counts them).
const ANSWER_TOKENS: usize = 1_000;

/// The limits a run must fit in, in USD.
pub(super) struct Limits {
    /// `--budget`.
    pub flag: Option<f64>,
    /// The config's `max_cost_per_day`, with today's spend (`~/.bb7/usage.csv`).
    pub day: Option<(f64, f64)>,
}

/// Refuses, before anything is sent, a run of `tasks` in `modes` against `model`
/// whose expected cost passes `limits`; says on stderr when the model's price is
/// unknown (nothing is counted then, as the server does). `state` is `~/.bb7`.
pub(super) fn check(
    tasks: &[Task],
    modes: &[String],
    model: &str,
    state: &Path,
    limits: &Limits,
) -> Res<()> {
    if limits.flag.is_none() && limits.day.is_none() {
        return Ok(());
    }
    let billed = modes.iter().filter(|m| *m != "local").count();
    if billed == 0 {
        return Ok(());
    }
    let Some(pricing) = price(state, model) else {
        eprintln!(
            "bb7 eval: no price for {model} in the models list (`bb7 models` fetches it): the run's cost is not checked against the budget"
        );
        return Ok(());
    };
    let costs: Vec<(&str, f64)> = tasks
        .iter()
        .map(|t| (t.id.as_str(), task_cost(t, &pricing)))
        .collect();
    let total: f64 = costs.iter().map(|c| c.1).sum::<f64>() * billed as f64;
    let (largest, most) = costs
        .iter()
        .copied()
        .fold(("", 0.0), |a, c| if c.1 > a.1 { c } else { a });
    let over = |what: String, room: f64| {
        Failure::new(format!(
            "refusing to start: the run is expected to cost about ${total:.4} ({} tasks in {billed} mode(s) that bill {model}, about ${most:.4} for the largest, {largest}), more than {what} (${room:.4}); nothing was sent. Run fewer tasks (--task) or modes (--mode), or raise the budget.",
            costs.len()
        ))
    };
    if let Some(flag) = limits.flag
        && total > flag
    {
        return Err(over("--budget".to_owned(), flag));
    }
    if let Some((limit, spent)) = limits.day {
        let room = (limit - spent).max(0.0);
        if total > room {
            return Err(over(
                format!(
                    "what is left of max_cost_per_day today (${limit:.4} less ${spent:.4} spent)"
                ),
                room,
            ));
        }
    }
    Ok(())
}

/// The listed prices of `model` in `{state}/models.json`.
fn price(state: &Path, model: &str) -> Option<Pricing> {
    let list = crate::llm::models::ModelsCache::load(&state.join("models.json"))?;
    let row = list.models.iter().find(|m| m.id == model)?;
    Pricing::from_prices(&row.pricing)
}

/// The expected cost of a task's first request in USD.
fn task_cost(t: &Task, p: &Pricing) -> f64 {
    let context: usize = t
        .files
        .iter()
        .filter(|(path, _)| t.context.as_ref().is_none_or(|c| c.contains(path)))
        .map(|(_, text)| crate::tokens::count(text))
        .sum();
    let prompt = SYSTEM_TOKENS + crate::tokens::count(&t.prompt) + context;
    prompt as f64 * p.prompt + ANSWER_TOKENS as f64 * p.completion
}
