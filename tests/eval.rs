//! `bb7 eval`: the shipped task set replayed from the shipped traces prints the metrics
//! the traces were written for (eval/make_traces.py predicts them), and a live run
//! through `--record` stores traces without credentials that replay to the same result.

mod common;
mod eval_support;

use std::path::Path;
use std::process::Output;

use common::fake_model::*;
use eval_support::*;
use serde_json::{Value, json};

/// The `--json` report; the exit status is checked against it: non-zero exactly when
/// a task failed.
fn report(out: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let r = parse_report(out);
    let failed = r["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["success"] != true)
        .count();
    assert_eq!(out.status.success(), failed == 0, "{stderr}");
    if failed > 0 {
        assert!(stderr.contains(&format!("{failed} of ")), "{stderr}");
        assert!(stderr.contains("tasks failed"), "{stderr}");
    }
    r
}

fn mode<'a>(report: &'a Value, name: &str) -> &'a Value {
    entry(report, "modes", "mode", name)
}

#[test]
fn the_shipped_traces_replay_to_the_expected_metrics() {
    let env = common::Env::new();
    let out = bb7(&env.home, &["eval", "--replay", "eval/traces", "--json"]);
    let r = report(&out);
    assert_eq!(r["tasks"].as_array().unwrap().len(), 174);

    let local = mode(&r, "local");
    assert_eq!(local["tasks"], 58);
    assert_eq!(local["missing_traces"], 0);
    assert_eq!(local["successes"], 49);
    assert_eq!(local["success_rate"], 0.8448);
    assert_eq!(local["accepted_hunk_ratio"], 0.875);
    assert_eq!(local["conflict_rate"], 0.0517);
    assert_eq!(local["refusal_tasks"], 7);
    assert_eq!(local["refused_as_expected"], 7);
    assert_eq!(local["refusal_rate"], 1.0);
    assert_eq!(local["tool_calls_per_success"], 1.0816);
    assert_eq!(local["latency_p50_ms"], 959);
    assert_eq!(local["latency_p95_ms"], 2050);
    assert_eq!(local["cost_per_task"], 0.0);
    assert_eq!(local["clarification_rate"], 0.0517);
    assert_eq!(local["fallback_rate"], 0.0);
    assert_eq!(
        local["tags"]["recoverable"],
        json!({"tasks": 17, "successes": 17})
    );
    assert_eq!(
        local["tags"]["must_refuse"],
        json!({"tasks": 7, "successes": 7})
    );
    assert_eq!(local["tags"]["blocks"], json!({"tasks": 7, "successes": 7}));
    assert_eq!(local["tags"]["retry"], json!({"tasks": 3, "successes": 0}));

    let remote = mode(&r, "remote");
    assert_eq!(remote["successes"], 58);
    assert_eq!(remote["success_rate"], 1.0);
    assert_eq!(remote["accepted_hunk_ratio"], 0.8909);
    assert_eq!(remote["conflict_rate"], 0.0517);
    assert_eq!(remote["refused_as_expected"], 7);
    assert_eq!(remote["tool_calls_per_success"], 1.069);
    assert_eq!(remote["latency_p50_ms"], 2785);
    assert_eq!(remote["latency_p95_ms"], 6850);
    assert_eq!(remote["cost_per_task"], 0.003214);
    assert_eq!(remote["clarification_rate"], 0.0517);

    let hybrid = mode(&r, "hybrid_auto");
    assert_eq!(hybrid["successes"], 56);
    assert_eq!(hybrid["success_rate"], 0.9655);
    assert_eq!(hybrid["accepted_hunk_ratio"], 0.8909);
    assert_eq!(hybrid["refused_as_expected"], 7);
    assert_eq!(hybrid["tool_calls_per_success"], 1.25);
    assert_eq!(hybrid["latency_p50_ms"], 1070);
    assert_eq!(hybrid["latency_p95_ms"], 4597);
    assert_eq!(hybrid["cost_per_task"], 0.000617);
    assert_eq!(hybrid["fallback_rate"], 0.0862);
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
    // A task failed (kt-no-tools in local): the exit status says so.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("1 of 6 tasks failed"),
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
    assert_eq!(
        exchange["model"], "vendor/model",
        "the exchange names its model"
    );
    assert!(
        exchange["response"]
            .as_str()
            .unwrap()
            .contains("data: [DONE]")
    );

    // Replayed with the default remote model, the trace is of another model: refused.
    let other = report(&bb7(
        &env.home,
        &[&args[..], &["--replay", traces_arg]].concat(),
    ));
    let why = entry(&other, "tasks", "task", "js-const")["failures"].to_string();
    assert!(
        why.contains("answered by \\\"vendor/model\\\"; the remote provider is configured with \\\"remote-model\\\""),
        "{why}"
    );
    let replayed = report(&bb7(
        &env.home,
        &[
            &args[..],
            &["--replay", traces_arg, "--remote-model", "vendor/model"],
        ]
        .concat(),
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
            assert!(
                trace["date"].as_str().is_some_and(|d| d.len() == 20),
                "{trace}"
            );
        }
    }
}

