//! `bb7 chat` with a file name holding spaces: what Tab completion inserts (`my\ notes.txt`)
//! and a quoted name (`"my notes.txt"`) both name the file for `/add` and `/drop`.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use serde_json::json;

#[test]
fn a_name_with_spaces_is_completed_added_and_dropped() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("top.txt", "top\n")]);
    env.write("my notes.txt", "one\n");
    env.write("other.txt", "two\n");
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    // Tab completes the name, escaping its space as a shell would.
    t.type_keys("/add my\t");
    t.expect("notes.txt");
    t.type_keys("\r");
    t.expect("added my notes.txt");
    t.expect("bb7> ");
    t.type_keys("/add 'other.txt'\r");
    t.expect("added other.txt");
    t.expect("bb7> ");
    let status = stdout(&ok(&env, &["status"]));
    assert!(status.contains("my notes.txt"), "{status}");
    t.type_keys("/drop \"my notes.txt\"\r");
    t.expect("bb7> ");
    let status = stdout(&ok(&env, &["status"]));
    assert!(!status.contains("my notes.txt"), "{status}");
    assert!(status.contains("other.txt"), "{status}");
    t.type_keys("/add \"unclosed\r");
    t.expect("unclosed quote");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());
}
