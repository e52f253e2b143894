//! Attachments (`context_attach`): each kind stored, listed, snapshotted with the
//! message, forked, removed and rendered in the request; capped when large; counted
//! in the estimate.

mod common;

use common::fake_env;
use common::fake_model::{self, prompt_text, text};
use serde_json::{Value, json};

const KINDS: [&str; 6] = [
    "diagnostics",
    "quickfix",
    "git_diff",
    "command_output",
    "terminal",
    "text",
];

fn answer(fake: &fake_model::FakeModel) {
    fake.push_sse(vec![
        text("ok"),
        fake_model::finish("stop"),
        fake_model::done(),
    ]);
}

fn user_text(body: &Value) -> String {
    let mut body = body.clone();
    body["messages"].as_array_mut().unwrap().remove(0);
    prompt_text(&body)
}

#[test]
fn every_kind_is_stored_listed_and_rendered_read_only_in_the_context_block() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "src/main.rs", "fn main() {}\n");
    for kind in KINDS {
        let r = b.ok(
            json!({"action": "context_attach", "kind": kind, "name": "item",
                            "content": format!("{kind} text\r\nsecond line\n")}),
        );
        assert_eq!(r["type"], "attached", "{r}");
        assert_eq!(r["path"], format!("{kind}:item"));
        assert_eq!(r["truncated"], false);
    }
    b.ok(json!({"action": "context_attach", "kind": "command_output", "name": "cargo test",
                "content": "test a ... FAILED\n", "meta": {"command": "cargo test", "exit_status": 101, "list": [1]}}));

    let statuses = b.ok(json!({"action": "get_file_statuses"}));
    let rows = statuses["files"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| r["path"] == "command_output:cargo test")
        .unwrap();
    assert_eq!(row["kind"], "command_output");
    assert_eq!(row["readonly"], true);
    assert_eq!(
        row["out_of_sync"], false,
        "an attachment has no file to drift from"
    );
    assert_eq!(row["context_content"], "test a ... FAILED\n");
    assert!(row["tokens"].as_u64().unwrap() > 0);
    let main = rows.iter().find(|r| r["path"] == "src/main.rs").unwrap();
    assert!(main.get("kind").is_none());
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"].as_array().unwrap().len(), 8);
    let got = b.ok(json!({"action": "get_context_file", "path": "diagnostics:item"}));
    assert_eq!(got["content"], "diagnostics text\nsecond line\n");

    answer(&fake);
    b.turn("why does it fail?");
    let user = user_text(&fake.chat_bodies()[0]);
    let context_end = user.find("</context>").unwrap();
    for kind in KINDS {
        let open = format!("<attachment kind=\"{kind}\" name=\"item\" file_id=\"");
        let at = user.find(&open).unwrap_or_else(|| panic!("{kind}: {user}"));
        assert!(at < context_end, "attachments sit in the context block");
        assert!(user[at..].contains("mode=\"read-only\" fence=\""));
        assert!(user.contains(&format!(
            "\">\n{kind} text\nsecond line\n</attachment fence=\""
        )));
    }
    assert!(user.contains(
        "<attachment kind=\"command_output\" name=\"cargo test\" command=\"cargo test\" exit_status=\"101\" file_id=\""
    ), "{user}");
    assert!(
        user.contains("Attachments (read-only): command_output:cargo test ("),
        "{user}"
    );
    // Ordered like files: by path, in the context block.
    let a = user
        .find("kind=\"command_output\" name=\"cargo test\"")
        .unwrap();
    let d = user.find("kind=\"diagnostics\"").unwrap();
    let f = user.find("path=\"src/main.rs\"").unwrap();
    assert!(a < d && d < f, "{user}");

    // The user message records the attachments in its context snapshot.
    let chat = env.chat_json(&id);
    let user_msg = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    let snap = user_msg["context_snapshot"].as_array().unwrap();
    assert!(
        snap.iter()
            .any(|s| s["path"] == "git_diff:item" && s["kind"] == "git_diff"),
        "{snap:?}"
    );
}