/// `bb7 eval --replay TRACES --json` of `tasks` in `mode`, the tasks written to a
/// directory of their own under `home`.
fn replay_tasks(home: &Path, tasks: &[Value], traces: &Path, mode: &str) -> Value {
    let dir = tempfile::tempdir_in(home).unwrap();
    let mut args = vec![
        "eval".to_owned(),
        "--tasks".into(),
        dir.path().to_str().unwrap().into(),
        "--replay".into(),
        traces.to_str().unwrap().into(),
        "--mode".into(),
        mode.into(),
        "--json".into(),
    ];
    for t in tasks {
        let id = t["id"].as_str().unwrap();
        std::fs::write(dir.path().join(format!("{id}.json")), t.to_string()).unwrap();
        args.extend(["--task".into(), id.into()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    report(&bb7(home, &args))
}

#[test]
fn a_recoverable_edit_lands_exactly_what_the_task_expects() {
    let home = tempfile::tempdir().unwrap();
    // Spaces for the file's tabs (tool call), and a line two spaces short (a block).
    let tabs = shipped_task("go-spaces-for-tabs");
    let block = shipped_task("py-block-line-short");
    let r = replay_tasks(
        home.path(),
        &[tabs.clone(), block.clone()],
        &shipped_traces(),
        "local",
    );
    for id in ["go-spaces-for-tabs", "py-block-line-short"] {
        let t = task_result(&r, id);
        assert_eq!(t["success"], true, "{t}");
        assert_eq!(
            (t["outcome"].as_str(), t["refused"].as_bool()),
            (Some("done"), Some(false))
        );
        assert_eq!(t["hunks"], 1, "{t}");
    }
    assert_eq!(
        mode(&r, "local")["tags"]["recoverable"],
        json!({"tasks": 2, "successes": 2})
    );
    // The same replay fails when the task expects what the model literally wrote (the
    // spaces): the file on disk is compared byte for byte.
    let mut literal = tabs.clone();
    let expected = tabs["expect"]["files"]["stats.go"].as_str().unwrap();
    literal["expect"]["files"]["stats.go"] = json!(expected.replace('\t', "    "));
    let r = replay_tasks(home.path(), &[literal], &shipped_traces(), "local");
    let t = task_result(&r, "go-spaces-for-tabs");
    assert_eq!(t["success"], false, "{t}");
    assert_eq!(t["failures"], json!(["stats.go is not as expected"]));
}

#[test]
fn a_must_refuse_task_passes_only_when_bb7_refuses() {
    let home = tempfile::tempdir().unwrap();
    let ambiguous = shipped_task("py-two-matches");
    assert_eq!(ambiguous["expect"], json!({"refusal": true}));
    let r = replay_tasks(
        home.path(),
        std::slice::from_ref(&ambiguous),
        &shipped_traces(),
        "remote",
    );
    let t = task_result(&r, "py-two-matches");
    assert_eq!(t["success"], true, "{t}");
    assert_eq!(t["outcome"], "diff_error");
    assert_eq!(t["refused"], true);
    let m = mode(&r, "remote");
    assert_eq!(
        (
            m["refusal_tasks"].as_u64(),
            m["refused_as_expected"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(m["refusal_rate"], 1.0);

    // An edit bb7 lands, in a task that expects a refusal: the landing fails it.
    let mut landing = shipped_task("go-spaces-for-tabs");
    landing["expect"] = json!({"refusal": true});
    let r = replay_tasks(home.path(), &[landing], &shipped_traces(), "remote");
    let t = task_result(&r, "go-spaces-for-tabs");
    assert_eq!(t["success"], false, "{t}");
    assert_eq!(t["refused"], false);
    let why = t["failures"].to_string();
    assert!(
        why.contains("bb7 applied edits the task expects refused (stats.go written)")
            && why.contains("stats.go changed; a refusal leaves it as it was"),
        "{why}"
    );
    let m = mode(&r, "remote");
    assert_eq!(
        (
            m["refusal_tasks"].as_u64(),
            m["refused_as_expected"].as_u64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(m["refusal_rate"], 0.0);

    // The refused task with a wrong expectation (that the edit lands): bb7's refusal
    // fails it.
    let mut wrong = ambiguous;
    let content = wrong["files"]["lookup.py"].as_str().unwrap().to_owned();
    wrong["expect"] = json!({"files": {"lookup.py": content.replacen("    return None\n", "    raise KeyError(k)\n", 1)}});
    let r = replay_tasks(home.path(), &[wrong], &shipped_traces(), "remote");
    let t = task_result(&r, "py-two-matches");
    assert_eq!(t["success"], false, "{t}");
    assert_eq!(
        t["failures"],
        json!([
            "the turn ended with diff_error",
            "lookup.py is not as expected"
        ])
    );
}

#[test]
fn block_tasks_ask_for_blocks_and_land_or_refuse() {
    let home = tempfile::tempdir().unwrap();
    let ids = [
        "js-block-exact",
        "py-block-line-short",
        "go-block-spaces",
        "lua-block-crlf",
        "py-block-search-twice",
        "py-block-one-bad",
        "ts-server-without-tools",
    ];
    let tasks: Vec<Value> = ids.iter().map(|id| shipped_task(id)).collect();
    let r = replay_tasks(home.path(), &tasks, &shipped_traces(), "hybrid_auto");
    for id in ids {
        let t = task_result(&r, id);
        assert_eq!(t["success"], true, "{t}");
    }
    assert_eq!(task_result(&r, "py-block-one-bad")["outcome"], "diff_error");
    assert_eq!(task_result(&r, "lua-block-crlf")["outcome"], "done");
    let m = mode(&r, "hybrid_auto");
    assert_eq!(m["tags"]["blocks"], json!({"tasks": 7, "successes": 7}));
    assert_eq!(
        (
            m["refusal_tasks"].as_u64(),
            m["refused_as_expected"].as_u64()
        ),
        (Some(2), Some(2))
    );
    // The replay checks the format bb7 asked for: tools where the trace has blocks fail.
    let mut tools = shipped_task("lua-block-crlf");
    tools["config"]["edit_format"] = json!("tools");
    let r = replay_tasks(home.path(), &[tools], &shipped_traces(), "remote");
    let why = task_result(&r, "lua-block-crlf")["failures"].to_string();
    assert!(
        why.contains("request 1 asked for tools; the trace expects SEARCH/REPLACE blocks"),
        "{why}"
    );
}

#[test]
fn tool_calls_count_what_bb7_handled_not_what_the_trace_holds() {
    let home = tempfile::tempdir().unwrap();
    let traces = home.path().join("traces");
    // One edit call streamed in two fragments that both carry its id, as some servers
    // send: one call to bb7, though two fragments name an id.
    let content = "var total = 0;\nfor (var i = 0; i < 3; i++) total += i;\n";
    let args =
        json!({"edits": [{"path": "index.js", "file_id": common::file_id("index.js", content),
                                 "old_string": "var total = 0;", "new_string": "let total = 0;"}]})
        .to_string();
    let (head, tail) = args.split_at(args.len() / 2);
    let fragment = |name: Option<&str>, part: &str| {
        let mut function = json!({"arguments": part});
        if let Some(n) = name {
            function["name"] = json!(n);
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_7", "type": "function", "function": function}
        ]}, "finish_reason": null}]})
    };
    let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    let sse: String = [
        fragment(Some("edit_file"), head),
        fragment(None, tail),
        finish,
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .chain(["data: [DONE]\n\n".to_owned()])
    .collect();
    let trace = json!({"task": "js-const", "mode": "remote", "source": "hand-written",
        "exchanges": [{"provider": "remote", "model": "remote-model", "response": sse, "latency_ms": 100, "expect_tools": true}]});
    std::fs::create_dir_all(traces.join("remote")).unwrap();
    std::fs::write(traces.join("remote/js-const.json"), trace.to_string()).unwrap();
    let r = replay_tasks(home.path(), &[shipped_task("js-const")], &traces, "remote");
    let t = task_result(&r, "js-const");
    assert_eq!(t["success"], true, "{t}");
    assert_eq!(t["tool_calls"], 1, "{t}");

    // A hybrid turn whose second local attempt is dropped for remote: bb7 returns
    // nothing to that attempt's calls, so however many it holds, they count none.
    let id = "java-schema-stream";
    let shipped = replay_tasks(
        home.path(),
        &[shipped_task(id)],
        &shipped_traces(),
        "hybrid_auto",
    );
    assert_eq!(task_result(&shipped, id)["tool_calls"], 2, "{shipped}");
    let mut more = shipped_trace("hybrid_auto", id);
    let calls = more["exchanges"][1]["reply"]["tool_calls"]
        .as_array()
        .unwrap()
        .clone();
    let tripled: Vec<Value> = calls
        .iter()
        .cycle()
        .take(calls.len() * 3)
        .cloned()
        .collect();
    more["exchanges"][1]["reply"]["tool_calls"] = json!(tripled);
    std::fs::create_dir_all(traces.join("hybrid_auto")).unwrap();
    std::fs::write(
        traces.join(format!("hybrid_auto/{id}.json")),
        more.to_string(),
    )
    .unwrap();
    let r = replay_tasks(home.path(), &[shipped_task(id)], &traces, "hybrid_auto");
    let t = task_result(&r, id);
    assert_eq!(t["success"], true, "{t}");
    assert_eq!(t["tool_calls"], 2, "{t}");
    // A clarifying question is a call bb7 answered, beside the edit.
    let r = replay_tasks(
        home.path(),
        &[shipped_task("rs-clarify-units")],
        &shipped_traces(),
        "remote",
    );
    assert_eq!(task_result(&r, "rs-clarify-units")["tool_calls"], 2, "{r}");
}

#[test]
fn the_overhead_report_has_its_three_parts() {
    let home = tempfile::tempdir().unwrap();
    let tasks = [shipped_task("js-const"), shipped_task("py-two-matches")];
    let r = replay_tasks(home.path(), &tasks, &shipped_traces(), "remote");
    let parts = ["send_to_request_ms", "answer_to_done_ms", "apply_ms"];
    for t in r["tasks"].as_array().unwrap() {
        let o = t["overhead"].as_object().unwrap();
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            parts.iter().collect::<Vec<_>>(),
            "{t}"
        );
        assert!(o.values().all(Value::is_u64), "{t}");
    }
    // One request: the parts are the total less the model's answer (give or take a
    // millisecond of rounding each).
    let js = task_result(&r, "js-const");
    let sum: u64 = parts
        .iter()
        .map(|p| js["overhead"][p].as_u64().unwrap())
        .sum();
    assert!(sum <= js["overhead_ms"].as_u64().unwrap() + 3, "{js}");
    // A refusal has no review to apply.
    assert_eq!(task_result(&r, "py-two-matches")["overhead"]["apply_ms"], 0);
    let m = mode(&r, "remote");
    for p in parts {
        assert!(m["overhead_parts_p50"][p].is_u64(), "{m}");
        assert!(m["overhead_parts_p95"][p].is_u64(), "{m}");
    }
    // The table shows each part beside the model's recorded latency.
    let dir = home.path().join("tasks-table");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("js-const.json"), tasks[0].to_string()).unwrap();
    let out = bb7(
        home.path(),
        &[
            "eval",
            "--tasks",
            dir.to_str().unwrap(),
            "--replay",
            "eval/traces",
            "--mode",
            "remote",
        ],
    );
    let table = String::from_utf8(out.stdout).unwrap();
    for row in [
        "model latency p50",
        "bb7 overhead p50",
        "  send → request p50",
        "  answer → done p50",
        "  apply p50",
        "refused as expected",
    ] {
        assert!(
            table.lines().any(|l| l.starts_with(row)),
            "no {row:?} in\n{table}"
        );
    }
}
