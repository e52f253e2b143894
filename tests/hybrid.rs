//! Local, remote and hybrid turns over stdio against two fake endpoints: a "local" one
//! that fails in the ways `hybrid_auto` detects (bad edits, no tool support, a small
//! context window, slow) and a "remote" one. Each fallback trigger names its reason on
//! `done`, nothing of a dropped attempt reaches the files or the chat, and fallback
//! stays off where the config or the chat says so.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, file_id};
use serde_json::{Value, json};

const SRC: &str = "fn main() {\n    println!(\"one\");\n}\n";

struct Two {
    env: Env,
    local: FakeModel,
    remote: FakeModel,
    b: Bb7,
    chat: String,
}

/// Two fake endpoints, a config naming them with `extra` keys on top, a chat with
/// `src/main.rs` in context.
fn two(extra: Value) -> Two {
    two_with(extra, json!({}))
}

/// Like [`two`], with `local` keys added to `providers.local`.
fn two_with(extra: Value, local_keys: Value) -> Two {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    let mut config = json!({
        "providers": {
            "local": {"base_url": local.url, "model": "qwen2.5-coder:14b"},
            "remote": {"base_url": remote.url, "model": "anthropic/claude-sonnet-4.5", "api_key": "rk"}
        },
        "agent_mode": "hybrid_auto",
        "retry_backoff_ms": 10
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    for (k, v) in local_keys.as_object().unwrap() {
        config["providers"]["local"][k] = v.clone();
    }
    env.write_config(config);
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SRC);
    Two {
        env,
        local,
        remote,
        b,
        chat,
    }
}

fn edit(new: &str) -> Vec<(&'static str, Value)> {
    vec![(
        "edit_file",
        json!({"edits": [{"path": "src/main.rs", "file_id": file_id("src/main.rs", SRC),
                          "old_string": "println!(\"one\");", "new_string": new}]}),
    )]
}

/// An edit whose old text is not in the file: a call that cannot apply.
fn unappliable() -> Vec<Step> {
    response("", "local try", edit_missing())
}

fn edit_missing() -> Vec<(&'static str, Value)> {
    vec![(
        "edit_file",
        json!({"edits": [{"path": "src/main.rs", "file_id": file_id("src/main.rs", SRC),
                          "old_string": "println!(\"absent\");", "new_string": "x"}]}),
    )]
}

fn remote_answer() -> Vec<Step> {
    response("", "remote answer", edit("println!(\"two\");"))
}

fn assistant_messages(chat: &Value) -> Vec<Value> {
    chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant" && m.get("model").is_some())
        .cloned()
        .collect()
}

#[test]
fn bad_local_edits_retry_then_fall_back_and_only_the_remote_answer_is_kept() {
    let mut t = two(json!({}));
    t.local.push_sse(unappliable());
    // The second local attempt's arguments do not follow the edit schema.
    t.local.push_sse(response(
        "",
        "again",
        vec![("edit_file", json!({"file": "src/main.rs"}))],
    ));
    t.remote.push_sse(remote_answer());

    let stream = t.b.turn_stream("change it");
    let end = stream.last().unwrap();
    assert_eq!(end["type"], "done", "{stream:?}");
    assert_eq!(end["provider"], "remote");
    assert_eq!(end["fallback_reason"], "schema_fail");
    let attempts: Vec<_> = stream.iter().filter(|m| m["type"] == "attempt").collect();
    assert_eq!(attempts.len(), 2, "{stream:?}");
    assert_eq!(attempts[0]["provider"], "local");
    assert_eq!(attempts[1]["provider"], "remote");
    assert_eq!(attempts[1]["reason"], "schema_fail");

    // The local model ran its own model; its retry was told what failed.
    let local = t.local.chat_bodies();
    assert_eq!(local.len(), 2);
    assert_eq!(local[0]["model"], "qwen2.5-coder:14b");
    let retry = local[1]["messages"].as_array().unwrap();
    assert!(
        retry
            .iter()
            .any(|m| m["role"] == "tool" && m["content"].as_str().unwrap().starts_with("Failed:"))
    );
    // The remote request is the original prompt, without the local attempts.
    let remote = t.remote.chat_bodies();
    assert_eq!(remote.len(), 1);
    assert_eq!(remote[0]["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(
        remote[0]["messages"].as_array().unwrap().len(),
        local[0]["messages"].as_array().unwrap().len()
    );
    assert_eq!(
        t.remote.requests()[0].authorization.as_deref(),
        Some("Bearer rk")
    );
    assert_eq!(t.local.requests()[0].authorization, None);

    // One answer in the chat, from the remote model, with the provider recorded.
    let chat = t.env.chat_json(&t.chat);
    let answers = assistant_messages(&chat);
    assert_eq!(answers.len(), 1, "{chat}");
    assert_eq!(answers[0]["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(answers[0]["usage"]["provider"], "remote");
    assert_eq!(answers[0]["usage"]["fallback_reason"], "schema_fail");
    let texts: String = chat.to_string();
    assert!(
        !texts.contains("local try"),
        "a dropped attempt reached the chat"
    );
    assert!(
        chat["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["role"] != "system"),
        "no retry note of a dropped attempt: {chat}"
    );
    assert_eq!(
        t.env.output(&t.chat, "src/main.rs").unwrap(),
        "fn main() {\n    println!(\"two\");\n}\n"
    );
    assert_eq!(t.env.read("src/main.rs"), SRC);
}

#[test]
fn without_schema_fallback_the_local_diff_error_stands() {
    let mut t = two(json!({"hybrid_remote_on_schema_fail": false, "hybrid_max_local_attempts": 1}));
    t.local.push_sse(unappliable());
    let end = t.b.turn("change it");
    assert_eq!(end["type"], "diff_error", "{end}");
    assert!(t.remote.chat_bodies().is_empty());
    assert!(t.env.output(&t.chat, "src/main.rs").is_none());
}

#[test]
fn strictly_local_turns_never_fall_back() {
    let mut t = two(json!({"agent_mode": "local"}));
    t.local.push_sse(unappliable());
    assert_eq!(t.b.turn("change it")["type"], "diff_error");
    t.local.push(http_error(
        400,
        "This model's maximum context length is 4096 tokens",
    ));
    let end = t.b.turn("again");
    assert_eq!(end["type"], "error", "{end}");
    t.local.push_sse(response("", "fine", vec![]));
    let end = t.b.turn("and again");
    assert_eq!(end["provider"], "local");
    assert!(end.get("fallback_reason").is_none());
    assert!(t.remote.chat_bodies().is_empty());
}

#[test]
fn a_prompt_over_the_local_window_goes_remote_before_sending() {
    let mut t = two_with(json!({}), json!({"context_window": 50}));
    t.remote.push_sse(remote_answer());
    let stream = t.b.turn_stream("change it");
    let end = stream.last().unwrap();
    assert_eq!(end["provider"], "remote", "{end}");
    assert_eq!(end["fallback_reason"], "context_overflow");
    assert!(
        t.local.chat_bodies().is_empty(),
        "the local model got a prompt it cannot hold"
    );
    assert!(stream.iter().all(|m| m["type"] != "attempt"));
}

#[test]
fn the_local_servers_overflow_error_falls_back_and_can_be_turned_off() {
    let mut t = two(json!({}));
    t.local.push(http_error(
        400,
        "the request exceeds the available context size",
    ));
    t.remote.push_sse(remote_answer());
    let end = t.b.turn("change it");
    assert_eq!(end["provider"], "remote", "{end}");
    assert_eq!(end["fallback_reason"], "context_overflow");

    let mut off = two(json!({"hybrid_remote_on_context_overflow": false}));
    off.local.push(http_error(
        400,
        "the request exceeds the available context size",
    ));
    let end = off.b.turn("change it");
    assert_eq!(end["type"], "error", "{end}");
    assert!(off.remote.chat_bodies().is_empty());
}

#[test]
fn a_slow_local_attempt_times_out_to_remote() {
    let mut t = two(json!({"hybrid_remote_on_timeout_ms": 300}));
    t.local.push_sse(vec![
        Step::Comment,
        role(),
        text("thinking slowly"),
        // Never opened: the local attempt outlasts the 300 ms timeout however slow
        // the machine is.
        Step::Wait(Gate::new()),
        done(),
    ]);
    t.remote.push_sse(remote_answer());
    let end = t.b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "remote");
    assert_eq!(end["fallback_reason"], "timeout");
    assert!(end["duration"].as_f64().unwrap() >= 0.3);
    let chat = t.env.chat_json(&t.chat);
    assert!(!chat.to_string().contains("thinking slowly"));
}

#[test]
fn a_local_server_without_tools_falls_back() {
    // With `edit_format` `auto` the local model would first be asked again for blocks;
    // `tools` leaves the refusal to routing.
    let mut t = two(json!({"edit_format": "tools"}));
    t.local.push(http_error(
        400,
        "registry.ollama.ai/library/gemma:2b does not support tools",
    ));
    t.remote.push_sse(remote_answer());
    let end = t.b.turn("change it");
    assert_eq!(end["provider"], "remote", "{end}");
    assert_eq!(end["fallback_reason"], "schema_fail");
}

#[test]
fn agent_mode_is_kept_per_chat() {
    let mut t = two(json!({"agent_mode": "remote"}));
    let chat = t.b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["agent_mode"], "remote");
    assert_eq!(chat["agent_mode_set"], false);
    t.remote.push_sse(response("", "remote", vec![]));
    let end = t.b.turn("hi");
    assert_eq!(end["provider"], "remote");

    t.b.ok(json!({"action": "save_chat_settings", "agent_mode": "local"}));
    let chat = t.b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["agent_mode"], "local");
    assert_eq!(chat["agent_mode_set"], true);
    assert_eq!(t.env.chat_json(&t.chat)["agent_mode"], "local");
    t.local.push_sse(response("", "local", vec![]));
    let end = t.b.turn("hi again");
    assert_eq!(end["provider"], "local");
    assert_eq!(t.local.chat_bodies().len(), 1);

    let bad =
        t.b.err(json!({"action": "save_chat_settings", "agent_mode": "sometimes"}));
    assert!(
        bad["message"].as_str().unwrap().contains("hybrid_auto"),
        "{bad}"
    );
    t.b.ok(json!({"action": "save_chat_settings", "agent_mode": ""}));
    assert_eq!(
        t.b.ok(json!({"action": "chat_get"}))["agent_mode"],
        "remote"
    );
}

#[test]
fn an_old_single_endpoint_config_answers_as_remote() {
    let (env, fake) = common::fake_env(json!({}));
    let (mut b, _) = env.with_chat();
    fake.push_sse(response("", "hello", vec![]));
    let end = b.turn("hi");
    assert_eq!(end["type"], "done");
    assert_eq!(end["provider"], "remote");
    assert!(end.get("fallback_reason").is_none());
    assert_eq!(fake.chat_bodies()[0]["model"], "fake/model");
}

/// An Anthropic Messages stream: `event:` lines are optional for a client that reads
/// each payload's `type`, so the fake server sends only `data:` lines.
fn anthropic_answer(text: &str, call: Value) -> Vec<Step> {
    let args = call["input"].to_string();
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 40, "cache_read_input_tokens": 60, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": call["name"], "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": &args[..10]}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": &args[10..]}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ];
    events.iter().map(|e| Step::Data(e.to_string())).collect()
}

