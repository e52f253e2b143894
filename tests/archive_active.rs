//! Archiving the active chat moves on to another chat: the first of the list (pinned,
//! then the newest) that can be opened, or a new one when none is left. `chat_archive`
//! names the chat now active; `bb7 archive` does the same, alone or through the
//! editor that holds the chat (docs/PROTOCOL.md, "Extension: pins and archive").

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use serde_json::{Value, json};

fn listed(b: &mut common::Bb7) -> Vec<String> {
    let r = b.ok(json!({"action": "chat_list"}));
    r["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

fn active(b: &mut common::Bb7) -> Value {
    b.ok(json!({"action": "chat_active"}))["id"].clone()
}

#[test]
fn archiving_the_active_chat_opens_the_newest_other_then_a_new_one() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, first) = env.with_chat();
    let second = b.ok(json!({"action": "chat_new", "name": "second"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let third = b.ok(json!({"action": "chat_new", "name": "third"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Not the active one: nothing else changes.
    let r = b.ok(json!({"action": "chat_archive", "id": second, "archived": true}));
    assert!(r.get("active_id").is_none(), "{r}");
    assert_eq!(active(&mut b), third.as_str());

    // The active one: the newest listed chat takes its place, here and on disk.
    let r = b.ok(json!({"action": "chat_archive", "id": third, "archived": true}));
    assert_eq!(r["active_id"], first.as_str(), "{r}");
    assert!(r.get("active_new").is_none(), "{r}");
    assert_eq!(active(&mut b), first.as_str());
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["id"], first.as_str());
    assert_eq!(listed(&mut b), vec![first.clone()]);
    let index: Value = serde_json::from_str(&env.read(".bb7/chats/index.json")).unwrap();
    assert_eq!(
        index["active_chat_id"],
        first.as_str(),
        "the index names it"
    );

    // The last one listed: a new chat.
    let r = b.ok(json!({"action": "chat_archive", "id": first, "archived": true}));
    assert_eq!(r["active_new"], true, "{r}");
    let new = r["active_id"].as_str().unwrap().to_owned();
    assert!(![&first, &second, &third].contains(&&new), "{r}");
    assert_eq!(active(&mut b), new.as_str());
    assert_eq!(listed(&mut b), vec![new.clone()]);
    // A send goes to it, never to an archived chat.
    let d = b.ok(json!({"action": "save_draft", "draft": "for the new one"}));
    assert_eq!(d["type"], "ok");
    assert_eq!(env.chat_json(&new)["draft"], "for the new one");
}

#[test]
fn archiving_the_active_chat_passes_over_a_chat_another_process_holds() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, first) = env.with_chat();
    let second = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let third = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another process holds the second chat.
    let mut other = env.spawn();
    other.ok(json!({"action": "init", "project_root": env.project}));
    other.ok(json!({"action": "chat_select", "id": second}));
    let r = b.ok(json!({"action": "chat_archive", "id": third, "archived": true}));
    assert_eq!(r["active_id"], first.as_str(), "{r}");
    assert_eq!(active(&mut other), second.as_str());
}

#[test]
fn bb7_archive_of_the_active_chat_names_the_next_alone_and_beside_an_editor() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "x\n")]);
    let first = stdout(&ok(&env, &["new", "first"])).trim().to_owned();
    let second = stdout(&ok(&env, &["new", "second"])).trim().to_owned();
    let err = stderr(&ok(&env, &["archive"]));
    assert!(err.contains(&format!("archived chat {second}")), "{err}");
    assert!(
        err.contains(&format!("the active chat is now {first}")),
        "{err}"
    );
    let chats = stdout(&ok(&env, &["chats"]));
    assert!(
        chats.contains(&first) && !chats.contains(&second),
        "{chats}"
    );

    // Beside an editor that holds the active chat: the editor moves on and is told.
    let third = stdout(&ok(&env, &["new", "third"])).trim().to_owned();
    let mut editor = env.spawn();
    editor.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(active(&mut editor), third.as_str());
    let err = stderr(&ok(&env, &["archive"]));
    assert!(err.contains(&format!("archived chat {third}")), "{err}");
    assert!(
        err.contains(&format!("the active chat is now {first}")),
        "{err}"
    );
    loop {
        let m = editor.recv().expect("a note of the archive");
        if m["type"] == "peer_change" && m["action"] == "chat_archive" {
            break;
        }
    }
    assert_eq!(active(&mut editor), first.as_str());
}
