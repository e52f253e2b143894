//! `bb7 ask --tools off|ask|auto`: tool steps on stderr, reads approved on the terminal
//! (refused without one), clarifying questions asked on the terminal, and the mode kept
//! on the chat.

mod cli_support;
mod common;

use std::io::Write;
use std::process::Stdio;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

/// Tool results the model got in a request, in order.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn reads(path: &str) -> Vec<Step> {
    response("", "", vec![("read_file", json!({"path": path}))])
}

#[test]
fn auto_reads_without_asking_and_is_kept_on_the_chat() {
    let (env, fake) = fake_env(json!({}));
    env.write("secret.txt", "the answer is 42\n");
    ok(&env, &["init"]);
    let id = stdout(&ok(&env, &["new"])).trim().to_owned();
    fake.push_sse(reads("secret.txt"));
    fake.push_sse(response("", "It is 42.", vec![]));
    let o = ok(&env, &["ask", "--tools", "auto", "what is the answer?"]);
    assert_eq!(stdout(&o), "It is 42.\n");
    let err = stderr(&o);
    assert!(
        err.contains("bb7: tool completed: Read secret.txt"),
        "{err}"
    );
    let bodies = fake.chat_bodies();
    assert!(tool_results(&bodies[1])[0].contains("the answer is 42"));
    assert_eq!(env.chat_json(&id)["tools"], "auto");

    // Kept for the next ask; `--tools off` turns it off again.
    fake.push_sse(reads("secret.txt"));
    fake.push_sse(response("", "Still 42.", vec![]));
    assert_eq!(stdout(&ok(&env, &["ask", "again?"])), "Still 42.\n");
    fake.push_sse(response("", "No tools.", vec![]));
    ok(&env, &["ask", "--tools", "off", "and now?"]);
    assert!(
        fake.chat_bodies()[4]
            .get("tools")
            .is_none_or(|t| { !t.to_string().contains("read_file") })
    );
    let tools = env.chat_json(&id)["tools"].clone();
    assert!(tools.is_null() || tools == "off", "{tools}");
}

#[test]
fn ask_mode_refuses_when_stdin_is_not_a_terminal() {
    let (env, fake) = fake_env(json!({}));
    env.write("secret.txt", "hidden\n");
    ok(&env, &["init"]);
    fake.push_sse(reads("secret.txt"));
    fake.push_sse(response("", "I could not read it.", vec![]));
    let o = ok(&env, &["ask", "--tools", "ask", "read the secret"]);
    assert_eq!(stdout(&o), "I could not read it.\n");
    let err = stderr(&o);
    assert!(err.contains("refused: Read secret.txt"), "{err}");
    assert!(err.contains("not a terminal"), "{err}");
    let results = tool_results(&fake.chat_bodies()[1]);
    assert!(results[0].contains("declined"), "{results:?}");
    assert!(!results[0].contains("hidden"));
}

#[test]
fn ask_mode_prompts_on_the_terminal_and_clarifications_are_asked_there() {
    let (env, fake) = fake_env(json!({}));
    env.write("secret.txt", "hidden\n");
    env.write("other.txt", "other\n");
    ok(&env, &["init"]);
    fake.push_sse(reads("secret.txt"));
    fake.push_sse(reads("other.txt"));
    fake.push_sse(response(
        "",
        "",
        vec![(
            "clarify_user",
            json!({"question": "Which one did you mean?"}),
        )],
    ));
    fake.push_sse(response("", "Thanks.", vec![]));
    // The questions are asked where they are seen: stdin and stderr on the terminal.
    let (master, slave) = pty();
    let mut term = std::fs::File::from(master);
    let screen = read_screen(&term);
    let mut child = command(
        &env,
        &env.project,
        &["ask", "--tools", "ask", "look around"],
    )
    .stdin(Stdio::from(slave.try_clone().unwrap()))
    .stderr(Stdio::from(slave))
    .spawn()
    .unwrap();
    // Typed ahead: yes to the first read, no to the second, then the answer.
    term.write_all(b"y\nn\nthe secret one\n").unwrap();
    let status = common::wait_with_timeout(&mut child);
    let o = child.wait_with_output().unwrap();
    drop(term);
    let err = screen.join().unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(stdout(&o), "Thanks.\n");
    assert!(
        err.contains("Read secret.txt (1 line, 7 B). Allow? [y/N]"),
        "{err}"
    );
    assert!(
        err.contains("Read other.txt (1 line, 6 B). Allow? [y/N]"),
        "{err}"
    );
    assert!(err.contains("Which one did you mean?"), "{err}");
    let last = tool_results(&fake.chat_bodies()[3]);
    assert!(last[0].contains("hidden"), "{last:?}");
    assert!(last[1].contains("declined"), "{last:?}");
    assert_eq!(last[2], "the secret one");
}
