//! `bb7 chat` on a pseudo-terminal tells a context journal whose replay stopped early
//! as the chat opens (before its first prompt), once: the answer to the first question
//! does not repeat it (docs/PROTOCOL.md, `chat_select` and "Notices of a send").

mod cli_support;
mod common;

use cli_support::Terminal;
use common::fake_env;
use common::fake_model::*;
use common::reopen::journal_file;
use serde_json::json;

const PROMPT: &str = "bb7> ";
const TOLD: &str = "was read only up to line 2";

#[test]
fn bb7_chat_tells_a_stopped_journal_at_open_once() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "a\n");
    env.write("b.txt", "b\n");
    env.write("c.txt", "c\n");
    let (mut b, chat) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    // A full save folds the chat; the adds after it are journaled.
    b.ok(json!({"action": "chat_rename", "id": chat, "name": "journaled"}));
    b.ok(json!({"action": "context_add", "path": "b.txt", "content": "b\n"}));
    b.ok(json!({"action": "context_add", "path": "c.txt", "content": "c\n"}));
    b.kill();
    let journal = journal_file(&env, &chat);
    let text = std::fs::read_to_string(&journal).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    std::fs::write(&journal, format!("{first}\n{{not a record\n{rest}")).unwrap();

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
