//! `bb7 eval --record` refuses to start a run its budget cannot cover: an estimate per
//! task (its prompt and context files at the listed prompt price, plus 1000 answer
//! tokens at the completion price) against `--budget` and what is left of the
//! config's `max_cost_per_day` today; nothing reaches the model and no trace is
//! written. A run that fits goes ahead.

mod common;
mod eval_support;

use common::fake_model::*;
use eval_support::*;
use serde_json::{Value, json};

const ARGS: [&str; 6] = ["eval", "--mode", "remote", "--task", "js-const", "--json"];

/// A home whose remote provider is `remote`, listing `vendor/model` at $0.00001 per
/// prompt and per answer token (the models list saved by `bb7 models`).
fn setup(extra: Value) -> (common::Env, FakeModel) {
    let env = common::Env::new();
    let remote = FakeModel::start();
    let mut config = json!({
        "providers": {"remote": {"base_url": remote.url, "api_key": "k"}},
        "default_model": "vendor/model"
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    env.write_config(config);
    remote.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{"id": "vendor/model", "name": "vendor/model",
                               "pricing": {"prompt": "0.00001", "completion": "0.00001"}}]})
        .to_string(),
    });
    let out = bb7(&env.home, &["models"]);
    assert!(out.status.success(), "{out:?}");
    (env, remote)
}

fn refused(env: &common::Env, remote: &FakeModel, extra: &[&str]) -> String {
    let traces = env.home.join("traces");
    let args = [&ARGS[..], &["--record", traces.to_str().unwrap()], extra].concat();
    let out = bb7(&env.home, &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{stderr}");
    assert!(
        remote.chat_bodies().is_empty(),
        "nothing was sent: {stderr}"
    );
    assert!(!traces.exists(), "no trace was written");
    stderr
}

#[test]
fn a_run_over_its_budget_is_refused_before_anything_is_sent() {
    // The task is expected to cost at least 3000 tokens × $0.00001 = $0.0300.
    let (env, remote) = setup(json!({}));
    let err = refused(&env, &remote, &["--budget", "0.02"]);
    for part in [
        "refusing to start",
        "1 tasks in 1 mode(s) that bill vendor/model",
        "js-const",
        "more than --budget ($0.0200)",
        "nothing was sent",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
}

#[test]
fn what_is_left_of_the_day_budget_limits_a_run() {
    let (env, remote) = setup(json!({"max_cost_per_day": 0.05}));
    let dir = env.home.join(".bb7");
    let today = chrono::Local::now().date_naive().format("%Y-%m-%d");
    std::fs::write(
        dir.join("usage.csv"),
        format!("{today}T08:00:00,/elsewhere,m,1,1,0,0.040000\n"),
    )
    .unwrap();
    let err = refused(&env, &remote, &[]);
    assert!(
        err.contains("what is left of max_cost_per_day today ($0.0500 less $0.0400 spent)"),
        "{err}"
    );
    // With the day's room and a budget that covers it, the run goes ahead.
    let (env, remote) = setup(json!({"max_cost_per_day": 5.0}));
    let content = "var total = 0;\nfor (var i = 0; i < 3; i++) total += i;\n";
    remote.push_sse(response(
        "",
        "Done.",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "index.js", "file_id": common::file_id("index.js", content),
                              "old_string": "var total = 0;", "new_string": "let total = 0;"}]}),
        )],
    ));
    let traces = env.home.join("traces");
    let args = [
        &ARGS[..],
        &["--record", traces.to_str().unwrap(), "--budget", "1"],
    ]
    .concat();
    let out = bb7(&env.home, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(traces.join("remote/js-const.json").exists());
}
