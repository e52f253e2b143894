//! What servers report about their models: a list without capability fields leaves
//! tool support unknown (tools are tried), the context size a server runs with is read
//! and shown, and a server's refusal of tools is announced and believed for an hour
//! only (or until `bb7 models --reset-tools`).

mod common;

use std::time::Duration;

use common::fake_model::*;
use common::{Bb7, fake_env};
use serde_json::{Value, json};

fn raw(name: &str) -> Reply {
    Reply::Raw {
        pieces: vec![wire_fixture(name)],
        pause: Duration::ZERO,
    }
}

fn sends_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

fn turn(b: &mut Bb7) -> Vec<Value> {
    b.turn_stream("hi")
}

#[test]
fn a_model_list_that_says_nothing_of_tools_leaves_them_on_and_shows_the_real_context() {
    let (env, fake) = fake_env(json!({"default_model": "tiny-local"}));
    fake.set_models(raw("llama-server/e_001.s2c"));
    let (mut b, _id) = env.with_chat();
    let list = b.ok(json!({"action": "get_models", "refresh": true}));
    let row = &list["models"][0];
    assert_eq!(row["id"], "tiny-local");
    assert_eq!(row["context_length"], 2048, "{row}");
    assert_eq!(row["tools_known"], false, "{row}");
    fake.push_sse(response("", "ok", vec![]));
    turn(&mut b);
    assert!(
        sends_tools(&fake.chat_bodies()[0]),
        "tools were switched off"
    );
    drop(b);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args(["models"])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    let line = shown
        .lines()
        .find(|l| l.starts_with("tiny-local"))
        .unwrap_or_else(|| panic!("{shown}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&cols[..2], ["tiny-local", "2048"], "{shown}");
}

#[test]
fn a_refusal_of_tools_is_announced_and_tried_again_later() {
    let (env, fake) = fake_env(json!({"default_model": "tiny-local"}));
    let (mut b, _id) = env.with_chat();
    fake.push(raw("llama-server/b_001.s2c"));
    fake.push(raw("llama-server/b_003.s2c"));
    let seen = turn(&mut b);
    assert_eq!(seen.last().unwrap()["type"], "done", "{seen:?}");
    let notices: Vec<&Value> = seen.iter().filter(|m| m["type"] == "notice").collect();
    assert_eq!(notices.len(), 1, "{seen:?}");
    assert_eq!(notices[0]["kind"], "blocks");
    assert!(
        notices[0]["message"]
            .as_str()
            .unwrap()
            .contains("--reset-tools")
    );
    let bodies = fake.chat_bodies();
    assert!(sends_tools(&bodies[0]) && !sends_tools(&bodies[1]));

    // Believed for now: the next turn starts as blocks, without a new notice.
    fake.push_sse(response("", "ok", vec![]));
    let seen = turn(&mut b);
    assert!(!seen.iter().any(|m| m["type"] == "notice"));
    assert!(!sends_tools(&fake.chat_bodies()[2]));

    // An hour later the server may have been restarted with tools on.
    let state_path = env.home.join(".bb7/state.json");
    let mut state: Value = serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
    let at = state["tools_refused_at"]["tiny-local"].as_i64().unwrap();
    state["tools_refused_at"]["tiny-local"] = json!(at - 3601);
    std::fs::write(&state_path, state.to_string()).unwrap();
    fake.push_sse(response("", "ok", vec![]));
    turn(&mut b);
    assert!(
        sends_tools(&fake.chat_bodies()[3]),
        "tools were not tried again"
    );

    // A fresh refusal, then `reset_tools` forgets it at once.
    fake.push(raw("llama-server/b_001.s2c"));
    fake.push(raw("llama-server/b_003.s2c"));
    turn(&mut b);
    fake.set_models(raw("llama-server/e_001.s2c"));
    b.ok(json!({"action": "get_models", "reset_tools": true}));
    fake.push_sse(response("", "ok", vec![]));
    turn(&mut b);
    let bodies = fake.chat_bodies();
    assert!(
        sends_tools(bodies.last().unwrap()),
        "reset_tools did not reset"
    );
}

/// A config with a local and a remote fake, in `mode`, and a chat holding a file of
/// over 10,000 tokens.
fn local_and_remote(mode: &str) -> (common::Env, FakeModel, FakeModel, Bb7, String) {
    let env = common::Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "qwen2.5-coder:7b"},
            "remote": {"base_url": remote.url, "model": "vendor/big", "api_key": "rk"}
        },
        "agent_mode": mode,
        "retry_backoff_ms": 10
    }));
    let (mut b, chat) = env.with_chat();
    let big: String = (0..1500)
        .map(|i| format!("let value_{i} = compute({i});\n"))
        .collect();
    env.add(&mut b, "big.rs", &big);
    (env, local, remote, b, chat)
}