#[test]
fn attachments_are_removed_replaced_forked_and_refused_when_bad() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let e =
        b.err(json!({"action": "context_attach", "kind": "photo", "name": "x", "content": "y"}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Unknown attachment kind: photo (expected diagnostics, quickfix"),
        "{e}"
    );
    let e =
        b.err(json!({"action": "context_attach", "kind": "text", "name": "a\nb", "content": "y"}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("control characters"),
        "{e}"
    );
    b.err(json!({"action": "context_attach", "kind": "text", "content": "y"}));

    let first = b.ok(
        json!({"action": "context_attach", "kind": "text", "name": "notes", "content": "one\n"}),
    );
    b.ok(json!({"action": "context_attach", "kind": "terminal", "name": "shell", "content": "$ make\n"}));
    answer(&fake);
    b.turn("first");
    // Attaching the same kind and name again replaces the text.
    let second = b.ok(
        json!({"action": "context_attach", "kind": "text", "name": "notes", "content": "two\n"}),
    );
    assert_ne!(first["version"], second["version"]);
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"].as_array().unwrap().len(), 2);
    answer(&fake);
    b.turn("second");
    let user = user_text(&fake.chat_bodies()[1]);
    assert!(user.contains("\">\ntwo\n</attachment fence=\""), "{user}");

    // A fork at the first message brings its attachments back.
    let chat = env.chat_json(&id);
    let first_user = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m["role"] == "user")
        .unwrap();
    let f = b.ok(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": first_user}));
    let warnings = f["context_warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["path"], "text:notes");
    assert_eq!(warnings[0]["issue"], "modified");
    let list = b.ok(json!({"action": "context_list"}));
    let files = list["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files
            .iter()
            .all(|f| f["readonly"] == true && f["kind"].is_string())
    );
    let shell = b.ok(json!({"action": "get_context_file", "path": "terminal:shell"}));
    assert_eq!(shell["content"], "$ make\n");

    // Removed by its path, like a file; its snapshot goes with it.
    b.ok(json!({"action": "context_remove", "path": "terminal:shell"}));
    let e = b.err(json!({"action": "context_remove", "path": "terminal:shell"}));
    assert_eq!(e["message"], "File not found");
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"].as_array().unwrap().len(), 1);
    let active = b.ok(json!({"action": "chat_active"}));
    let dir = env
        .chat_dir(active["id"].as_str().unwrap())
        .join("context/_attachments");
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 1);
}

#[test]
fn a_large_attachment_is_capped_with_a_note_and_counted_in_the_estimate() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    let before = b.ok(json!({"action": "estimate_tokens", "input_text": ""}));
    let log: String = (0..20_000)
        .map(|i| format!("line {i}: compiling crate number {i}\n"))
        .collect();
    let r = b.ok(json!({"action": "context_attach", "kind": "command_output", "name": "cargo build", "content": log}));
    assert_eq!(r["truncated"], true);
    assert_eq!(r["bytes"], log.len());
    let kept = b.ok(json!({"action": "get_context_file", "path": "command_output:cargo build"}));
    let kept = kept["content"].as_str().unwrap();
    assert!(kept.len() < 70_000, "{}", kept.len());
    assert!(kept.starts_with("line 0: "));
    assert!(kept.ends_with("line 19999: compiling crate number 19999\n"));
    assert!(
        kept.contains("lines) left out here; attachments are cut to 65536 bytes]"),
        "note missing"
    );
    let after = b.ok(json!({"action": "estimate_tokens", "input_text": ""}));
    let grown =
        after["context_files"].as_u64().unwrap() - before["context_files"].as_u64().unwrap();
    assert!(grown > 10_000, "{before} {after}");
    let files = after["files"].as_array().unwrap();
    assert_eq!(files[0]["path"], "command_output:cargo build");
}
