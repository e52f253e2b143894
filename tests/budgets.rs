//! Budgets beyond one send, through the binary: `max_cost_per_chat` (the chat's
//! answers) and `max_cost_per_day` (today's lines of `~/.bb7/usage.csv`, every project,
//! local time). The turn that brings a budget to 80% warns in its `done`, once; once a
//! budget is spent a send is refused before anything is sent; `bb7 log --today` and
//! `bb7 log --chat` show the spend. Every fake answer costs $0.0015.

mod cli_support;
mod common;

use common::fake_model::{FakeModel, response};
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

fn turn(b: &mut Bb7, fake: &FakeModel, q: &str) -> Value {
    fake.push_sse(response("", "Fine.", vec![]));
    let done = b.turn(q);
    assert_eq!(done["type"], "done", "{done}");
    done
}

fn warnings(done: &Value) -> Vec<String> {
    done["budget_warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|w| w["budget"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn usage_line(env: &Env, day: chrono::NaiveDate, cost: f64) {
    use std::io::Write;
    let dir = env.home.join(".bb7");
    std::fs::create_dir_all(&dir).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("usage.csv"))
        .unwrap();
    writeln!(
        f,
        "{}T09:00:00,/elsewhere,m,10,10,0,{cost:.6}",
        day.format("%Y-%m-%d")
    )
    .unwrap();
}

#[test]
fn a_chat_budget_warns_once_at_80_percent_and_refuses_once_spent() {
    let (env, fake) = fake_env(json!({"max_cost_per_chat": 0.004}));
    let (mut b, id) = env.with_chat();
    assert!(warnings(&turn(&mut b, &fake, "one")).is_empty());
    assert!(
        warnings(&turn(&mut b, &fake, "two")).is_empty(),
        "75% is under 80%"
    );
    let third = turn(&mut b, &fake, "three");
    assert_eq!(warnings(&third), ["max_cost_per_chat"], "{third}");
    let msg = third["budget_warnings"][0]["message"].as_str().unwrap();
    assert!(msg.contains("$0.0045") && msg.contains("$0.0040"), "{msg}");
    let sent = fake.chat_bodies().len();
    let e = b.err(json!({"action": "send", "content": "four"}));
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("max_cost_per_chat")
            && msg.contains("$0.0045")
            && msg.contains("nothing was sent"),
        "{msg}"
    );
    assert_eq!(fake.chat_bodies().len(), sent, "nothing was sent");
    // Another chat has its own budget.
    b.ok(json!({"action": "chat_new", "name": "Other"}));
    assert!(warnings(&turn(&mut b, &fake, "again")).is_empty());
    drop(b);
    cli_support::ok(&env, &["use", &id]);
    let o = cli_support::ok(&env, &["log", "--chat"]);
    let out = cli_support::lossy(&o.stdout);
    assert_eq!(out.lines().count(), 3, "one line per answer: {out}");
    let err = cli_support::lossy(&o.stderr);
    assert!(
        err.contains("$0.0045 of max_cost_per_chat ($0.0040, 112%)"),
        "{err}"
    );
}

#[test]
fn a_day_budget_counts_every_project_of_the_local_day_only() {
    let (env, fake) = fake_env(json!({"max_cost_per_day": 0.01}));
    let today = chrono::Local::now().date_naive();
    // Yesterday's spend does not count; today's in another project does.
    usage_line(&env, today.pred_opt().unwrap(), 5.0);
    usage_line(&env, today, 0.005);
    let (mut b, _id) = env.with_chat();
    assert!(warnings(&turn(&mut b, &fake, "one")).is_empty(), "65%");
    let second = turn(&mut b, &fake, "two");
    assert_eq!(warnings(&second), ["max_cost_per_day"], "80%: {second}");
    b.ok(json!({"action": "chat_new", "name": "Other"}));
    assert!(
        warnings(&turn(&mut b, &fake, "three")).is_empty(),
        "95%: warned once"
    );
    assert!(
        warnings(&turn(&mut b, &fake, "four")).is_empty(),
        "warned once"
    );
    let sent = fake.chat_bodies().len();
    let e = b.err(json!({"action": "send", "content": "five"}));
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("max_cost_per_day")
            && msg.contains("$0.0110")
            && msg.contains("nothing was sent"),
        "{msg}"
    );
    assert_eq!(fake.chat_bodies().len(), sent);
    drop(b);
    let o = cli_support::ok(&env, &["log", "--today"]);
    let out = cli_support::lossy(&o.stdout);
    assert_eq!(
        out.lines().count(),
        5,
        "today's turns, not yesterday's: {out}"
    );
    assert!(out.contains("/elsewhere"), "{out}");
    let err = cli_support::lossy(&o.stderr);
    assert!(
        err.contains("today $0.0110 of max_cost_per_day ($0.0100, 110%)"),
        "{err}"
    );
}
