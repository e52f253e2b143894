//! Budgets beyond one send (docs/PROTOCOL.md, "Extension: budgets"): the config's
//! `max_cost_per_chat` (the chat's answers' costs added up) and `max_cost_per_day` (the
//! local calendar day's lines of `~/.bb7/usage.csv`, every project). A send is refused
//! before anything is billed once a budget is spent, or when its expected cost would
//! pass one (`expected.rs`); the turn that brings a budget to
//! 80% warns in its `done`, once, since spending only grows.

use super::Session;
use super::complete::chat_usage;
use super::expected::Expected;
use crate::chat::model::Chat;
use crate::error::{Error, Result};
use crate::project::usage_index;
use crate::protocol::events::BudgetWarning;

/// The share of a budget (in percent) from which a turn warns.
const WARN_PERCENT: f64 = 80.0;

/// Costs are sums of floats: a spend this close to a limit has reached it.
const EPSILON: f64 = 1e-9;

impl Session {
    /// USD spent today (local time) by every bb7 on this machine; 0 without a home.
    /// Read through the running index (`usage_index.rs`): only lines appended since
    /// the last call are read.
    pub(super) fn spent_today(&self) -> f64 {
        self.dirs.as_ref().map_or(0.0, |d| {
            usage_index::spent_on(&d.state, chrono::Local::now().date_naive())
        })
    }

    /// USD the answers of `chat` cost so far (`done`'s `chat_usage.cost`).
    pub(super) fn chat_spent(&self, chat: &Chat) -> f64 {
        chat_usage(chat).cost
    }

    /// Refuses a send when the chat's or the day's budget is spent, or when the spend
    /// so far plus this send's `expected` cost (`expected.rs`; `None` when the model's
    /// price is unknown) would pass it: an error naming the budget, the spend, the
    /// expected cost and the limit; nothing is sent.
    pub(super) fn check_budgets(&self, chat: &Chat, expected: Option<&Expected>) -> Result<()> {
        if let Some(limit) = self.config.max_cost_per_chat {
            let spent = chat_usage(chat).cost;
            if spent + EPSILON >= limit {
                return Err(Error::invalid(format!(
                    "This chat has spent its budget: ${spent:.4} of max_cost_per_chat (${limit:.4}); nothing was sent. Start a new chat, or raise max_cost_per_chat in the config."
                )));
            }
            if let Some(e) = expected.filter(|e| spent + e.cost > limit + EPSILON) {
                return Err(Error::invalid(format!(
                    "This send would pass the chat's budget: ${spent:.4} spent plus about ${:.4} expected for this send ({}) is more than max_cost_per_chat (${limit:.4}); nothing was sent. Remove context files, start a new chat, or raise max_cost_per_chat in the config.",
                    e.cost,
                    e.parts()
                )));
            }
        }
        if let Some(limit) = self.config.max_cost_per_day {
            let spent = self.spent_today();
            if spent + EPSILON >= limit {
                return Err(Error::invalid(format!(
                    "Today's budget is spent: ${spent:.4} of max_cost_per_day (${limit:.4}) today (local time, all projects); nothing was sent. Wait until tomorrow, or raise max_cost_per_day in the config."
                )));
            }
            if let Some(e) = expected.filter(|e| spent + e.cost > limit + EPSILON) {
                return Err(Error::invalid(format!(
                    "This send would pass today's budget: ${spent:.4} spent today (local time, all projects) plus about ${:.4} expected for this send ({}) is more than max_cost_per_day (${limit:.4}); nothing was sent. Remove context files, wait until tomorrow, or raise max_cost_per_day in the config.",
                    e.cost,
                    e.parts()
                )));
            }
        }
        Ok(())
    }

    /// The budgets a turn that cost `turn_cost` brought from under 80% of their limit
    /// to 80% or more; `chat_total` is the chat's total with this turn, and the day's
    /// log already holds it.
    pub(super) fn budget_warnings(&self, chat_total: f64, turn_cost: f64) -> Vec<BudgetWarning> {
        let mut out = Vec::new();
        if turn_cost <= 0.0 {
            return out;
        }
        let mut check = |budget: &str, what: &str, spent: f64, limit: Option<f64>| {
            let Some(limit) = limit.filter(|l| *l > 0.0) else {
                return;
            };
            let edge = limit * WARN_PERCENT / 100.0;
            if spent + EPSILON >= edge && spent - turn_cost + EPSILON < edge {
                let percent = (spent / limit * 100.0 + EPSILON).floor();
                out.push(BudgetWarning {
                    budget: budget.to_owned(),
                    spent,
                    limit,
                    message: format!(
                        "{what} has spent {percent}% of {budget}: ${spent:.4} of ${limit:.4}; at the limit a send is refused."
                    ),
                });
            }
        };
        check(
            "max_cost_per_chat",
            "This chat",
            chat_total,
            self.config.max_cost_per_chat,
        );
        check(
            "max_cost_per_day",
            "Today",
            self.spent_today(),
            self.config.max_cost_per_day,
        );
        out
    }
}
