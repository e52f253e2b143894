//! `bb7 chat` on a pseudo-terminal: a line typed while the answer has not started is
//! drawn after the waiting indicator, which goes on spinning (it used to stop for the
//! typed line); the line is intact once the answer starts and when it ends. The fake
//! model holds its first token until the test has seen what it waits for (a gate, not
//! a time); each key waits for what the one before showed.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const PROMPT: &str = "bb7> ";

/// `bb7 chat` on a pty whose first question is sent and whose answer ("The answer.")
/// waits for the returned gate; the next question is answered with `second`. Returns
/// once the waiting indicator shows.
fn waiting_for_the_answer(second: &str) -> (common::Env, FakeModel, Gate, Terminal) {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "one\n")]);
    let started = Gate::new();
    fake.push_sse(vec![
        Step::Wait(started.clone()),
        role(),
        text("The answer.\n"),
        finish("stop"),
        done(),
    ]);
    fake.push_sse(response("", second, vec![]));
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("first question\r");
    t.expect("waiting for the model");
    (env, fake, started, t)
}

#[test]
fn the_spinner_goes_on_while_a_line_typed_during_the_wait_shows_beside_it() {
    let (_env, fake, started, mut t) = waiting_for_the_answer("Typed answered.\n");
    t.type_keys("during");
    t.expect("next> ");
    t.expect("during");
    // Later frames of the spinner, each with the typed line after it: the indicator
    // did not stop for it.
    for _ in 0..3 {
        t.expect("waiting for the model");
        t.expect("next> ");
        t.expect("during");
    }
    // A change shows at once, beside the spinner still.
    t.type_keys(" wait");
    t.expect("during wait");
    t.expect("waiting for the model");
    t.expect("next> ");
    t.expect("during wait");
    started.open();
    t.expect("The answer.");
    // Below the answer the typed line is drawn again, whole.
    t.expect("next> ");
    t.expect("during wait");
    t.expect(PROMPT);
    // The line editor starts with it: Enter sends it as typed.
    t.type_keys("\r");
    t.expect("Typed answered.");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{}", t.screen());
    let second = prompt_text(&bodies[1]);
    assert!(second.contains("during wait"), "{second}");
    // No row of the answer holds typed text.
    let screen = t.screen();
    let answer_row = screen
        .split('\n')
        .find(|r| r.contains("The answer."))
        .unwrap_or_default();
    let after = answer_row.rsplit('\r').next().unwrap_or_default();
    assert!(!after.contains("during"), "{answer_row:?}");
}

#[test]
fn a_line_entered_during_the_wait_is_queued_on_a_row_of_its_own() {
    let (_env, fake, started, mut t) = waiting_for_the_answer("Queued answered.\n");
    t.type_keys("next one");
    t.expect("next> ");
    t.expect("next one");
    t.type_keys("\r");
    let queued = t.expect("queued (1): next one");
    // The note took the row from its start, not after a spinner frame.
    let before = queued.rsplit('\r').next().unwrap_or_default();
    assert!(!before.contains("waiting"), "{queued:?}");
    // The spinner goes on below it.
    t.expect("waiting for the model");
    started.open();
    t.expect("The answer.");
    t.expect("answering: next one");
    t.expect("Queued answered.");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
    assert_eq!(fake.chat_bodies().len(), 2, "{}", t.screen());
}
