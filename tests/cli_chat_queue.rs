//! `bb7 chat` on a pseudo-terminal: a question typed while an answer streams is queued
//! (a `bb7: queued (N)` line, the typed text not echoed into the answer), answered
//! after it in turn; a slash command typed meanwhile is refused with a note, and
//! `/unqueue` drops a queued question before it is sent to the model. The fake model
//! holds the answers that are typed over in the middle until the test has typed
//! and seen its note (a gate, not a time), so a slow machine cannot close the window.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const PROMPT: &str = "bb7> ";

/// An answer that stops after `first` until the test opens `gate`.
fn slow(first: &str, gate: &Gate, last: &str) -> Vec<Step> {
    vec![
        role(),
        text(first),
        Step::Wait(gate.clone()),
        text(last),
        finish("stop"),
        done(),
    ]
}

#[test]
fn a_line_typed_while_the_answer_streams_is_queued_and_answered_after_it() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "one\n")]);
    let (first, third, fourth) = (Gate::new(), Gate::new(), Gate::new());
    fake.push_sse(slow("First part.\n", &first, "First end.\n"));
    fake.push_sse(response("", "Second answer.\n", vec![]));
    fake.push_sse(slow("Third part.\n", &third, "Third end.\n"));
    fake.push_sse(slow("Fourth part.\n", &fourth, "Fourth end.\n"));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("first question\r");
    t.expect("First part.");
    t.type_keys("second question\r");
    t.expect("queued (1): second question");
    first.open();
    // Not inside the answer (shown while typed below it: tests/cli_chat_typing.rs).
    let rest = t.expect("First end.");
    assert!(!rest.contains("second question"), "{rest:?}");
    t.expect("answering: second question");
    t.expect("Second answer.");
    t.expect(PROMPT);
    // The queued question went out after the first answer, with it in the history.
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    let second = prompt_text(&bodies[1]);
    assert!(second.contains("First end."), "{second}");
    assert!(second.contains("second question"), "{second}");

    // A command waits; /unqueue drops what is queued, and nothing more is sent.
    t.type_keys("third question\r");
    t.expect("Third part.");
    t.type_keys("/files\r");
    t.expect("/files waits for the answer to end");
    t.type_keys("never asked\r");
    t.expect("queued (1): never asked");
    t.type_keys("/unqueue\r");
    t.expect("dropped 1 queued question(s)");
    third.open();
    t.expect("Third end.");
    t.expect(PROMPT);
    t.type_keys("/files\r");
    t.expect(PROMPT);

    // Ctrl-C stops the answer and drops the queue behind it: no prompt is left
    // waiting on a question the server holds.
    t.type_keys("fourth question\r");
    t.expect("Fourth part.");
    t.type_keys("held back\r");
    t.expect("queued (1): held back");
    t.type_keys("\x03");
    t.expect("dropped 1 queued question(s)");
    fourth.open();
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 4, "a dropped question was sent");
    let screen = t.screen();
    assert!(!screen.contains("answering: never asked"), "{screen}");
    assert!(!screen.contains("answering: held back"), "{screen}");
}
