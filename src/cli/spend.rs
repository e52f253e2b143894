//! `bb7 log --today` and `bb7 log --chat`: what was spent against the budgets
//! `max_cost_per_day` and `max_cost_per_chat` (docs/PROTOCOL.md, "Extension: budgets").
//! The day is read from `~/.bb7/usage.csv`, as the server sums it before a send.

use super::render::Table;
use super::session::{Session, project_store};
use crate::config::Config;
use crate::front::client::{Failure, Res};
use crate::project::{UserDirs, usage_log};

/// ` of max_cost_per_day ($1.0000, 42%)`, or '' without a limit.
fn against(spent: f64, key: &str, limit: Option<f64>) -> String {
    match limit.filter(|l| *l > 0.0) {
        Some(l) => format!(
            " of {key} (${l:.4}, {}%)",
            (spent / l * 100.0 + 1e-9).floor() as i64
        ),
        None => String::new(),
    }
}

fn config(dirs: &UserDirs) -> Config {
    Config::load(&dirs.config).unwrap_or_default()
}

/// `bb7 log --today`: today's turns of every project (local time), one
/// `TIME  COST  MODEL  PROJECT` per line, and the day's total on stderr.
pub(super) async fn today(s: &mut Session) -> Res<()> {
    let dirs = UserDirs::from_env().map_err(|e| Failure::new(e.message))?;
    let lines = usage_log::lines_on(&dirs.state, chrono::Local::now().date_naive());
    let mut table = Table::new(["TIME", "COST", "MODEL", "PROJECT"]);
    let mut total = 0.0;
    for (time, root, model, cost) in &lines {
        total += cost;
        let time = time.split_once('T').map_or(time.as_str(), |(_, t)| t);
        table.row([
            time.to_owned(),
            format!("${cost:.4}"),
            model.clone(),
            root.clone(),
        ]);
    }
    s.out_rendered(&table.render());
    let limit = config(&dirs).max_cost_per_day;
    eprintln!(
        "bb7: today ${total:.4}{} in {} turn(s), all projects",
        against(total, "max_cost_per_day", limit),
        lines.len()
    );
    Ok(())
}

/// `bb7 log --chat`: the active chat's answers, one `N  COST  MODEL` per line, and
/// its total against `max_cost_per_chat` on stderr.
pub(super) async fn chat(s: &mut Session) -> Res<()> {
    let id = s.active().await?;
    let chat = project_store(&s.root)
        .and_then(|st| st.load(&id).ok())
        .ok_or_else(|| Failure::new(format!("cannot read chat {id}")))?;
    let mut table = Table::new(["ANSWER", "COST", "MODEL"]);
    let mut total = 0.0;
    let answers = chat.messages.iter().filter(|m| m.role == "assistant");
    for (n, m) in answers.enumerate() {
        let Some(cost) = m.extra.get("usage").and_then(|u| u["cost"].as_f64()) else {
            continue;
        };
        total += cost;
        let model = m.extra.get("model").and_then(|v| v.as_str()).unwrap_or("");
        table.row([(n + 1).to_string(), format!("${cost:.4}"), model.to_owned()]);
    }
    s.out_rendered(&table.render());
    let dirs = UserDirs::from_env().map_err(|e| Failure::new(e.message))?;
    let cfg = config(&dirs);
    let today = usage_log::spent_on(&dirs.state, chrono::Local::now().date_naive());
    eprintln!(
        "bb7: chat {} ${total:.4}{}; today ${today:.4}{}",
        chat.name,
        against(total, "max_cost_per_chat", cfg.max_cost_per_chat),
        against(today, "max_cost_per_day", cfg.max_cost_per_day)
    );
    Ok(())
}
