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

/// A chat with `a.txt` and `b.txt` added (journaled: a full save first folds the
/// chat, then two adds), its process killed so the journal stays: the chat's id and
/// its journal file.
pub fn chat_with_journal(env: &Env) -> (String, PathBuf) {
    env.write("a.txt", "a\n");
    env.write("b.txt", "b\n");
    env.write("c.txt", "c\n");
    let (mut b, chat) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    b.ok(json!({"action": "chat_rename", "id": chat, "name": "journaled"}));
    b.ok(json!({"action": "context_add", "path": "b.txt", "content": "b\n"}));
    b.ok(json!({"action": "context_add", "path": "c.txt", "content": "c\n"}));
    b.kill();
    let journal = journal_file(env, &chat);
    (chat, journal)
}

/// The journal's first record kept, then a line that is no record, then the rest.
pub fn plant_bad_second_line(journal: &std::path::Path) {
    let text = std::fs::read_to_string(journal).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    std::fs::write(journal, format!("{first}\n{{not a record\n{rest}")).unwrap();
}

/// Replaces the text of `file`'s base entry in chat `chat`'s `prompt.json` (which must
/// hold `real`) with `forged`, its id made to match, as a planted ledger would.
/// Returns the forged text's file id.
pub fn forge_ledger_entry(env: &Env, chat: &str, file: &str, real: &str, forged: &str) -> String {
    let forged_id = super::file_id(file, forged);
    let path = env.chat_dir(chat).join("prompt.json");
    let mut ledger: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let entry = ledger["base"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["path"] == file)
        .unwrap_or_else(|| panic!("the ledger shows {file}"));
    assert_eq!(entry["text"], real);
    entry["text"] = json!(forged);
    entry["file_id"] = json!(forged_id);
    std::fs::write(&path, serde_json::to_vec(&ledger).unwrap()).unwrap();
    forged_id
}

/// The project's index names no active chat, so `init` restores none and the chat is
/// first read by `chat_select`.
pub fn forget_active(env: &Env) {
    let path = env.project.join(".bb7/chats/index.json");
    let mut index: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    index["active_chat_id"] = Value::Null;
    std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
}
