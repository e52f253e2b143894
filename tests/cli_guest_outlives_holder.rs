//! A `bb7 chat` beside another process that holds the chat is its guest (its requests
//! go to the holder's socket). When the holder quits (an editor closed or restarted,
//! Kakoune's chat pane gone), the guest takes the chat over before the next typed line
//! goes anywhere: the line is answered, never lost to "Broken pipe".

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn a_guest_whose_holder_quits_takes_the_chat_over_and_answers_the_next_line() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    let (mut editor, id) = env.with_chat();
    editor.ok(json!({"action": "context_add", "path": "f.txt", "content": TEN}));
    fake.push_sse(response("", "First answer, through the holder.\n", vec![]));
    fake.push_sse(response("", "Second answer, held here.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7>");
    t.type_keys("first question\r");
    t.expect("First answer, through the holder.");
    t.expect("bb7>");
    // The holder goes (an editor killed or restarted).
    editor.kill();

    t.type_keys("second question\r");
    let shown = t.expect("Second answer, held here.");
    assert!(!shown.contains("Broken pipe"), "{shown}");
    assert!(shown.contains("has quit"), "says what happened: {shown}");
    t.expect("bb7>");
    // The chat is one conversation: both questions, in order.
    let users: Vec<String> = env
        .history(&id)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[1].contains("second question"), "{users:?}");
    t.type_keys("\x04");
    assert!(t.wait().success());
}
