//! `bb7 chat` beside another process that holds the chat (an editor) is its guest and
//! follows it: the holder's own turns show as they stream, a question the holder
//! queued behind its answer included, and when the holder switches to another chat or
//! quits, `bb7 chat` says so at once and takes the chat over with the next line
//! (docs/PROTOCOL.md, "One chat, many front-ends"). Two processes against the fake model.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const PROMPT: &str = "bb7> ";

#[test]
fn a_guest_chat_shows_the_holders_turns_queued_ones_included_and_takes_over_after_a_switch() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    let (mut editor, id) = env.with_chat();
    let gate = Gate::new();
    // Whole lines: the terminal shows a line of the answer once it ends.
    fake.push_sse(gated(&[text("Editor part one.\n")], &gate, "Editor end.\n"));
    fake.push_sse(response("", "Queued editor answer.\n", vec![]));
    fake.push_sse(response("", "Answered here.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    let first = editor.send(json!({"action": "send", "content": "editor asks"}));
    editor.wait_for_text(&first, "Editor part one.\n");
    // The answer's first line may show before or after the line naming the asker.
    t.expect("Editor part one.");
    let second = editor.send(json!({
        "action": "send", "content": "editor queues", "queue": true
    }));
    assert_eq!(editor.reply_to(&second)["type"], "queued");
    gate.open();
    assert_eq!(editor.stream(&first).last().unwrap()["type"], "done");
    assert_eq!(editor.stream(&second).last().unwrap()["type"], "done");
    t.expect("Editor end.");
    // The first turn's end is told before the queued one starts.
    t.expect("got its answer in this chat");
    t.expect("Queued editor answer.");
    t.expect("got its answer in this chat");
    // Both turns were named as they started.
    let screen = t.screen();
    assert_eq!(
        screen.matches("is asking the model in this chat:").count(),
        2,
        "{screen}"
    );

    // The editor opens another chat: this one is free, and `bb7 chat` says so.
    let other = editor.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(other, id);
    t.expect("switched to another chat; your next line takes this one over");
    t.type_keys("my own question\r");
    t.expect(&format!(
        "the process holding chat {id} switched to another chat; it is held here now"
    ));
    t.expect("Answered here.");
    t.expect(PROMPT);
    let users: Vec<String> = env
        .history(&id)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(users[2].contains("my own question"), "{users:?}");
    t.type_keys("\x04");
    assert!(t.wait().success());
}

#[test]
fn a_guest_chat_says_at_once_that_its_holder_quit() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    let (mut editor, id) = env.with_chat();
    fake.push_sse(response("", "Held here now.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    // A clean quit (the editor's input ends), then a line typed after the notice.
    editor.ok(json!({"action": "shutdown"}));
    t.expect("has quit; your next line takes the chat over");
    t.type_keys("still here?\r");
    t.expect(&format!(
        "the process holding chat {id} has quit; it is held here now"
    ));
    t.expect("Held here now.");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success());
}
