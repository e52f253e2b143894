//! Hostile ground, planted state: every `.bb7/` and `~/.bb7/` file bb7 reads may be a
//! named pipe, a symlink to a device or a huge file (a cloned repository, a prank).
//! bb7 keeps serving and the project stays usable: a file bb7 can rebuild is moved
//! aside with a warning, a chat is refused as damaged and never moved (invariant 13 in
//! docs/ARCHITECTURE.md, "State files").

mod common;

use std::path::{Path, PathBuf};

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::json;

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn symlink_to(path: &Path, target: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// A project with one chat that has a file in context, a pin and a finished turn, so
/// every state file exists; returns the chat id.
fn lived_in(env: &Env, fake: &FakeModel) -> String {
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.txt", "one\n");
    b.ok(json!({"action": "chat_pin", "id": id, "pinned": true}));
    let other = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    b.ok(json!({"action": "chat_archive", "id": other, "archived": true}));
    b.ok(json!({"action": "chat_select", "id": id}));
    fake.push_sse(response("", "first answer", vec![]));
    assert_eq!(b.turn("hello")["type"], "done");
    assert_eq!(b.close().code(), Some(0));
    id
}

/// The project works: requests are answered, the chat opens, takes a file and a turn,
/// and pins change.
fn usable(b: &mut Bb7, env: &Env, fake: &FakeModel, id: &str) {
    b.ok(json!({"action": "ping"}));
    let list = b.ok(json!({"action": "chat_list", "include_archived": true}));
    assert!(list["chats"].as_array().unwrap().len() >= 2, "{list}");
    b.ok(json!({"action": "chat_select", "id": id}));
    env.add(b, "b.txt", "two\n");
    b.ok(json!({"action": "get_file_statuses"}));
    b.ok(json!({"action": "chat_pin", "id": id, "pinned": true}));
    b.ok(json!({"action": "ping"}));
    fake.push_sse(response("", "second answer", vec![]));
    assert_eq!(b.turn("again")["type"], "done");
    b.ok(json!({"action": "ping"}));
}

/// The files set aside beside `path` (`{name}.damaged-…`).
fn set_aside(path: &Path) -> Vec<PathBuf> {
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&format!("{name}.damaged-")))
        })
        .map(|e| e.path())
        .collect()
}

#[test]
fn planted_named_pipes_are_set_aside_and_the_project_stays_usable() {
    let (env, fake) = fake_env(json!({}));
    let id = lived_in(&env, &fake);
    let state = env.project.join(".bb7");
    let planted = [
        state.join("chats/index.json"),
        state.join("cache/files.json"),
        state.join("pinned_chats.json"),
        state.join("archived_chats.json"),
        env.chat_dir(&id).join("prompt.json"),
        env.chat_dir(&id).join("lock"),
        env.home.join(".bb7/state.json"),
    ];
    for p in &planted {
        mkfifo(p);
    }
    let mut b = env.spawn();
    let opened = b.ok(json!({"action": "init", "project_root": env.project}));
    let warnings = opened["config_warnings"].to_string();
    assert!(warnings.contains("damaged"), "{opened}");
    usable(&mut b, &env, &fake, &id);
    assert_eq!(b.close().code(), Some(0));
    for p in &planted {
        assert_eq!(set_aside(p).len(), 1, "{} was not set aside", p.display());
        let now = p.symlink_metadata();
        assert!(
            now.is_err() || now.unwrap().is_file(),
            "{} is still a pipe",
            p.display()
        );
    }
}

#[test]
fn device_symlinks_and_huge_files_are_set_aside_unread() {
    let (env, fake) = fake_env(json!({}));
    let id = lived_in(&env, &fake);
    let state = env.project.join(".bb7");
    let zero = [
        state.join("cache/files.json"),
        state.join("chats/index.json"),
        state.join("pinned_chats.json"),
        env.home.join(".bb7/models.json"),
    ];
    for p in &zero {
        symlink_to(p, "/dev/zero");
    }
    // 1 GiB without its bytes: a sparse file costs nothing to plant.
    let ledger = env.chat_dir(&id).join("prompt.json");
    std::fs::File::create(&ledger)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    usable(&mut b, &env, &fake, &id);
    assert_eq!(b.close().code(), Some(0));
    for p in zero.iter().take(3).chain([&ledger]) {
        assert_eq!(set_aside(p).len(), 1, "{} was not set aside", p.display());
    }
    assert!(
        std::fs::metadata(&ledger).map(|m| m.len()).unwrap_or(0) < 1 << 20,
        "the ledger was written anew"
    );
}

#[test]
fn a_damaged_chat_is_refused_never_moved() {
    let (env, fake) = fake_env(json!({}));
    let id = lived_in(&env, &fake);
    let chat = env.chat_dir(&id).join("chat.json");
    let saved = std::fs::read(&chat).unwrap();
    mkfifo(&chat);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let r = b.err(json!({"action": "chat_select", "id": id}));
    assert!(r["message"].as_str().unwrap().contains("damaged"), "{r}");
    b.ok(json!({"action": "ping"}));
    b.ok(json!({"action": "chat_list"}));
    b.ok(json!({"action": "search_chats", "query": "hello"}));
    b.ok(json!({"action": "chat_new"}));
    assert_eq!(b.close().code(), Some(0));
    assert!(set_aside(&chat).is_empty());
    // Put back by hand, the chat opens again.
    std::fs::remove_file(&chat).unwrap();
    std::fs::write(&chat, saved).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    assert_eq!(b.close().code(), Some(0));
}
