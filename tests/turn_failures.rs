//! Cancellation, API failures, retries, stalls; titles, models, balance, estimates;
//! concurrent turns.

mod common;

use std::time::Duration;

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

fn setup(extra: Value) -> (Env, FakeModel, Bb7, String) {
    let (env, fake) = fake_env(extra);
    let (b, id) = env.with_chat();
    (env, fake, b, id)
}

fn run(b: &mut Bb7, content: &str) -> (Vec<Value>, Value) {
    let mut seen = b.turn_stream(content);
    let end = seen.pop().unwrap_or_default();
    (seen, end)
}

fn messages(env: &Env, id: &str) -> Vec<Value> {
    env.chat_json(id)["messages"].as_array().unwrap().clone()
}

fn last_system_text(env: &Env, id: &str) -> String {
    messages(env, id)
        .iter()
        .rev()
        .find(|m| m["role"] == "system")
        .map(|m| m["parts"][0]["content"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[test]
fn cancel_stops_the_stream_and_keeps_the_partial_answer() {
    let (env, fake, mut b, id) = setup(json!({}));
    let partial = [reasoning("hmm"), text("Partial "), text("answer")];
    fake.push_sse(paused(&partial, Duration::from_secs(10), " never"));
    let rid = b.send(json!({"action": "send", "content": "long question"}));
    b.wait_for_text(&rid, "Partial answer");
    // ping answers while the stream runs.
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
    let c = b.ok(json!({"action": "cancel", "target_request_id": rid}));
    assert_eq!(c["type"], "ok");
    // The model's next words come after a 10 s pause: the saved answer (below) ending
    // at "Partial answer" shows the stream was cut, not waited out.
    let end = b.reply_to(&rid);
    assert_eq!(end["type"], "error");
    assert_eq!(end["message"], "Response aborted by user.");
    assert_eq!(end["code"], "cancelled");
    let msgs = messages(&env, &id);
    let n = msgs.len();
    assert_eq!(msgs[n - 2]["role"], "assistant");
    assert_eq!(msgs[n - 2]["parts"][1]["content"], "Partial answer");
    // No usage arrived, so none is recorded (zeros would read as "0 in / 0 out").
    assert!(msgs[n - 2].get("usage").is_none(), "{}", msgs[n - 2]);
    assert_eq!(msgs[n - 1]["role"], "system");
    // The reference's form of a system message, which its plugin draws.
    assert_eq!(msgs[n - 1]["content"], "Response aborted by user.");
    assert_eq!(
        msgs[n - 1]["parts"][0]["content"],
        "Response aborted by user."
    );
    assert_eq!(
        b.err(json!({"action": "cancel", "target_request_id": rid}))["message"],
        "No active request to cancel"
    );

    // Both are in the history of the next request.
    fake.push_sse(response("", "ok", vec![]));
    assert_eq!(run(&mut b, "again").1["type"], "done");
    let user = fake.chat_bodies()[1]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(user.contains("Partial answer") && user.contains("Response aborted by user."));
}

#[test]
fn http_errors_end_the_turn_with_a_clear_message_and_the_process_keeps_serving() {
    let (env, fake, mut b, id) = setup(json!({}));
    for (reply, needle) in [
        (http_error(401, "No auth credentials found"), "API key"),
        (
            http_error(402, "Insufficient credits"),
            "insufficient credits",
        ),
        (http_error(403, "Input flagged"), "moderation"),
        (
            Reply::Http {
                status: 400,
                headers: vec![],
                body: "<html><body><h1>Bad Request</h1></body></html>".into(),
            },
            "Bad Request",
        ),
    ] {
        fake.push(reply);
        let (_, end) = run(&mut b, "hi");
        assert_eq!(end["type"], "error", "{end}");
        assert_eq!(end["code"], "api");
        let msg = end["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{msg} lacks {needle}");
        assert!(!msg.contains("sk-") && !msg.contains("Bearer"));
        assert!(last_system_text(&env, &id).contains(needle));
        assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
    }
    // The user messages were kept.
    assert_eq!(
        messages(&env, &id)
            .iter()
            .filter(|m| m["role"] == "user")
            .count(),
        4
    );
}

#[test]
fn rate_limits_and_server_errors_are_retried_before_content() {
    let (_env, fake, mut b, _id) = setup(json!({}));
    fake.push(Reply::Http {
        status: 429,
        headers: vec![("Retry-After".into(), "0".into())],
        body: json!({"error": {"code": 429, "message": "slow down"}}).to_string(),
    });
    fake.push(Reply::Http {
        status: 502,
        headers: vec![],
        body: "<html>502 Bad Gateway</html>".into(),
    });
    fake.push_sse(response("", "finally", vec![]));
    let (seen, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(seen.iter().filter(|m| m["type"] == "chunk").count(), 1);
    assert_eq!(fake.chat_bodies().len(), 3);

    // When every retry fails the error says so; a non-JSON body is described.
    for _ in 0..4 {
        fake.push(Reply::Http {
            status: 503,
            headers: vec![],
            body: "<html><title>Service Unavailable</title></html>".into(),
        });
    }
    let (_, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "error");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("Service Unavailable"),
        "{end}"
    );
    assert_eq!(fake.chat_bodies().len(), 3 + 4);
}

#[test]
fn mid_stream_errors_dropped_connections_and_stalls() {
    let (env, fake, mut b, id) = setup(json!({"stream_timeout_secs": 1}));
    for code in [json!(502), json!("server_error")] {
        fake.push_sse(vec![
            role(),
            text("Half an"),
            stream_error(code.clone(), "Provider returned error"),
        ]);
        let (seen, end) = run(&mut b, "hi");
        assert_eq!(seen.len(), 1);
        assert_eq!(end["type"], "error", "code {code}: {end}");
        assert!(
            end["message"]
                .as_str()
                .unwrap()
                .contains("Provider returned error")
        );
        let msgs = messages(&env, &id);
        let n = msgs.len();
        assert_eq!(msgs[n - 2]["parts"][0]["content"], "Half an");
        assert!(
            msgs[n - 1]["parts"][0]["content"]
                .as_str()
                .unwrap()
                .contains("Provider returned error")
        );
    }
    // Content already arrived, so a server error is not retried.
    assert_eq!(fake.chat_bodies().len(), 2);

    fake.push_sse(vec![role(), text("cut "), Step::Drop]);
    let (_, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "error");
    assert!(
        end["message"].as_str().unwrap().contains("dropped"),
        "{end}"
    );
    assert!(
        messages(&env, &id)
            .iter()
            .any(|m| m["parts"][0]["content"] == "cut ")
    );

    let stall = Gate::new();
    fake.push_sse(vec![
        role(),
        text("slow "),
        // Nothing more until the stall is reported (a gate, not 4 s: a loaded machine
        // could take longer than that to see the 1 s stall).
        Step::Wait(stall.clone()),
        done(),
    ]);
    let (_, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "error");
    assert!(
        end["message"].as_str().unwrap().contains("stalled"),
        "{end}"
    );
    stall.open();
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
}

#[test]
fn titles_models_and_balance() {
    let (env, fake, mut b, id) = setup(json!({"title_model": "fake/titler"}));
    fake.push_sse(response("", "Sure.", vec![]));
    fake.push_completion("\"Refactor The Parser.\"");
    let (_, end) = run(&mut b, "Please refactor the parser");
    assert_eq!(end["type"], "done");
    // A hang guard of 600 polls (the harness's TIMEOUT when nothing arrives).
    let event = (0..600)
        .find_map(|_| {
            b.recv_timeout(Duration::from_millis(200))
                .filter(|m| m["type"] == "title_updated" && m["title"] != "Refactor the parser")
        })
        .or_else(|| {
            b.backlog
                .iter()
                .find(|m| m["type"] == "title_updated" && m["title"] != "Refactor the parser")
                .cloned()
        })
        .expect("title_updated event");
    assert_eq!(event["chat_id"], id.as_str());
    assert_eq!(event["title"], "Refactor The Parser");
    assert!(event.get("request_id").is_none());
    assert_eq!(env.chat_json(&id)["name"], "Refactor The Parser");
    let title_req = fake
        .chat_bodies()
        .into_iter()
        .find(|b| b["stream"] == false)
        .unwrap();
    assert_eq!(title_req["model"], "fake/titler");

    fake.push_completion("Explicit title");
    b.ok(json!({"action": "generate_title", "chat_id": id, "content": "whatever"}));
    let ev = (0..600)
        .find_map(|_| {
            b.recv_timeout(Duration::from_millis(200))
                .filter(|m| m["type"] == "title_updated")
        })
        .unwrap();
    assert_eq!(ev["title"], "Explicit title");

    fake.set_models(Reply::Http { status: 200, headers: vec![], body: json!({"data": [
        {"id": "a/one", "name": "One", "context_length": 1000, "pricing": {"prompt": "0.000001", "completion": "0.000002"}, "supported_parameters": ["tools", "reasoning"]},
        {"id": "b/two", "name": "Two", "context_length": 2000, "pricing": {"prompt": "0", "completion": "0"}, "supported_parameters": []}
    ]}).to_string() });
    let m = b.ok(json!({"action": "get_models"}));
    assert_eq!(m["type"], "models");
    assert_eq!(
        m["models"][0],
        json!({"id": "a/one", "name": "One", "description": "", "created": 0, "expiration_date": null,
               "context_length": 1000, "max_completion_tokens": 0, "supports_reasoning": true,
               "supports_tools": true, "pricing": {"prompt": "0.000001", "completion": "0.000002"}})
    );
    assert_eq!(m["models"][1]["supports_tools"], false);
    let fetched = fake
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/models"))
        .count();
    b.ok(json!({"action": "get_models"}));
    assert_eq!(
        fake.requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count(),
        fetched,
        "cache not used"
    );
    b.ok(json!({"action": "get_models", "refresh": true}));
    assert_eq!(
        fake.requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count(),
        fetched + 1
    );
    // A day-old cache is fetched again; when that fails, the old list is still served.
    let cache = env.home.join(".bb7/models.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    c["fetched_at"] = json!("2020-01-01T00:00:00Z");
    std::fs::write(&cache, c.to_string()).unwrap();
    fake.set_models(http_error(503, "down"));
    let m = b.ok(json!({"action": "get_models"}));
    assert_eq!(m["stale"], true);
    assert_eq!(m["models"][0]["id"], "a/one");
    assert_eq!(
        fake.requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count(),
        fetched + 2
    );

    fake.set_credits(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": {"total_credits": 10.5, "total_usage": 2.25}}).to_string(),
    });
    let bal = b.ok(json!({"action": "get_balance"}));
    assert_eq!(
        bal,
        json!({"type": "balance", "total_credits": 10.5, "total_usage": 2.25, "request_id": bal["request_id"]})
    );
    fake.set_credits(http_error(404, "Not Found"));
    let e = b.err(json!({"action": "get_balance"}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("no balance endpoint")
    );
}

#[test]
fn token_estimates() {
    let (env, _fake, mut b, id) = setup(json!({}));
    let src = "fn main() {\n    println!(\"hello world\");\n}\n";
    env.write("a.rs", src);
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": src}));
    env.plant_output(&id, "a.rs", "fn main() {}\n");
    let e = b.ok(json!({"action": "estimate_tokens", "input_text": "hello there"}));
    assert_eq!(e["type"], "token_estimate");
    assert_eq!(e["input_text"], 2);
    let parts: u64 = [
        "context_files",
        "history",
        "instructions",
        "system_prompt",
        "input_text",
    ]
    .iter()
    .map(|k| e[k].as_u64().unwrap())
    .sum();
    assert_eq!(e["total"], parts);
    assert!(e["system_prompt"].as_u64().unwrap() > 100);
    assert_eq!(e["files"][0]["has_output"], true);
    assert_eq!(e["files"][0]["output_tokens"], 4);
    assert!(e["files"][0]["original_tokens"].as_u64().unwrap() > 4);
    // The request carries the snapshot and the pending output; a new chat would carry
    // only the output: the snapshot is the saving, as the reference reports it.
    assert_eq!(e["potential_savings"], e["files"][0]["original_tokens"]);
    assert_eq!(e["cached_tokens"], 0, "nothing was sent yet");
    assert!(
        e["expected_cost"].is_null(),
        "fake/model has no listed price"
    );
    let t = b.ok(
        json!({"action": "estimate_text_tokens", "texts": ["hello world", "", "fn main() {}"]}),
    );
    assert_eq!(t["tokens"], json!([2, 0, 4]));
    b.err(json!({"action": "estimate_text_tokens", "texts": [1]}));
}

#[test]
fn turns_in_different_chats_run_at_the_same_time() {
    let (env, fake, mut b, first) = setup(json!({}));
    let (r1, slow) = b.start_slow_turn(&fake, json!({"action": "send", "content": "one"}));
    let busy = b.err(json!({"action": "send", "content": "again"}));
    assert_eq!(busy["code"], "busy");
    assert_eq!(busy["message"], "Another request is already in progress");
    let second = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    fake.push_sse(response("", "second", vec![]));
    let r2 = b.send(json!({"action": "send", "content": "two"}));
    let mut order = Vec::new();
    while order.len() < 2 {
        let m = b.recv().unwrap();
        if m["type"] == "done" {
            // The first turn goes on only once the second one ended.
            slow.open();
            order.push(m["request_id"].as_str().unwrap().to_owned());
            if m["request_id"] == r1.as_str() {
                assert_eq!(m["chat_id"], first.as_str());
            }
        }
    }
    assert_eq!(order, [r2, r1]);
    assert_eq!(
        messages(&env, &first).last().unwrap()["parts"][0]["content"],
        "slow first"
    );
    assert_eq!(
        messages(&env, &second).last().unwrap()["parts"][0]["content"],
        "second"
    );
    // The first chat's lock was released (and its file removed) after its turn ended
    // (the ping's reply comes after the server loop finished with that turn).
    b.ok(json!({"action": "ping"}));
    assert!(!env.chat_dir(&first).join("lock").exists());
}

#[test]
fn the_debug_log_records_actions_and_never_secrets_or_content() {
    let (env, fake) = common::fake_env(json!({"api_key": "sk-or-very-secret"}));
    env.write("secret.txt", "TOP SECRET CONTENT\n");
    let mut b = Bb7::spawn(&env.home, &env.project, &[("BB7_DEBUG", "1")]);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    b.ok(json!({"action": "context_add", "path": "secret.txt", "content": "TOP SECRET CONTENT\n"}));
    b.err(json!({"action": "context_add", "path": "../x", "content": "y"}));
    fake.push(http_error(401, "bad key"));
    let (_, end) = run(&mut b, "my private question");
    assert_eq!(end["type"], "error");
    assert!(b.close().success());
    let log = std::fs::read_to_string(env.home.join(".bb7/debug.log")).unwrap();
    assert!(log.contains("context_add"), "{log}");
    assert!(log.contains("path_escape"));
    assert!(log.contains("turn ended"));
    assert!(!log.contains("sk-or-very-secret"));
    assert!(!log.contains("TOP SECRET"));
    assert!(!log.contains("private question"));
}
