//! The prompt laid out for the provider's cache, measured from outside: over a scripted
//! 7-turn chat through the fake endpoint (which simulates a prompt cache), the share of
//! each request that repeats the previous request's beginning, the breakpoints per
//! model, the cached tokens in the usage, and the cost estimate before a send.

mod common;

use common::fake_model::{FakeModel, Reply, breakpoints, prompt_text, response, shared_prefix};
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

/// About 20 KB of numbered lines.
fn source(name: &str) -> String {
    (0..800)
        .map(|i| format!("def {name}_{i}(x):  # {name}\n"))
        .collect()
}

fn models(fake: &FakeModel) {
    let row = |id: &str| {
        json!({"id": id, "name": id, "pricing": {"prompt": "0.000003", "completion": "0.000015",
              "input_cache_read": "0.0000003", "input_cache_write": "0.00000375"}})
    };
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [row("anthropic/claude-sonnet-4.5"), row("openai/gpt-5")]})
            .to_string(),
    });
}

/// Reuse per turn: the share of each request's prompt text (in percent) that equals
/// the previous request's beginning, with what happened before it.
struct Run {
    env: Env,
    fake: FakeModel,
    b: Bb7,
    shares: Vec<(String, f64)>,
}

fn seven_turns(model: &str) -> Run {
    let (env, fake) = fake_env(json!({"default_model": model}));
    fake.simulate_cache();
    models(&fake);
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "get_models"}));
    let docs = source("doc");
    env.write("docs.md", &docs);
    b.ok(json!({"action": "context_add", "path": "docs.md", "content": docs, "readonly": true}));
    for f in ["a.py", "b.py", "c.py"] {
        env.add(&mut b, f, &source(&f[..1]));
    }
    let mut kinds = Vec::new();
    let plain = |fake: &FakeModel| fake.push_sse(response("", "An answer.", vec![]));
    // 1: a question; 2: an edit of a.py; 3: a plain answer after it; 4: a new file;
    // 5: b.py re-added with a change; 6 and 7: plain answers.
    plain(&fake);
    kinds.push("first");
    assert_eq!(b.turn("What does a.py do?")["type"], "done");
    let edit = json!({"edits": [{"path": "a.py", "old_string": "def a_7(x):  # a\n",
                                 "new_string": "def a_seven(x):  # a\n"}]});
    fake.push_sse(response("", "Renamed.", vec![("edit_file", edit)]));
    kinds.push("after a plain answer");
    assert_eq!(b.turn("Rename a_7.")["type"], "done");
    plain(&fake);
    kinds.push("after an edit");
    assert_eq!(b.turn("Why?")["type"], "done");
    env.add(&mut b, "d.py", &source("d"));
    plain(&fake);
    kinds.push("after a new file");
    assert_eq!(b.turn("And d.py?")["type"], "done");
    let changed = source("b").replace("def b_3(x)", "def b_three(x)");
    b.ok(json!({"action": "context_update", "path": "b.py", "content": changed}));
    plain(&fake);
    kinds.push("after a re-added file");
    assert_eq!(b.turn("I renamed b_3.")["type"], "done");
    plain(&fake);
    kinds.push("after a plain answer");
    assert_eq!(b.turn("Anything else?")["type"], "done");
    plain(&fake);
    kinds.push("after a plain answer");
    let last = b.turn("Thanks.");
    assert_eq!(last["type"], "done");
    // The chat's running total is the sum of its answers' usage.
    let chat = b.ok(json!({"action": "chat_get"}));
    let answers: Vec<&Value> = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant" && m.get("usage").is_some())
        .collect();
    assert_eq!(
        answers.len(),
        7,
        "one per answer (context events carry none)"
    );
    let sum = |k: &str| {
        answers
            .iter()
            .map(|m| m["usage"][k].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(last["chat_usage"]["total_tokens"], sum("total_tokens"));
    assert_eq!(last["chat_usage"]["cached_tokens"], sum("cached_tokens"));
    assert!(last["chat_usage"]["cost"].as_f64().unwrap() > last["usage"]["cost"].as_f64().unwrap());
    let texts: Vec<String> = fake.chat_bodies().iter().map(prompt_text).collect();
    assert_eq!(texts.len(), 7);
    let shares = texts
        .windows(2)
        .zip(kinds.iter().skip(1))
        .map(|(w, kind)| {
            let share = 100.0 * shared_prefix(&w[0], &w[1]) as f64 / w[1].len() as f64;
            (kind.to_string(), share)
        })
        .collect();
    Run {
        env,
        fake,
        b,
        shares,
    }
}

/// A plain answer adds a few lines; an edit or a re-added file a diff; only a new file
/// adds its whole text after the history.
fn check_shares(shares: &[(String, f64)]) {
    for (kind, share) in shares {
        let floor = match kind.as_str() {
            "after a plain answer" => 95.0,
            "after a new file" => 80.0,
            _ => 90.0,
        };
        assert!(
            *share >= floor,
            "{kind}: {share:.1}% < {floor}% ({shares:?})"
        );
    }
}

#[test]
fn an_anthropic_chat_reuses_its_prefix_and_marks_it_for_the_cache() {
    let mut run = seven_turns("anthropic/claude-sonnet-4.5");
    check_shares(&run.shares);
    for body in run.fake.chat_bodies() {
        let marks = breakpoints(&body);
        assert!((1..=4).contains(&marks), "{marks} breakpoints");
        assert!(body["prompt_cache_key"].is_null() || body["prompt_cache_key"].is_string());
    }
    // The simulated cache's figures reach the answer's usage and the chat.
    let chat = run.b.ok(json!({"action": "chat_get"}));
    let last = chat["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    let usage = &last["usage"];
    assert!(usage["cached_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(
        usage["cached_tokens"].as_u64().unwrap() * 100 / usage["prompt_tokens"].as_u64().unwrap()
            >= 90,
        "{usage}"
    );
    assert!(usage.get("cache_write_tokens").is_some(), "{usage}");

    // Before the next send: the reference's estimate with what the cache saves.
    let est = run
        .b
        .ok(json!({"action": "estimate_tokens", "input_text": "One more?"}));
    assert_eq!(est["type"], "token_estimate");
    for key in [
        "total",
        "context_files",
        "history",
        "instructions",
        "system_prompt",
    ] {
        assert!(est[key].is_u64(), "{key}: {est}");
    }
    assert!(est["files"].as_array().unwrap().len() >= 5, "{est}");
    // a.py and b.py were shown in two versions; a new chat would send one.
    assert!(est["potential_savings"].as_u64().unwrap() > 0, "{est}");
    let cached = est["cached_tokens"].as_u64().unwrap();
    assert!(cached * 100 / est["total"].as_u64().unwrap() >= 80, "{est}");
    let cost = est["expected_cost"].as_f64().unwrap();
    let uncached = est["total"].as_u64().unwrap() as f64 * 0.000003;
    assert!(cost > 0.0 && cost < uncached / 2.0, "{cost} vs {uncached}");
    drop(run.env);
}

#[test]
fn an_openai_chat_gets_no_breakpoints_and_still_reuses_its_prefix() {
    let run = seven_turns("openai/gpt-5");
    for body in run.fake.chat_bodies() {
        assert_eq!(breakpoints(&body), 0);
        assert!(body["messages"][1]["content"].is_string());
    }
    check_shares(&run.shares);
}

#[test]
fn prompt_cache_off_sends_no_breakpoints() {
    let (env, fake) = fake_env(json!({"default_model": "anthropic/claude-sonnet-4.5",
                                      "prompt_cache": "off"}));
    let (mut b, _id) = env.with_chat();
    env.add(&mut b, "a.py", &source("a"));
    fake.push_sse(response("", "Hi.", vec![]));
    assert_eq!(b.turn("Hello")["type"], "done");
    assert_eq!(breakpoints(&fake.chat_bodies()[0]), 0);
    let (env, fake) = fake_env(json!({"default_model": "anthropic/claude-sonnet-4.5",
                                      "prompt_cache": "1h"}));
    let (mut b, _id) = env.with_chat();
    env.add(&mut b, "a.py", &source("a"));
    fake.push_sse(response("", "Hi.", vec![]));
    assert_eq!(b.turn("Hello")["type"], "done");
    let body = &fake.chat_bodies()[0];
    let ttl: Vec<&Value> = body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.get("cache_control"))
        .collect();
    assert!(
        !ttl.is_empty() && ttl.iter().all(|c| c["ttl"] == "1h"),
        "{ttl:?}"
    );
}

#[test]
fn a_send_over_max_cost_per_send_fails_before_anything_is_billed() {
    let (env, fake) = fake_env(json!({"default_model": "anthropic/claude-sonnet-4.5",
                                      "max_cost_per_send": 0.001}));
    models(&fake);
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "get_models"}));
    for f in ["a.py", "b.py"] {
        env.add(&mut b, f, &source(&f[..1]));
    }
    let e = b.err(json!({"action": "send", "content": "Explain."}));
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("max_cost_per_send") && msg.contains("nothing was sent"),
        "{msg}"
    );
    assert!(fake.chat_bodies().is_empty(), "no request was made");
    let chat = env.chat_json(&id);
    assert!(
        chat["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["role"] != "user"),
        "the message was not saved as sent"
    );
}

