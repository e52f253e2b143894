//! Today's spend through the binary while other processes write `~/.bb7/usage.csv`:
//! bb7 keeps a running sum and reads only what was appended, so the figure in
//! `estimate_tokens`' and `done`'s `spent_today`, and what `max_cost_per_day` refuses,
//! must follow lines other bb7s append (a half-written line counts once it is whole),
//! and a log that shrank is read again. Every fake answer costs $0.0015.

mod common;

use std::io::Write;

use common::fake_model::response;
use common::{Bb7, Env, fake_env};
use serde_json::json;

fn log(env: &Env) -> std::path::PathBuf {
    let dir = env.home.join(".bb7");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("usage.csv")
}

/// Appends `text` to the log as another process would.
fn append(env: &Env, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log(env))
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn line(day: chrono::NaiveDate, cost: f64) -> String {
    format!(
        "{}T09:00:00,/elsewhere,m,10,10,0,{cost:.6}\n",
        day.format("%Y-%m-%d")
    )
}

fn spent_today(b: &mut Bb7) -> f64 {
    let e = b.request(json!({"action": "estimate_tokens"}));
    assert_eq!(e["type"], "token_estimate", "{e}");
    e["spent_today"].as_f64().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_days_spend_follows_other_processes_appends_and_a_shrunk_log() {
    let (env, fake) = fake_env(json!({"max_cost_per_day": 0.01}));
    let today = chrono::Local::now().date_naive();
    let yesterday = today.pred_opt().unwrap();
    let (mut b, _id) = env.with_chat();
    assert_eq!(spent_today(&mut b), 0.0, "no log yet");

    append(&env, &line(yesterday, 5.0));
    append(&env, &line(today, 0.004));
    let s = spent_today(&mut b);
    assert!(close(s, 0.004), "yesterday does not count: {s}");

    fake.push_sse(response("", "Fine.", vec![]));
    let done = b.turn("one");
    assert_eq!(done["type"], "done", "{done}");
    let s = done["spent_today"].as_f64().unwrap();
    assert!(close(s, 0.0055), "this turn's own line is added: {done}");

    // Another bb7 is in the middle of writing its line: only the whole line counts.
    let half = line(today, 0.002);
    let (start, rest) = half.split_at(half.len() - 4);
    append(&env, start);
    let s = spent_today(&mut b);
    assert!(close(s, 0.0055), "a half-written line is not counted: {s}");
    append(&env, rest);
    let s = spent_today(&mut b);
    assert!(close(s, 0.0075), "counted once whole: {s}");

    // An append that brings the day to its budget refuses the next send.
    append(&env, &line(today, 0.003));
    let sent = fake.chat_bodies().len();
    let e = b.err(json!({"action": "send", "content": "two"}));
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("max_cost_per_day") && msg.contains("$0.0105"),
        "{msg}"
    );
    assert_eq!(fake.chat_bodies().len(), sent, "nothing was sent");

    // The log is replaced by a shorter one (rotated by hand): read again from the start.
    std::fs::write(log(&env), line(today, 0.001)).unwrap();
    let s = spent_today(&mut b);
    assert!(close(s, 0.001), "{s}");
    fake.push_sse(response("", "Fine.", vec![]));
    let done = b.turn("three");
    assert_eq!(done["type"], "done", "the budget has room again: {done}");
    assert!(
        close(done["spent_today"].as_f64().unwrap(), 0.0025),
        "{done}"
    );
}
