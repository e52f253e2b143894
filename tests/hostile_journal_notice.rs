//! A context journal skipped at the chat's read (here a directory planted in its
//! place) is told to the user, not only logged: the chat's next send carries a
//! `journal_skipped` notice naming it, once (docs/PROTOCOL.md "Notices of a send").

mod common;

use common::fake_env;
use common::fake_model::*;
use common::reopen::{journal_file, reopen};
use serde_json::{Value, json};

#[test]
fn a_skipped_journal_is_named_in_a_notice_on_the_next_send_once() {
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

    let mut b = reopen(&env, &chat);
    for (question, warned) in [("first?", true), ("second?", false)] {
        fake.push_sse(response("", "An answer.", vec![]));
        let stream = b.turn_stream(question);
        assert_eq!(stream.last().unwrap()["type"], "done", "{stream:?}");
        let notices: Vec<&Value> = stream
            .iter()
            .filter(|m| m["type"] == "notice" && m["kind"] == "journal_skipped")
            .collect();
        assert_eq!(notices.len(), usize::from(warned), "{stream:?}");
        if let Some(n) = notices.first() {
            let m = n["message"].as_str().unwrap();
            let name = journal.file_name().unwrap().to_string_lossy();
            assert!(
                m.contains(name.as_ref()) && m.contains("add those files again"),
                "{m}"
            );
            assert_eq!(n["chat_id"], chat.as_str());
        }
    }
}
