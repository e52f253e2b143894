//! A context journal that is not what `chat.json` promises — a name that fails the
//! format check, a named pipe, a directory, a symlink to a device, a device node — is
//! skipped with a warning in the log (and a notice on the next send,
//! `tests/hostile_journal_notice.rs`): the chat opens (never blocking on a FIFO) with
//! what `chat.json` holds, and the next add starts a new journal in its place.

mod common;

use common::{Bb7, Env};
use serde_json::json;
use std::path::PathBuf;

/// A chat whose `chat.json` names a journal holding the add of `b.txt` (`a.txt` is in
/// `chat.json` itself): the chat id and the journal's path.
fn journaled_chat(env: &Env) -> (String, PathBuf) {
    env.write("a.txt", "a\n");
    env.write("b.txt", "b\n");
    env.write("c.txt", "c\n");
    let (mut b, chat) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    // A full save folds the journal: `a.txt` is then in chat.json.
    b.ok(json!({"action": "chat_rename", "id": chat, "name": "journaled"}));
    b.ok(json!({"action": "context_add", "path": "b.txt", "content": "b\n"}));
    // Killed: the last add stays in the journal.
    b.kill();
    let journal = common::reopen::journal_file(env, &chat);
    (chat, journal)
}

fn paths(b: &mut Bb7) -> Vec<String> {
    common::paths_of(&b.ok(json!({"action": "context_list"}))["files"])
}

/// Opens `chat` in a new process, checks it holds `held`, adds `c.txt` and checks the
/// add survives a restart.
fn opens_and_takes_adds(env: &Env, chat: &str, held: &[&str]) {
    let mut b = common::reopen::reopen(env, chat);
    assert_eq!(paths(&mut b), held);
    b.ok(json!({"action": "context_add", "path": "c.txt", "content": "c\n"}));
    assert_eq!(b.close().code(), Some(0));
    let mut b = common::reopen::reopen(env, chat);
    let mut want: Vec<&str> = held.to_vec();
    want.push("c.txt");
    assert_eq!(paths(&mut b), want);
    // The chat list sees it too.
    let list = b.ok(json!({"action": "chat_list"}));
    assert!(list.to_string().contains(chat), "{list}");
}

#[test]
fn a_journal_name_that_fails_the_format_check_is_skipped() {
    for bad in [
        "../../escape",
        "not-hex",
        "",
        "0123456789abcdef0123456789abcdef0",
    ] {
        let env = Env::new();
        let (chat, journal) = journaled_chat(&env);
        let generation = journal
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_start_matches("journal-")
            .trim_end_matches(".jsonl")
            .to_owned();
        let chat_json = env.chat_dir(&chat).join("chat.json");
        let text = std::fs::read_to_string(&chat_json).unwrap();
        let planted = text.replace(
            &format!("\"context_journal\":\"{generation}\""),
            &format!("\"context_journal\":{}", json!(bad)),
        );
        assert_ne!(text, planted, "chat.json names no journal: {text}");
        std::fs::write(&chat_json, planted).unwrap();
        opens_and_takes_adds(&env, &chat, &["a.txt"]);
    }
}

#[test]
fn a_journal_that_is_a_fifo_a_directory_or_a_device_is_skipped_without_blocking() {
    type Plant = fn(&std::path::Path);
    let mut kinds: Vec<(&str, Plant)> = vec![
        ("fifo", |p| {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }),
        ("directory", |p| std::fs::create_dir(p).unwrap()),
        ("symlink to /dev/zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
    ];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        kinds.push(("character device", |p| {
            let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
            // /dev/zero's numbers (1, 5): an endless read if bb7 ever read it.
            // SAFETY: a valid NUL-terminated path.
            let made =
                unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 5)) };
            assert_eq!(made, 0, "{}", std::io::Error::last_os_error());
        }));
    }
    for (what, plant) in kinds {
        let env = Env::new();
        let (chat, journal) = journaled_chat(&env);
        std::fs::remove_file(&journal).unwrap();
        plant(&journal);
        eprintln!("journal as a {what}");
        opens_and_takes_adds(&env, &chat, &["a.txt"]);
        // The next add's new journal took its place.
        let kept = journal.symlink_metadata();
        assert!(
            kept.is_err() || what == "directory",
            "the planted {what} is still there"
        );
    }
}
