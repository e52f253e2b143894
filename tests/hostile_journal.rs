//! The context journal is untrusted like every state file: a repeated add and a path
//! that leaves the project are dropped, and a bad line ends the replay there, never
//! the chat.

mod common;

use common::{Bb7, Env};
use serde_json::{Value, json};

/// A chat with `files` (path, content) written and added, its process killed so that
/// the journal is not folded into chat.json: the chat's id and its journal file.
fn killed_with_journal(env: &Env, files: &[(&str, &str)]) -> (String, std::path::PathBuf) {
    for (path, content) in files {
        env.write(path, content);
    }
    let (mut b, chat) = env.with_chat();
    for (path, content) in files {
        b.ok(json!({"action": "context_add", "path": path, "content": content}));
    }
    b.kill();
    let journal = common::reopen::journal_file(env, &chat);
    (chat, journal)
}

/// A new process with `chat` selected, which replays its journal.
fn reopen(env: &Env, chat: &str) -> Bb7 {
    common::reopen::reopen(env, chat)
}

/// The paths `context_list` gives, in order.
fn context_paths(b: &mut Bb7) -> Vec<String> {
    common::paths_of(&b.ok(json!({"action": "context_list"}))["files"])
}

#[test]
fn planted_journal_lines_are_dropped_and_a_bad_line_ends_only_the_replay() {
    let env = Env::new();
    env.write("b.txt", "b\n");
    let (chat, journal) = killed_with_journal(&env, &[("a.txt", "a\n")]);
    let text = std::fs::read_to_string(&journal).unwrap();
    let line = text.lines().next().unwrap().to_owned();
    let with_path = |p: &str| {
        let mut v: Value = serde_json::from_str(&line).unwrap();
        v["entry"]["path"] = json!(p);
        serde_json::to_string(&v).unwrap()
    };
    let planted = format!(
        "{text}{line}\n{}\n{}\n{{not json\n{}\n",
        with_path("../outside.txt"),
        with_path("/etc/passwd"),
        with_path("b.txt")
    );
    std::fs::write(&journal, planted).unwrap();

    let mut b = reopen(&env, &chat);
    assert_eq!(context_paths(&mut b), ["a.txt"]);
}

/// A journal far over its size cap (a sparse file: what is not written reads as zero
/// bytes) does not refuse the chat: the adds before the damage are kept, nothing reads
/// the file whole, and the next add starts a new journal in its place.
#[test]
fn a_journal_over_its_size_cap_stops_only_the_replay() {
    let env = Env::new();
    env.write("c.txt", "c\n");
    let (chat, journal) = killed_with_journal(&env, &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    // 4 GiB: over the 128 MiB cap many times, and more than a test machine would
    // lend a process that read it whole.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&journal)
        .unwrap();
    f.set_len(4 << 30).unwrap();
    drop(f);

    let mut b = reopen(&env, &chat);
    assert_eq!(context_paths(&mut b), ["a.txt", "b.txt"]);
    b.ok(json!({"action": "context_add", "path": "c.txt", "content": "c\n"}));
    assert_eq!(context_paths(&mut b), ["a.txt", "b.txt", "c.txt"]);
    assert!(!journal.exists(), "the oversized journal is still there");
    assert_eq!(b.close().code(), Some(0));
    let mut b = reopen(&env, &chat);
    assert_eq!(context_paths(&mut b), ["a.txt", "b.txt", "c.txt"]);
}
