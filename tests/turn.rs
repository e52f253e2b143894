//! The model turn over stdio against the fake OpenAI-compatible server.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env, file_id};
use serde_json::{Value, json};

fn setup(extra: Value) -> (Env, FakeModel) {
    let mut extra = extra;
    // The streaming tests also check the key that is sent.
    if extra.get("api_key").is_none() {
        extra["api_key"] = json!("sk-test-secret");
    }
    fake_env(extra)
}

fn texts(msgs: &[Value], kind: &str) -> String {
    msgs.iter()
        .filter(|m| m["type"] == kind)
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

fn user_prompt(body: &Value) -> String {
    body["messages"][1]["content"].as_str().unwrap().to_owned()
}

#[test]
fn a_turn_streams_text_and_reasoning_and_writes_an_edit_to_output() {
    let (env, fake) = setup(json!({}));
    let src = "fn main() {\n    println!(\"hello\");\n}\n";
    env.write("src/main.rs", src);
    env.write("README.md", "# Demo\n");
    std::fs::create_dir_all(env.config_dir()).unwrap();
    std::fs::write(
        env.config_dir().join("instructions.md"),
        "Prefer short answers.\n",
    )
    .unwrap();
    let (mut b, id) = env.with_chat();
    std::fs::write(
        env.project.join(".bb7/instructions"),
        "@@ hidden comment\nUse British spelling.\n",
    )
    .unwrap();
    b.ok(json!({"action": "context_add", "path": "src/main.rs", "content": src}));
    b.ok(json!({"action": "context_add", "path": "README.md", "content": "# Demo\n", "readonly": true}));
    fake.push_sse(response(
        "Let me look at main.",
        "I changed the greeting.",
        vec![("edit_file", json!({"path": "src/main.rs", "file_id": file_id("src/main.rs", src),
                                  "edits": [{"old_string": "println!(\"hello\");", "new_string": "println!(\"hello, world\");"}]}))],
    ));
    let msgs = b.turn_stream("Make the greeting longer");
    assert_eq!(texts(&msgs, "thinking"), "Let me look at main.");
    assert_eq!(texts(&msgs, "chunk"), "I changed the greeting.");
    // Deltas arrive one per SSE event, before done.
    assert!(msgs.iter().filter(|m| m["type"] == "chunk").count() >= 4);
    let done = msgs.last().unwrap();
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["chat_id"], id.as_str());
    assert_eq!(done["output_files"], json!(["src/main.rs"]));
    assert_eq!(
        done["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 3, "cache_write_tokens": 0, "total_tokens": 120, "cost": 0.0015})
    );
    assert!(done["duration"].as_f64().unwrap() >= 0.0);
    let change = &done["changes"][0];
    assert_eq!(change["type"], "edit");
    assert_eq!(change["path"], "src/main.rs");
    assert!(
        change["unified_diff"]
            .as_str()
            .unwrap()
            .contains("+    println!(\"hello, world\");")
    );
    assert!(
        change["description"]
            .as_str()
            .unwrap()
            .starts_with("Edit src/main.rs: 1 hunk")
    );

    // The user's file is untouched; the output holds the edit.
    assert_eq!(env.read("src/main.rs"), src);
    let out = std::fs::read_to_string(env.chat_dir(&id).join("output/src/main.rs")).unwrap();
    assert_eq!(out, "fn main() {\n    println!(\"hello, world\");\n}\n");
    let st = b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(st["files"][0]["status"], "M");

    // chat.json: the user message with model, timestamp and snapshot; the assistant
    // message with thinking, text, the write event and output_files.
    let chat = env.chat_json(&id);
    let msgs = chat["messages"].as_array().unwrap();
    let user = msgs.iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(user["model"], "fake/model");
    assert!(user["timestamp"].is_string());
    assert_eq!(
        user["context_snapshot"][0],
        json!({"path": "src/main.rs", "file_id": file_id("src/main.rs", src)})
    );
    let reply = msgs.last().unwrap();
    assert_eq!(reply["role"], "assistant");
    assert_eq!(
        reply["parts"][0],
        json!({"type": "thinking", "content": "Let me look at main."})
    );
    assert_eq!(
        reply["parts"][1],
        json!({"type": "text", "content": "I changed the greeting."})
    );
    assert_eq!(reply["parts"][2]["action"], "AssistantWriteFile");
    assert_eq!(reply["output_files"], json!(["src/main.rs"]));
    assert_eq!(reply["usage"]["cost"], 0.0015);

    // The exact request bb7 sent.
    let req = &fake.requests()[0];
    assert_eq!(req.authorization.as_deref(), Some("Bearer sk-test-secret"));
    let body = &fake.chat_bodies()[0];
    assert_eq!(body["model"], "fake/model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["provider"], json!({"data_collection": "deny"}));
    assert_eq!(body["usage"], json!({"include": true}));
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["write_file", "edit_file"]);
    assert!(body["tools"][1]["function"]["parameters"]["properties"]["edits"].is_object());
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are bb7"));
    assert!(
        system.contains("<user-instructions source=\"~/.config/bb7/instructions.md\" fence=\"")
    );
    assert!(system.contains("\">\nPrefer short answers.\n</user-instructions fence=\""));
    assert!(system.contains("<user-instructions source=\".bb7/instructions\" fence=\""));
    assert!(system.contains("\">\nUse British spelling.\n</user-instructions fence=\""));
    assert!(!system.contains("hidden comment"));
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
    let user = user_prompt(body);
    let pos = |needle: &str| {
        user.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing from {user}"))
    };
    // The files first (sorted by path, read-only and writable alike), then the
    // history, then the new message.
    assert!(pos("<context>") < pos("path=\"README.md\""));
    assert!(pos("path=\"README.md\"") < pos("path=\"src/main.rs\""));
    assert!(user[pos("path=\"src/main.rs\"")..].starts_with("path=\"src/main.rs\" file_id="));
    assert!(user[pos("path=\"src/main.rs\"")..].contains(src));
    assert!(pos("</context>") < pos("action=\"UserAddFile\""));
    assert!(pos("action=\"UserAddFile\"") < pos("<message role=\"user\""));
    assert!(pos("<message role=\"user\"") < pos("Make the greeting longer"));

    // A second turn sees the pending output as the writable version.
    fake.push_sse(response("", "Done.", vec![]));
    let msgs = b.turn_stream("Thanks");
    assert_eq!(msgs.last().unwrap()["type"], "done");
    let body = &fake.chat_bodies()[1];
    let user = user_prompt(body);
    assert!(user.contains(&file_id("src/main.rs", &out)));
    assert!(user.contains("hello, world"));
    assert!(user.contains("I changed the greeting."));
    assert!(user.contains("AssistantWriteFile"));
    // The first request is a prefix of the second; the pending version follows it.
    let first = user_prompt(&fake.chat_bodies()[0]);
    assert!(user.starts_with(&first));
    assert!(user[first.len()..].contains("hello, world"));

    // Apply writes it to the user's file.
    b.ok(json!({"action": "apply_file", "path": "src/main.rs"}));
    assert_eq!(env.read("src/main.rs"), out);
}

#[test]
fn write_file_creates_new_files_and_local_servers_need_no_key() {
    let env = Env::new();
    let fake = FakeModel::start();
    env.write_config(json!({"base_url": fake.url, "default_model": "llama"}));
    let (mut b, id) = env.with_chat();
    let mut steps = vec![role(), reasoning_content("thinking locally")];
    steps.extend(tool_call(
        0,
        "write_file",
        json!({"path": "notes/todo.md", "content": "- one\n- two\n"}),
        5,
    ));
    steps.push(finish("tool_calls"));
    steps.push(done());
    fake.push_sse(steps);
    let msgs = b.turn_stream("Write a todo list");
    assert_eq!(texts(&msgs, "thinking"), "thinking locally");
    let done = msgs.last().unwrap();
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["usage"]["cost"], 0.0);
    assert_eq!(done["changes"][0]["type"], "write");
    assert_eq!(done["changes"][0]["file_exists"], false);
    assert_eq!(done["changes"][0]["content_lines"], 2);
    assert_eq!(done["changes"][0]["preview"], "- one\n- two\n");
    assert!(fake.requests()[0].authorization.is_none());
    let st = b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(st["files"][0]["status"], "A");
    assert_eq!(
        std::fs::read_to_string(env.chat_dir(&id).join("output/notes/todo.md")).unwrap(),
        "- one\n- two\n"
    );
}

#[test]
fn openrouter_without_a_key_is_refused_with_a_clear_error() {
    let env = Env::new();
    let (mut b, _id) = env.with_chat();
    let e = b.err(json!({"action": "send", "content": "hi"}));
    assert!(e["message"].as_str().unwrap().contains("API key"));
}

#[test]
fn the_environment_key_overrides_the_config_key() {
    let (env, fake) = setup(json!({}));
    let mut b = Bb7::spawn(
        &env.home,
        &env.project,
        &[("OPENROUTER_API_KEY", "sk-from-env")],
    );
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    fake.push_sse(response("", "hi", vec![]));
    assert_eq!(b.turn_stream("hello").last().unwrap()["type"], "done");
    assert_eq!(
        fake.requests()[0].authorization.as_deref(),
        Some("Bearer sk-from-env")
    );
}
