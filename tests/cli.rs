//! The one-shot command line (`bb7 init`, `add`, `ask`, `status`, `diff`, `apply`, …).

mod common;

use std::process::{Command, Output, Stdio};

use common::fake_model::*;
use common::{Env, fake_env};
use serde_json::json;

fn bb7(env: &Env, args: &[&str]) -> Output {
    bb7_stdin(env, args, "")
}

fn bb7_stdin(env: &Env, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args(args)
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_shell_session_from_init_to_apply() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    env.write("notes.md", "one\ntwo\nthree\n");

    let o = bb7(&env, &["status"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("run `bb7 init`"));
    assert!(bb7(&env, &["init"]).status.success());
    assert!(env.project.join(".bb7/chats").is_dir());

    let o = bb7(&env, &["add", "src/main.rs", "notes.md:2:3"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("started chat"));
    let o = bb7(&env, &["add", "--readonly", "missing.rs"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("cannot read missing.rs"));

    fake.push_sse(response(
        "Looking at main.",
        "I made it friendlier.",
        vec![(
            "edit_file",
            json!({"path": "src/main.rs",
        "edits": [{"old_string": "\"hi\"", "new_string": "\"hello\""}]}),
        )],
    ));
    let o = bb7(&env, &["ask", "--thinking", "make", "it", "friendlier"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "I made it friendlier.\n");
    let err = text(&o.stderr);
    assert!(err.contains("Looking at main.\n"), "{err}");
    assert!(
        err.contains("Edit src/main.rs: 1 hunk, +1 \u{2212}1"),
        "{err}"
    );
    // What the edit matched: where, and how.
    assert!(err.contains(", exact, 1 line \u{2192} 1 line\n"), "{err}");
    assert!(
        err.contains("bb7: 120 tokens (3 cached), $0.0015\n"),
        "{err}"
    );
    assert!(
        fake.chat_bodies()[0]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("make it friendlier")
    );

    let o = bb7(&env, &["status"]);
    assert_eq!(text(&o.stdout), "M   src/main.rs\nS   notes.md:2-3\n");
    let o = bb7(&env, &["diff"]);
    assert!(text(&o.stdout).contains("-    println!(\"hi\");\n+    println!(\"hello\");\n"));
    let o = bb7(&env, &["apply"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        env.read("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    // Nothing pending is a state, not a failure.
    let o = bb7(&env, &["apply"]);
    assert!(o.status.success());
    assert!(text(&o.stderr).contains("nothing to apply"));

    // The message can come from stdin; a failed edit exits non-zero and writes nothing.
    fake.push_sse(response(
        "",
        "",
        vec![(
            "edit_file",
            json!({"path": "src/main.rs", "edits": [{"old_string": "nope", "new_string": "x"}]}),
        )],
    ));
    let o = bb7_stdin(&env, &["ask"], "from stdin\n");
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("could not be applied"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        fake.chat_bodies()[1]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("from stdin")
    );

    let o = bb7(&env, &["chats"]);
    assert!(text(&o.stdout).starts_with("* "), "{}", text(&o.stdout));
    let id = text(&bb7(&env, &["new", "second"]).stdout)
        .trim()
        .to_owned();
    assert_eq!(id.len(), 10);
    let o = bb7(&env, &["--chat", "0000000000", "status"]);
    assert!(text(&o.stderr).contains("Chat not found"));
}

#[test]
fn the_cli_respects_a_chat_open_in_an_editor() {
    let (env, _fake) = fake_env(json!({}));
    env.write("a.txt", "a\n");
    let (mut editor, id) = env.with_chat();
    editor.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    // The editor serves the command itself, through its holder socket: the chat is
    // never opened twice.
    let o = bb7(&env, &["--chat", &id, "status"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("a.txt"), "{}", text(&o.stdout));
    editor.ok(json!({"action": "save_draft", "draft": "still mine"}));
    assert_eq!(env.chat_json(&id)["draft"], "still mine");
}
