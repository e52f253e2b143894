//! `bb7 chat` on a chat another process holds without answering: it is shown
//! read-only, and `/fork N` branches it into a chat of this session, which then
//! answers (docs/PROTOCOL.md, "One chat, many front-ends").

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn bb7_chat_views_a_held_chat_and_forks_it() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "one\n")]);
    fake.push_sse(response("", "First answer.\n", vec![]));
    ok(&env, &["ask", "first", "question"]);
    let id = stdout(&ok(&env, &["chats"]))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned();
    let mut holder = hold_without_socket(&env, &id);

    fake.push_sse(response("", "Answer in the fork.\n", vec![]));
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("read-only here: /fork N branches it");
    t.expect("bb7> ");
    t.type_keys("/files\r");
    t.expect("f.txt");
    t.expect("bb7> ");
    t.type_keys("/fork 1\r");
    t.expect("before question 1 into chat ");
    t.expect("first question");
    t.expect("bb7> ");
    t.type_keys("first question again\r");
    t.expect("Answer in the fork.");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success());
    // The held chat was not written; the fork holds the new exchange.
    let chat = env.chat_json(&id);
    let text = chat.to_string();
    assert!(!text.contains("Answer in the fork."), "{text}");
    let _ = holder.kill();
    let _ = holder.wait();
}
