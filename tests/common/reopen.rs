//! Scenarios that plant or damage a chat's state files and open the chat again in a
//! new process (docs/ARCHITECTURE.md: state files are untrusted input).

use std::path::PathBuf;

use serde_json::{Value, json};

use super::fake_model::FakeModel;
use super::{Bb7, Env};

/// A new process with chat `chat` selected (which reads its state files again).
pub fn reopen(env: &Env, chat: &str) -> Bb7 {
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": chat}));
    b
}

/// A new process on chat `chat` asks a second question (answered "Another."): the
/// body of the request it sent the model.
pub fn next_process_asks(env: &Env, fake: &FakeModel, chat: &str) -> Value {
    let mut b = reopen(env, chat);
    fake.push_sse(super::fake_model::response("", "Another.", vec![]));
    assert_eq!(b.turn("and now?")["type"], "done");
    fake.chat_bodies().last().unwrap().clone()
}

/// The chat's context journal (`journal-*` in its directory); fails the test when
/// there is none.
pub fn journal_file(env: &Env, chat: &str) -> PathBuf {
    std::fs::read_dir(env.chat_dir(chat))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("journal-")
        })
        .expect("a journal holds the adds")
}