/// A chat with `a.py` in context after one answered `question` (a model without cache
/// breakpoints): the environment, the fake endpoint, the process and the chat's id.
fn chat_after_one_turn(question: &str) -> (Env, FakeModel, Bb7, String) {
    let (env, fake) = fake_env(json!({"default_model": "openai/gpt-5"}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.py", &source("a"));
    fake.push_sse(response("", "Hi.", vec![]));
    assert_eq!(b.turn(question)["type"], "done");
    (env, fake, b, id)
}

#[test]
fn chat_compact_starts_a_new_context_block_with_the_current_versions() {
    let (_env, fake, mut b, _id) = chat_after_one_turn("Hello");
    let changed = source("a").replace("def a_3(x)", "def a_three(x)");
    b.ok(json!({"action": "context_update", "path": "a.py", "content": changed}));
    let before = b.ok(json!({"action": "estimate_tokens"}));
    assert!(
        before["potential_savings"].as_u64().unwrap() > 0,
        "{before}"
    );
    assert!(before["cached_tokens"].as_u64().unwrap() > 0, "{before}");

    b.ok(json!({"action": "chat_compact"}));
    let after = b.ok(json!({"action": "estimate_tokens"}));
    assert_eq!(after["potential_savings"], 0, "{after}");
    assert_eq!(after["cached_tokens"], 0, "{after}");
    fake.push_sse(response("", "Sure.", vec![]));
    assert_eq!(b.turn("Go on")["type"], "done");
    let text = prompt_text(&fake.chat_bodies()[1]);
    // Only the current version is sent, in the context block; the history stays.
    assert_eq!(text.matches("def a_three(x)").count(), 1);
    assert!(!text.contains("def a_3(x)"));
    assert!(text.find("def a_three(x)").unwrap() < text.find("Hello").unwrap());
    assert!(!text.contains("<update>\n"));
}

/// Each request begins with the whole previous one also when another process sent the
/// previous one (an editor and `bb7 ask` taking turns on a chat): the prompt ledger is
/// on disk when a process lets the chat go or exits, and a process that comes back to
/// the chat reads the ledger another one wrote since, instead of the one it kept.
#[test]
fn the_next_request_begins_with_the_last_one_whichever_process_sent_it() {
    let (env, fake, mut a, id) = chat_after_one_turn("First question.");
    // A leaves the chat; B takes it over and sends.
    a.ok(json!({"action": "chat_new"}));
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    fake.push_sse(response("", "Two.", vec![]));
    assert_eq!(b.turn("Second question.")["type"], "done");
    b.close();
    // A comes back and sends again.
    a.ok(json!({"action": "chat_select", "id": id}));
    fake.push_sse(response("", "Three.", vec![]));
    assert_eq!(a.turn("Third question.")["type"], "done");
    let texts: Vec<String> = fake.chat_bodies().iter().map(prompt_text).collect();
    assert_eq!(texts.len(), 3);
    for (n, w) in texts.windows(2).enumerate() {
        assert_eq!(
            shared_prefix(&w[0], &w[1]),
            w[0].len(),
            "request {} does not begin with request {}",
            n + 2,
            n + 1
        );
    }
}
