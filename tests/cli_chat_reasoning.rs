//! `bb7 chat` shows the model's reasoning: by default counted in one dimmed line
//! (`reasoning… N words` while it streams, `reasoning: N words (/thinking on shows
//! it)` above the answer), whole and dimmed after `/thinking on`, collapsed again
//! after `/thinking off`; driven on a pseudo-terminal against the fake model.

mod cli_support;
mod common;

use std::time::Duration;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const PROMPT: &str = "bb7> ";
/// anstyle's dimmed style, as the terminal receives it.
const DIM: &str = "\x1b[2m";

#[test]
fn reasoning_is_counted_by_default_and_shown_whole_with_thinking_on() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    // Reasoning that stops mid-stream: the indicator counts it while it lasts.
    fake.push_sse(vec![
        Step::Comment,
        role(),
        reasoning("Let me ch"),
        reasoning("eck the file."),
        Step::Sleep(Duration::from_secs(60)),
        text("Late.\n"),
        finish("stop"),
        done(),
    ]);
    fake.push_sse(response("First I read it twice.", "The answer.\n", vec![]));
    fake.push_sse(response(
        "Shown reasoning here.",
        "Second answer.\n",
        vec![],
    ));
    fake.push_sse(response("Hidden once more.", "Third answer.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("first\r");
    // "ch" and "eck" arrive apart: one word.
    t.expect("reasoning… 5 words");
    t.type_keys("\x03");
    t.expect("the partial answer is kept");
    t.expect(PROMPT);

    t.type_keys("second\r");
    let shown = t.expect("The answer.");
    assert!(
        shown.contains("reasoning: 5 words (/thinking on shows it)"),
        "{shown:?}"
    );
    assert!(!shown.contains("First I read"), "{shown:?}");
    t.expect(PROMPT);

    t.type_keys("/thinking on\r");
    t.expect("thinking on");
    t.expect(PROMPT);
    t.type_keys("third\r");
    let shown = t.expect("Second answer.");
    assert!(
        shown.contains(&format!("{DIM}Shown reasoning here.")),
        "{shown:?}"
    );
    assert!(!shown.contains("words (/thinking"), "{shown:?}");
    t.expect(PROMPT);

    t.type_keys("/thinking off\r");
    t.expect("thinking off");
    t.expect(PROMPT);
    t.type_keys("fourth\r");
    let shown = t.expect("Third answer.");
    assert!(shown.contains("reasoning: 3 words"), "{shown:?}");
    assert!(!shown.contains("Hidden once"), "{shown:?}");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
}

#[test]
fn chat_thinking_flag_starts_with_reasoning_shown() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    fake.push_sse(response("Visible from the start.", "Done.\n", vec![]));
    let mut t = Terminal::start(&env, &["chat", "--thinking"]);
    t.expect(PROMPT);
    t.type_keys("/thinking\r");
    t.expect("thinking on");
    t.expect(PROMPT);
    t.type_keys("go\r");
    let shown = t.expect("Done.");
    assert!(shown.contains("Visible from the start."), "{shown:?}");
    t.expect(PROMPT);
    t.type_keys("/thinking maybe\r");
    t.expect("use /thinking on, or /thinking off");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
}