#[test]
fn a_native_anthropic_remote_answers_through_the_same_turn() {
    let env = Env::new();
    let remote = FakeModel::start();
    let answer = anthropic_answer(
        "Renamed.",
        json!({"name": "edit_file", "input": {"edits": [{"path": "src/main.rs",
               "file_id": file_id("src/main.rs", SRC),
               "old_string": "println!(\"one\");", "new_string": "println!(\"two\");"}]}}),
    );
    remote.set_fallback(Box::new(move |req| {
        req.path
            .ends_with("/messages")
            .then(|| Reply::Sse(answer.clone()))
    }));
    env.write_config(json!({
        "providers": {"remote": {"api": "anthropic", "base_url": remote.url, "api_key": "ak",
                                 "model": "claude-sonnet-4-5"}}
    }));
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SRC);
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "remote");
    assert_eq!(end["usage"]["prompt_tokens"], 100);
    assert_eq!(end["usage"]["cached_tokens"], 60);
    assert_eq!(end["usage"]["completion_tokens"], 30);
    assert_eq!(
        env.output(&chat, "src/main.rs").unwrap(),
        "fn main() {\n    println!(\"two\");\n}\n"
    );
    let sent = remote.requests();
    assert!(sent[0].path.ends_with("/messages"), "{}", sent[0].path);
    assert_eq!(sent[0].authorization, None, "the key goes in x-api-key");
    let body = &sent[0].body;
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(body["messages"][0]["role"], "user");
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "edit_file" && t["input_schema"]["type"] == "object")
    );
}

