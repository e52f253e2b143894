//! What `chat.json` holds and who writes it: it is current a moment after context
//! adds stop (docs/ARCHITECTURE.md, "Durability" 10), `chat_force_unlock` takes a chat
//! from a live holder as the reference does, and a process that lost its chat writes
//! nothing to it again (invariant 7).

mod common;

use std::time::Duration;

use common::{Bb7, Env};
use serde_json::{Value, json};

/// The paths `chat.json` lists in its context (journaled adds not included).
fn listed(env: &Env, id: &str) -> Vec<String> {
    let bytes = std::fs::read(env.chat_dir(id).join("chat.json")).unwrap();
    let chat: Value = serde_json::from_slice(&bytes).unwrap();
    chat["context_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect()
}

/// Polls `chat.json` until it lists `path`; a hang guard, not a speed bound.
fn wait_listed(env: &Env, id: &str, path: &str) {
    for _ in 0..2400 {
        if listed(env, id).iter().any(|p| p == path) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("chat.json never listed {path}: {:?}", listed(env, id));
}

fn signal(sig: &str, pid: u32) {
    let status = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn chat_json_lists_added_files_once_adds_pause() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    for i in 0..20 {
        env.add(&mut b, &format!("f{i}.txt"), &format!("file {i}\n"));
    }
    // No release, no shutdown: the running process makes chat.json current by itself.
    wait_listed(&env, &id, "f19.txt");
    assert_eq!(listed(&env, &id).len(), 20);
    // The chat reads the same from chat.json alone (the journal is folded in).
    let chat: Value =
        serde_json::from_slice(&std::fs::read(env.chat_dir(&id).join("chat.json")).unwrap())
            .unwrap();
    assert!(
        chat.get("context_journal").is_none(),
        "{}",
        chat["context_journal"]
    );
    env.add(&mut b, "late.txt", "late\n");
    wait_listed(&env, &id, "late.txt");
    assert!(b.close().success());
}

#[test]
fn force_unlock_takes_a_live_holders_chat_and_the_old_holder_writes_nothing_more() {
    let env = Env::new();
    let (mut old, id) = env.with_chat();
    env.add(&mut old, "a.txt", "a\n");
    // The old holder is stopped before its journal is folded: its add is only journaled.
    signal("-STOP", old.child.id());

    let mut new = env.spawn();
    new.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(
        new.err(json!({"action": "chat_select", "id": id}))["code"],
        "locked"
    );
    new.ok(json!({"action": "chat_force_unlock", "id": id}));
    new.ok(json!({"action": "chat_select", "id": id}));
    env.add(&mut new, "b.txt", "b\n");
    wait_listed(&env, &id, "b.txt");
    let before = std::fs::read(env.chat_dir(&id).join("chat.json")).unwrap();

    // The old holder goes on: its fold comes due, its next save is refused, and at its
    // exit it writes nothing to the chat.
    signal("-CONT", old.child.id());
    let e = old.err(json!({"action": "context_add", "path": "c.txt", "content": "c\n"}));
    assert_eq!(e["code"], "locked", "{e}");
    assert!(e["message"].as_str().unwrap().contains("taken over"), "{e}");
    assert!(old.close().success());
    assert_eq!(
        std::fs::read(env.chat_dir(&id).join("chat.json")).unwrap(),
        before,
        "the process that lost the chat rewrote chat.json"
    );
    let list = new.ok(json!({"action": "context_list"}));
    let paths: Vec<_> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].clone())
        .collect();
    assert_eq!(paths, [json!("a.txt"), json!("b.txt")]);
    assert!(new.close().success());
    assert_eq!(listed(&env, &id), ["a.txt", "b.txt"]);
}

#[test]
fn force_unlock_takes_a_chat_whose_holder_answers() {
    let env = Env::new();
    let (_holder, id) = env.with_chat();
    let mut b = Bb7::spawn(&env.home, &env.project, &[]);
    b.ok(json!({"action": "init", "project_root": env.project}));
    // As the reference plugin's "Force unlock chat?" does: no flag.
    b.ok(json!({"action": "chat_force_unlock", "id": id}));
    b.ok(json!({"action": "chat_select", "id": id}));
}

#[test]
fn a_held_chat_viewed_read_only_can_be_forked() {
    let (env, fake) = common::fake_env(json!({}));
    let (mut holder, id) = env.with_chat();
    env.add(&mut holder, "a.txt", "alpha\n");
    fake.push_sse(common::fake_model::response("", "Hello.", vec![]));
    assert_eq!(holder.turn("first question")["type"], "done");
    fake.push_sse(common::fake_model::response("", "Again.", vec![]));
    assert_eq!(holder.turn("second question")["type"], "done");
    let messages = holder.ok(json!({"action": "chat_get"}))["messages"].clone();
    let second = messages
        .as_array()
        .unwrap()
        .iter()
        .rposition(|m| m["role"] == "user")
        .unwrap();

    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(
        b.err(json!({"action": "chat_select", "id": id}))["code"],
        "locked"
    );
    b.ok(json!({"action": "chat_select", "id": id, "read_only": true}));
    // The view reads; it does not write.
    let e = b.err(json!({"action": "context_add", "path": "b.txt", "content": "b\n"}));
    assert_eq!(e["code"], "locked", "{e}");
    // A branch at the second question: a new chat of this process, with the context.
    let f = b.ok(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": second}));
    assert_eq!(f["fork_message_content"], "second question", "{f}");
    let new_id = f["new_chat_id"].as_str().unwrap().to_owned();
    assert_ne!(new_id, id);
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"][0]["path"], "a.txt", "{list}");
    // The fork is this process's: it writes there.
    env.add(&mut b, "b.txt", "b\n");
    // The held chat is untouched and still its holder's.
    env.add(&mut holder, "c.txt", "c\n");
    b.ok(json!({"action": "chat_select", "id": id, "read_only": true}));
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"].as_array().unwrap().len(), 2, "{list}");
    // A copy of its context into a new chat works from the view too.
    let c = b.ok(json!({"action": "chat_new_with_context", "source_chat_id": id}));
    assert!(c["id"].is_string(), "{c}");
}
