//! `bb7 chat` on a pseudo-terminal tells a context journal whose replay stopped early
//! as the chat opens (before its first prompt), once: the answer to the first question
//! does not repeat it (docs/PROTOCOL.md, `chat_select` and "Notices of a send").

mod cli_support;
mod common;

use cli_support::Terminal;
use common::fake_env;
use common::fake_model::*;
use common::reopen::{chat_with_journal, plant_bad_second_line};
use serde_json::json;

const PROMPT: &str = "bb7> ";
const TOLD: &str = "was read only up to line 2";

#[test]
fn bb7_chat_tells_a_stopped_journal_at_open_once() {
    let (env, fake) = fake_env(json!({}));
    let (_chat, journal) = chat_with_journal(&env);
    plant_bad_second_line(&journal);

    fake.push_sse(response("", "An answer.\n", vec![]));
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(TOLD);
    t.expect(PROMPT);
    t.type_keys("hello\r");
    t.expect("An answer.");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success());
    let screen = t.screen();
    assert_eq!(screen.matches(TOLD).count(), 1, "{screen}");
}