#[test]
fn bb7_ask_sets_the_chats_mode_and_names_the_fallback() {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    env.write_config(json!({
        "providers": {"local": {"base_url": local.url, "model": "small"},
                      "remote": {"base_url": remote.url, "model": "big"}}
    }));
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_bb7"))
            .args(args)
            .current_dir(&env.project)
            .env_clear()
            .env("HOME", &env.home)
            .env("XDG_CONFIG_HOME", env.home.join(".config"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    assert!(run(&["init"]).status.success());
    local.push(http_error(
        400,
        "the request exceeds the available context size",
    ));
    remote.push_sse(response("", "from remote", vec![]));
    let out = run(&["ask", "--mode", "hybrid_auto", "hello"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("from remote"));
    assert!(
        stderr.contains("answered by the remote provider after a fallback (context_overflow)"),
        "{stderr}"
    );
    // The mode stays with the chat for the next `ask`.
    local.push_sse(response("", "from local", vec![]));
    let out = run(&["ask", "again"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("from local"));
    assert!(!run(&["ask", "--mode", "sometimes", "x"]).status.success());
}

#[test]
fn an_unreachable_local_server_falls_back_with_local_error() {
    let env = Env::new();
    let remote = FakeModel::start();
    // Nothing listens on the discard port.
    env.write_config(json!({
        "providers": {"local": {"base_url": "http://127.0.0.1:9/v1", "model": "small"},
                      "remote": {"base_url": remote.url, "model": "big"}},
        "agent_mode": "hybrid_auto",
        "retry_backoff_ms": 10
    }));
    let (mut b, _) = env.with_chat();
    remote.push_sse(response("", "from remote", vec![]));
    let end = b.turn("hi");
    assert_eq!(end["provider"], "remote", "{end}");
    assert_eq!(end["fallback_reason"], "local_error");
}

#[test]
fn a_local_key_is_not_sent_over_plain_http_to_another_machine() {
    let env = Env::new();
    env.write_config(json!({
        "providers": {"local": {"base_url": "http://192.0.2.1:11434/v1", "api_key": "lk"}},
        "agent_mode": "local"
    }));
    let (mut b, _) = env.with_chat();
    let r = b.err(json!({"action": "send", "content": "hi"}));
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("allow_insecure_http"),
        "{r}"
    );
}

#[test]
fn a_local_providers_edit_format_shapes_its_request() {
    let mut t = two_with(
        json!({"agent_mode": "local"}),
        json!({"edit_format": "blocks"}),
    );
    t.local.push_sse(response("", "no change", vec![]));
    let end = t.b.turn("hi");
    assert_eq!(end["provider"], "local", "{end}");
    let body = &t.local.chat_bodies()[0];
    assert!(body.get("tools").is_none(), "blocks need no tools: {body}");
}

/// A response whose only content is these retrieval calls.
fn reads(list: Vec<(&str, Value)>) -> Vec<Step> {
    let mut steps = vec![role()];
    for (i, (name, args)) in list.into_iter().enumerate() {
        steps.extend(tool_call(i, name, args, 2));
    }
    steps.extend([finish("tool_calls"), usage(10, 5, 0.0), done()]);
    steps
}

#[test]
fn a_local_attempt_that_spends_its_tool_budget_without_edits_falls_back() {
    let mut t = two(json!({"hybrid_tool_budget": 2}));
    t.b.ok(json!({"action": "save_chat_settings", "tools": "auto"}));
    t.local.push_sse(reads(vec![
        ("read_file", json!({"file_path": "src/main.rs"})),
        ("list_files", json!({})),
    ]));
    t.local.push_sse(reads(vec![(
        "read_file",
        json!({"file_path": "src/main.rs"}),
    )]));
    t.local
        .push_sse(response("", "I only looked around.", vec![]));
    t.remote.push_sse(remote_answer());
    let stream = t.b.turn_stream("change it");
    let end = stream.last().unwrap();
    assert_eq!(end["type"], "done", "{stream:?}");
    assert_eq!(end["provider"], "remote");
    assert_eq!(end["fallback_reason"], "tool_budget");
    // The third read of the local attempt was over its budget of 2 and not run.
    let local = t.local.chat_bodies();
    let last_tool = local[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .clone();
    assert!(
        last_tool
            .as_str()
            .unwrap()
            .contains("limit of 2 tool calls"),
        "{last_tool}"
    );
    assert_eq!(
        t.env.output(&t.chat, "src/main.rs").unwrap(),
        "fn main() {\n    println!(\"two\");\n}\n"
    );

    // Within the budget, or with a usable edit after spending it, the local answer stands.
    t.local.push_sse(reads(vec![
        ("read_file", json!({"file_path": "src/main.rs"})),
        ("list_files", json!({})),
    ]));
    let three = "fn main() {\n    println!(\"three\");\n}\n";
    let mut answer = response(
        "",
        "local edit",
        vec![(
            "write_file",
            json!({"path": "src/main.rs", "content": three}),
        )],
    );
    // A server that read the whole prompt reports about as many tokens as were sent
    // (the fake's usual 100 would read as a prompt cut silently, `context_truncated`).
    let at = answer.len() - 2;
    answer[at] = usage(20_000, 20, 0.0015);
    t.local.push_sse(answer);
    let end = t.b.turn("once more");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "local", "{end}");
    assert_eq!(t.env.output(&t.chat, "src/main.rs").unwrap(), three);
}

#[test]
fn local_edits_that_fail_the_validation_command_fall_back() {
    let mut t = two(json!({
        "hybrid_validate_command": "touch validated-here && grep -q two src/main.rs"
    }));
    t.local
        .push_sse(response("", "local try", edit("println!(\"three\");")));
    t.remote.push_sse(remote_answer());
    let stream = t.b.turn_stream("change it");
    let end = stream.last().unwrap();
    assert_eq!(end["type"], "done", "{stream:?}");
    assert_eq!(end["provider"], "remote");
    assert_eq!(end["fallback_reason"], "validation_failed");
    // The command ran on a scratch copy: the project holds neither its file nor the
    // local edit.
    assert!(!t.env.project.join("validated-here").exists());
    assert_eq!(t.env.read("src/main.rs"), SRC);
    assert_eq!(
        t.env.output(&t.chat, "src/main.rs").unwrap(),
        "fn main() {\n    println!(\"two\");\n}\n"
    );

    // Edits the command accepts stand as the local answer.
    let four = "fn main() {\n    println!(\"four two\");\n}\n";
    t.local.push_sse(response(
        "",
        "local edit",
        vec![(
            "write_file",
            json!({"path": "src/main.rs", "content": four}),
        )],
    ));
    let end = t.b.turn("again");
    assert_eq!(end["provider"], "local", "{end}");
    assert!(end.get("fallback_reason").is_none(), "{end}");
    assert_eq!(t.env.output(&t.chat, "src/main.rs").unwrap(), four);
    assert!(!t.env.project.join("validated-here").exists());
}
