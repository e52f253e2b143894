//! A project whose `.bb7/` was written by the reference BB-7 v0.6 (its chat.json
//! shapes: each context event its own assistant message, the synthetic
//! `[Assistant modified: p]` line in the answer, an `edit_file` tool call with per-edit
//! paths kept beside it, a section snapshot named the reference's way, `usage` with
//! `duration`): bb7 loads it, replays it into the next request, forks and edits it.

mod common;

use std::path::Path;

use common::fake_model::*;
use common::{Bb7, fake_env, file_id};
use serde_json::{Value, json};

const CHAT: &str = "5eed0c0a17";
const V0: &str = "pub fn greet() -> &'static str {\n    \"hi\"\n}";
const V1: &str = "pub fn greet() -> &'static str {\n    \"hello, friend\"\n}";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn stream_end(b: &mut Bb7, rid: &str) -> Value {
    loop {
        let m = b.reply_to(rid);
        if matches!(m["type"].as_str(), Some("done" | "error" | "diff_error")) {
            return m;
        }
    }
}

#[test]
fn a_reference_written_chat_loads_replays_forks_and_edits() {
    let (env, fake) = fake_env(json!({}));
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v06_project");
    copy_dir(&fixture, &env.project);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));

    // The active chat of the index is restored, with every message and index intact.
    assert_eq!(b.ok(json!({"action": "chat_active"}))["id"], CHAT);
    let list = b.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"][0]["name"], "Friendlier greeting");
    let chat = b.ok(json!({"action": "chat_get"}));
    let msgs = chat["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 8);
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "assistant",
            "assistant",
            "user",
            "assistant",
            "assistant",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(msgs[3]["usage"]["duration"], 8.5);
    assert_eq!(
        msgs[3]["tool_calls"][0]["function"]["name"], "edit_file",
        "fields bb7 does not use are kept"
    );
    // The section snapshot under the reference's file name is readable.
    let s = b.ok(
        json!({"action": "get_context_file", "path": "README.md", "start_line": 1, "end_line": 2}),
    );
    assert_eq!(s["content"], "# Demo\nA tiny crate.");
    let statuses = b.ok(json!({"action": "get_file_statuses"}))["files"].clone();
    assert_eq!(statuses.as_array().unwrap().len(), 2);

    // Fork at the first user message: the file changed since (V0 → V1), the section
    // only gained its final newline on disk.
    let f = b.ok(json!({"action": "fork_chat", "chat_id": CHAT, "fork_message_index": 2}));
    assert_eq!(f["fork_message_content"], "Make the greeting friendlier");
    let w = f["context_warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0]["path"], "src/lib.rs");
    assert_eq!(w[0]["original_version"], file_id("src/lib.rs", V0));
    let fork = b.ok(json!({"action": "chat_get"}));
    let fork_msgs = fork["messages"].as_array().unwrap();
    assert_eq!(fork_msgs.len(), 3);
    assert_eq!(fork_msgs[..2], msgs[..2]);
    assert_eq!(fork_msgs[2]["role"], "system");

    // Edit the second user message of the original: nothing changed since it.
    b.ok(json!({"action": "chat_select", "id": CHAT}));
    let r = b.ok(json!({"action": "chat_edit", "chat_id": CHAT, "message_index": 6, "content": "Check the README again"}));
    assert_eq!(r["context_warnings"], json!([]));
    let edited = b.ok(json!({"action": "chat_get"}));
    assert_eq!(edited["messages"].as_array().unwrap().len(), 6);
    assert_eq!(edited["draft"], "Check the README again");

    // The next request replays the history, and a reference-shaped edit applies.
    fake.push_sse(response(
        "",
        "Shortened it.",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "src/lib.rs", "file_id": file_id("src/lib.rs", V1),
                              "old_string": "\"hello, friend\"", "new_string": "\"hello\""}]}),
        )],
    ));
    let rid = b.send(json!({"action": "send", "content": "Shorter greeting, please"}));
    let end = stream_end(&mut b, &rid);
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["output_files"], json!(["src/lib.rs"]));
    let body = fake.chat_bodies().pop().unwrap();
    // The chat's model is Anthropic's: its messages may come as parts.
    let user = &prompt_text(&body);
    for needle in [
        "Make the greeting friendlier",
        "I made the greeting friendlier.\n[Assistant modified: src/lib.rs]",
        "<context-event action=\"UserApplyFile\" path=\"src/lib.rs\"",
        "<context-event action=\"UserAddSection\" path=\"README.md\" lines=\"1-2\"",
        "# Demo\nA tiny crate.",
        "\"hello, friend\"",
        "Shorter greeting, please",
    ] {
        assert!(user.contains(needle), "missing {needle:?} in:\n{user}");
    }
    assert!(!user.contains("Does the README still match?"));
    assert_eq!(body["reasoning"]["effort"], "low");
    let out = b.ok(json!({"action": "get_output_file", "path": "src/lib.rs"}));
    assert!(out["content"].as_str().unwrap().contains("\"hello\""));
}
