//! A context journal skipped at the chat's read (here a directory planted in its
//! place) is told to the user, not only logged: the chat `init` restores is read by
//! `init`, whose `config_warnings` name the journal, once; the sends that follow do not
//! repeat it (docs/PROTOCOL.md "Notices of a send"; the other ways a chat opens are in
//! tests/hostile_journal_open.rs).

mod common;

use common::fake_env;
use common::fake_model::*;
use common::reopen::journal_file;
use serde_json::{Value, json};

#[test]
fn a_skipped_journal_is_named_when_the_chat_opens_and_not_again_by_the_sends() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "a\n");
    env.write("b.txt", "b\n");
    let (mut b, chat) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    // A full save folds the journal into chat.json; the next add is journaled.
    b.ok(json!({"action": "chat_rename", "id": chat, "name": "journaled"}));
    b.ok(json!({"action": "context_add", "path": "b.txt", "content": "b\n"}));
    b.kill();
    let journal = journal_file(&env, &chat);
    std::fs::remove_file(&journal).unwrap();
    std::fs::create_dir(&journal).unwrap();

    let mut b = env.spawn();
    let init = b.ok(json!({"action": "init", "project_root": env.project}));
    let name = journal.file_name().unwrap().to_string_lossy().into_owned();
    let told: Vec<&str> = init["config_warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains(&name) && w.contains("add those files again"))
        .collect();
    assert_eq!(told.len(), 1, "{init}");
    b.ok(json!({"action": "chat_select", "id": chat}));
    for question in ["first?", "second?"] {
        fake.push_sse(response("", "An answer.", vec![]));
        let stream = b.turn_stream(question);
        assert_eq!(stream.last().unwrap()["type"], "done", "{stream:?}");
        let notices = stream
            .iter()
            .filter(|m| m["type"] == "notice" && m["kind"] == "journal_skipped")
            .count();
        assert_eq!(notices, 0, "told twice: {stream:?}");
    }
}
