//! `bb7 chat` holding the chat shows a turn that another front-end (`bb7 ask`) runs
//! there through its holder socket as it streams: a dimmed line naming it, the
//! answer, its reasoning counted, its changes; then the prompt is as it was
//! (docs/PROTOCOL.md, "One chat, many front-ends"). Two processes against the fake model.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const PROMPT: &str = "bb7> ";

#[test]
fn a_guest_turn_is_shown_live_in_the_holding_chat() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    fake.push_sse(response(
        "Reading the file first.",
        "Peer answer streams here.\nSecond line.\n",
        vec![(
            "edit_file",
            json!({"path": "f.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
        )],
    ));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    let ask = ok(&env, &["ask", "what", "is", "it"]);
    assert!(stdout(&ask).contains("Peer answer"), "{}", stderr(&ask));
    // The turn, as the holder's terminal shows it, in order.
    t.expect("bb7 ask (PID");
    t.expect("is asking the model in this chat:");
    t.expect("reasoning: 4 words (/thinking on shows it)");
    t.expect("Peer answer streams here.");
    t.expect("Second line.");
    t.expect("Edit f.txt");
    t.expect("got its answer in this chat");
    // The holder's own prompt still works, and sees the guest's change.
    t.type_keys("/diff\r");
    t.expect("+TWO");
    t.expect(PROMPT);
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());
}
