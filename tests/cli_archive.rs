//! Archiving a chat from the terminal: `bb7 archive [CHAT]`, `bb7 unarchive CHAT`, and
//! `/archive` in `bb7 chat` (the protocol's `chat_archive`). An archived chat leaves
//! `bb7 chats` and comes back whole.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use serde_json::json;

fn new_chat(env: &common::Env, name: &str) -> String {
    stdout(&ok(env, &["new", name])).trim().to_owned()
}

#[test]
fn archive_and_unarchive_from_the_shell() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "x\n")]);
    let first = new_chat(&env, "first");
    let second = new_chat(&env, "second");
    // By name; the chat's folder stays.
    let err = stderr(&ok(&env, &["archive", "first"]));
    assert!(err.contains(&format!("archived chat {first}")), "{err}");
    assert!(err.contains(&format!("bb7 unarchive {first}")), "{err}");
    let chats = stdout(&ok(&env, &["chats"]));
    assert!(!chats.contains(&first), "{chats}");
    assert!(chats.contains(&second), "{chats}");
    assert!(env.project.join(".bb7/chats").join(&first).is_dir());
    // An archived chat is found by `unarchive` by its name too.
    let err = stderr(&ok(&env, &["unarchive", "first"]));
    assert!(
        err.contains(&format!("chat {first} is listed again")),
        "{err}"
    );
    let chats = stdout(&ok(&env, &["chats"]));
    assert!(chats.contains(&first), "{chats}");
    // Without an argument: the active chat (the last made).
    ok(&env, &["archive"]);
    let chats = stdout(&ok(&env, &["chats"]));
    assert!(!chats.contains(&second), "{chats}");
    let err = fails(&env, &["unarchive", "nosuch"]);
    assert!(err.contains("no chat nosuch"), "{err}");
}

#[test]
fn slash_archive_in_bb7_chat() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "x\n")]);
    let old = new_chat(&env, "old one");
    new_chat(&env, "current");
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("/archive old one\r");
    t.expect(&format!("archived chat {old}"));
    t.expect(&format!("/unarchive {old}"));
    t.expect("bb7> ");
    t.type_keys("/chats\r");
    let listing = t.expect("current");
    assert!(!listing.contains(&old), "{listing}");
    t.expect("bb7> ");
    t.type_keys(&format!("/unarchive {old}\r"));
    t.expect("is listed again");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());
    assert!(stdout(&ok(&env, &["chats"])).contains(&old));
}