/// An answer whose usage says the server read `prompt` tokens.
fn answer_reading(prompt: u64, text_: &str) -> Vec<Step> {
    vec![
        role(),
        text(text_),
        finish("stop"),
        usage(prompt, 5, 0.0),
        done(),
    ]
}

#[test]
fn a_prompt_the_local_server_cut_silently_is_a_context_overflow() {
    // hybrid_auto: the local answer is dropped and the remote one stands.
    let (env, local, remote, mut b, chat) = local_and_remote("hybrid_auto");
    local.push_sse(answer_reading(2048, "I only saw the end."));
    remote.push_sse(answer_reading(9000, "Remote answer."));
    let seen = turn(&mut b);
    let end = seen.last().unwrap();
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "remote");
    assert_eq!(end["fallback_reason"], "context_truncated", "{end}");
    assert!(
        seen.iter()
            .any(|m| m["type"] == "attempt" && m["reason"] == "context_truncated")
    );
    let history = env.history(&chat);
    assert!(!history.iter().any(|(_, t)| t.contains("only saw the end")));

    // A server that read about what was sent is believed.
    local.push_sse(answer_reading(30000, "Fine."));
    let end = turn(&mut b).pop().unwrap();
    assert_eq!(end["provider"], "local", "{end}");
    assert!(end.get("fallback_reason").is_none());
    assert_eq!(remote.chat_bodies().len(), 1);
}

#[test]
fn local_mode_says_on_the_answer_that_the_prompt_was_cut() {
    let (env, local, _remote, mut b, chat) = local_and_remote("local");
    local.push_sse(answer_reading(2048, "I only saw the end."));
    let end = turn(&mut b).pop().unwrap();
    assert_eq!(end["type"], "done", "{end}");
    let chat_json = env.chat_json(&chat);
    let last = chat_json["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "system");
    let note = last["parts"][0]["content"].as_str().unwrap();
    assert!(
        note.contains("The server read only 2048 prompt tokens of about")
            && note.contains("num_ctx"),
        "{note}"
    );
}

#[test]
fn hybrid_learns_the_local_context_window_from_the_server() {
    let env = common::Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    local.set_models(raw("llama-server/e_001.s2c"));
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "tiny-local"},
            "remote": {"base_url": remote.url, "model": "vendor/big", "api_key": "rk"}
        },
        "agent_mode": "hybrid_auto",
        "retry_backoff_ms": 10
    }));
    let (mut b, _chat) = env.with_chat();
    // A small first turn: the local server answers, and bb7 asks it its size.
    local.push_sse(answer_reading(5000, "Small."));
    let end = turn(&mut b).pop().unwrap();
    let paths = |f: &FakeModel| {
        f.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        end["provider"],
        "local",
        "{end} local {:?} remote {:?}",
        paths(&local),
        paths(&remote)
    );
    assert!(
        local.requests().iter().any(|r| r.path.ends_with("/models")),
        "the local server was not asked"
    );
    // A prompt over the 2,048 tokens `meta.n_ctx` reports goes to remote unsent.
    let big: String = (0..400)
        .map(|i| format!("let value_{i} = compute({i});\n"))
        .collect();
    env.add(&mut b, "big.rs", &big);
    remote.push_sse(answer_reading(5000, "Remote."));
    let end = turn(&mut b).pop().unwrap();
    assert_eq!(end["provider"], "remote", "{end}");
    assert_eq!(end["fallback_reason"], "context_overflow", "{end}");
    assert_eq!(
        local.chat_bodies().len(),
        1,
        "the big prompt reached the local server"
    );
}

#[test]
fn an_ollama_list_gets_its_context_from_api_show() {
    let (env, fake) = fake_env(json!({"default_model": "qwen2.5-coder:7b"}));
    // Ollama's OpenAI-compatible list says nothing of the context.
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"object": "list", "data": [
            {"id": "qwen2.5-coder:7b", "object": "model", "created": 1, "owned_by": "library"}
        ]})
        .to_string(),
    });
    fake.set_fallback(Box::new(|r: &Recorded| {
        (r.method == "POST"
            && r.path.ends_with("/api/show")
            && r.body["model"] == "qwen2.5-coder:7b")
            .then(|| Reply::Http {
                status: 200,
                headers: vec![],
                body: json!({"parameters": "num_ctx 8192\nstop \"<|im_end|>\"",
                             "model_info": {"qwen2.context_length": 32768}})
                .to_string(),
            })
    }));
    let (mut b, _id) = env.with_chat();
    let list = b.ok(json!({"action": "get_models", "refresh": true}));
    assert_eq!(list["models"][0]["context_length"], 8192, "{list}");
}
