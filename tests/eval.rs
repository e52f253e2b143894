//! `bb7 eval`: the shipped task set replayed from the shipped traces prints the metrics
//! the traces were written for (eval/make_traces.py predicts them), and a live run
//! through `--record` stores traces without credentials that replay to the same result.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::fake_model::*;
use serde_json::{Value, json};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn bb7(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args(args)
        .current_dir(ROOT)
        .env_clear()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("run bb7")
}

fn report(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "bb7 eval failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--json prints one JSON document")
}

fn mode<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["modes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mode"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

#[test]
fn the_shipped_traces_replay_to_the_expected_metrics() {
    let env = common::Env::new();
    let out = bb7(&env.home, &["eval", "--replay", "eval/traces", "--json"]);
    let r = report(&out);
    assert_eq!(r["tasks"].as_array().unwrap().len(), 99);

    let local = mode(&r, "local");
    assert_eq!(local["tasks"], 33);
    assert_eq!(local["missing_traces"], 0);
    assert_eq!(local["successes"], 24);
    assert_eq!(local["success_rate"], 0.7273);
    assert_eq!(local["accepted_hunk_ratio"], 0.7931);
    assert_eq!(local["conflict_rate"], 0.0909);
    assert_eq!(local["tool_calls_per_success"], 1.125);
    assert_eq!(local["latency_p50_ms"], 1033);
    assert_eq!(local["latency_p95_ms"], 2124);
    assert_eq!(local["cost_per_task"], 0.0);
    assert_eq!(local["clarification_rate"], 0.0909);
    assert_eq!(local["fallback_rate"], 0.0);

    let remote = mode(&r, "remote");
    assert_eq!(remote["successes"], 33);
    assert_eq!(remote["success_rate"], 1.0);
    assert_eq!(remote["accepted_hunk_ratio"], 0.8333);
    assert_eq!(remote["conflict_rate"], 0.0909);
    assert_eq!(remote["tool_calls_per_success"], 1.0909);
    assert_eq!(remote["latency_p50_ms"], 2948);
    assert_eq!(remote["latency_p95_ms"], 6956);
    assert_eq!(remote["cost_per_task"], 0.003603);
    assert_eq!(remote["clarification_rate"], 0.0909);

    let hybrid = mode(&r, "hybrid_auto");
    assert_eq!(hybrid["successes"], 31);
    assert_eq!(hybrid["success_rate"], 0.9394);
    assert_eq!(hybrid["accepted_hunk_ratio"], 0.8333);
    assert_eq!(hybrid["tool_calls_per_success"], 1.3548);
    assert_eq!(hybrid["latency_p50_ms"], 1144);
    assert_eq!(hybrid["latency_p95_ms"], 4459);
    assert_eq!(hybrid["cost_per_task"], 0.000509);
    assert_eq!(hybrid["fallback_rate"], 0.1515);
    assert_eq!(
        hybrid["fallback_reasons"],
        json!({"context_overflow": 1, "schema_fail": 3, "timeout": 1})
    );

    // Per task: the retry stayed local, the conflict was met, the wrong edit failed.
    let task = |id: &str, m: &str| {
        r["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == id && t["mode"] == m)
            .cloned()
            .unwrap()
    };
    let retry = task("py-retry-rename", "hybrid_auto");
    assert_eq!(retry["provider"], "local");
    assert_eq!(retry["success"], true);
    assert_eq!(task("py-retry-rename", "local")["outcome"], "diff_error");
    assert_eq!(task("go-conflict-port", "remote")["conflict"], true);
    assert_eq!(task("go-conflict-port", "remote")["success"], true);
    let wrong = task("rb-wrong-method", "local");
    assert_eq!(wrong["success"], false);
    assert_eq!(wrong["failures"], json!(["list.rb is not as expected"]));
}

#[test]
fn the_table_puts_the_modes_side_by_side() {
    let env = common::Env::new();
    let out = bb7(
        &env.home,
        &[
            "eval",
            "--replay",
            "eval/traces",
            "--task",
            "js-const",
            "--task",
            "kt-no-tools",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("local") && header.contains("remote") && header.contains("hybrid_auto"),
        "{table}"
    );
    let success = table
        .lines()
        .find(|l| l.starts_with("success rate"))
        .unwrap();
    assert_eq!(
        success.split_whitespace().skip(2).collect::<Vec<_>>(),
        ["50.0%", "100.0%", "100.0%"],
        "{table}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("FAIL local       kt-no-tools"), "{stderr}");
}

#[test]
fn a_recorded_live_run_keeps_no_key_and_replays_the_same() {
    let env = common::Env::new();
    let remote = FakeModel::start();
    env.write_config(json!({
        "providers": {"remote": {"base_url": remote.url, "api_key": "sk-secret-remote"}},
        "default_model": "vendor/model"
    }));
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
    let traces_arg = traces.to_str().unwrap();
    let args = ["eval", "--mode", "remote", "--task", "js-const", "--json"];
    let live = report(&bb7(
        &env.home,
        &[&args[..], &["--record", traces_arg]].concat(),
    ));
    assert_eq!(mode(&live, "remote")["successes"], 1, "{live}");
    // The key went to the real endpoint, never into the trace.
    let sent = remote.requests();
    assert_eq!(
        sent[0].authorization.as_deref(),
        Some("Bearer sk-secret-remote")
    );
    let text = std::fs::read_to_string(traces.join("remote/js-const.json")).unwrap();
    assert!(!text.contains("sk-secret"), "{text}");
    let trace: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(trace["source"], "recorded");
    assert!(trace["date"].is_string());
    assert_eq!(
        trace["server"],
        format!("remote: {}", remote.url),
        "{trace}"
    );
    let exchange = &trace["exchanges"][0];
    assert_eq!(exchange["provider"], "remote");
    assert_eq!(exchange["request"]["model"], "vendor/model");
    assert!(
        exchange["response"]
            .as_str()
            .unwrap()
            .contains("data: [DONE]")
    );

    let replayed = report(&bb7(
        &env.home,
        &[&args[..], &["--replay", traces_arg]].concat(),
    ));
    let m = mode(&replayed, "remote");
    assert_eq!(m["successes"], 1, "{replayed}");
    assert_eq!(m["tool_calls_per_success"], 1.0);
    assert_eq!(remote.requests().len(), 1, "a replay reached the model");
}

#[test]
fn modes_that_need_a_local_provider_say_so() {
    let env = common::Env::new();
    env.write_config(json!({"base_url": "http://127.0.0.1:9/v1"}));
    let out = bb7(&env.home, &["eval", "--mode", "hybrid_auto"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("providers.local.base_url"), "{stderr}");
}

/// `bb7 eval --replay` of one shipped task with `config` keys added to it.
fn replay_perturbed(home: &Path, task: &str, mode: &str, config: Value) -> Value {
    let dir = home.join("tasks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = Path::new(ROOT)
        .join("eval/tasks")
        .join(format!("{task}.json"));
    let mut t: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for (k, v) in config.as_object().unwrap() {
        t["config"][k] = v.clone();
    }
    std::fs::write(dir.join(format!("{task}.json")), t.to_string()).unwrap();
    report(&bb7(
        home,
        &[
            "eval",
            "--tasks",
            dir.to_str().unwrap(),
            "--replay",
            "eval/traces",
            "--mode",
            mode,
            "--task",
            task,
            "--json",
        ],
    ))
}

#[test]
fn a_replay_fails_when_routing_settings_change_what_bb7_sends() {
    let home = tempfile::tempdir().unwrap();
    let task_of = |r: &Value| r["tasks"][0].clone();
    // Unchanged, the task replays as recorded.
    let same = replay_perturbed(home.path(), "java-schema-stream", "hybrid_auto", json!({}));
    assert_eq!(task_of(&same)["success"], true, "{same}");
    assert!(task_of(&same)["overhead_ms"].is_u64());
    // One local attempt fewer: bb7 falls back earlier than the trace, whose answers
    // would still make the files right.
    let fewer = replay_perturbed(
        home.path(),
        "java-schema-stream",
        "hybrid_auto",
        json!({"hybrid_max_local_attempts": 1}),
    );
    let t = task_of(&fewer);
    assert_eq!(t["success"], false, "{fewer}");
    let why = t["failures"].to_string();
    assert!(
        why.contains("request 2 went to the remote provider; the trace has it on local")
            && why.contains("1 answer of the trace never asked for"),
        "{why}"
    );
    // Edits asked for as blocks where the trace offered tools.
    let blocks = replay_perturbed(
        home.path(),
        "js-const",
        "remote",
        json!({"edit_format": "blocks"}),
    );
    let why = task_of(&blocks)["failures"].to_string();
    assert!(
        why.contains("asked for SEARCH/REPLACE blocks; the trace expects tools"),
        "{why}"
    );
}

#[test]
fn shipped_traces_say_how_they_were_made() {
    for mode in ["local", "remote", "hybrid_auto"] {
        let dir = Path::new(ROOT).join("eval/traces").join(mode);
        for entry in std::fs::read_dir(dir).unwrap() {
            let trace: Value =
                serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
            assert_eq!(trace["source"], "hand-written", "{trace}");
        }
    }
}
