//! Titles without a title model: after a chat's first answer it is named from its first
//! question, locally (no model call), with a `title_updated` event; a title model, when
//! set, still names it, replacing the local title.

mod common;

use std::time::Duration;

use common::fake_env;
use common::fake_model::response;
use serde_json::{Value, json};

fn title_events(b: &mut common::Bb7, want: usize) -> Vec<Value> {
    let mut got: Vec<Value> = b
        .backlog
        .drain(..)
        .filter(|m| m["type"] == "title_updated")
        .collect();
    // A hang guard: polls, counted, never a speed bound (at most the harness's TIMEOUT
    // when nothing arrives).
    for _ in 0..1200 {
        if got.len() >= want {
            break;
        }
        if let Some(m) = b.recv_timeout(Duration::from_millis(100))
            && m["type"] == "title_updated"
        {
            got.push(m);
        }
    }
    got
}

#[test]
fn without_a_title_model_the_first_question_names_the_chat_and_no_model_is_called() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    assert!(
        env.chat_json(&id)["name"]
            .as_str()
            .unwrap()
            .starts_with("Chat ")
    );
    fake.push_sse(response("", "Because.", vec![]));
    assert_eq!(
        b.turn("why does parse() fail on empty input?")["type"],
        "done"
    );
    let events = title_events(&mut b, 1);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["title"], "Why does parse() fail on empty input");
    assert_eq!(events[0]["chat_id"], id.as_str());
    assert_eq!(
        env.chat_json(&id)["name"],
        "Why does parse() fail on empty input"
    );
    assert_eq!(
        fake.requests().len(),
        1,
        "only the answer reached the model"
    );
    // Later answers keep the name.
    fake.push_sse(response("", "Sure.", vec![]));
    assert_eq!(b.turn("and on whitespace?")["type"], "done");
    assert_eq!(
        env.chat_json(&id)["name"],
        "Why does parse() fail on empty input"
    );
    // A name the user gave is kept.
    b.ok(json!({"action": "chat_new", "name": "Mine"}));
    fake.push_sse(response("", "Ok.", vec![]));
    assert_eq!(b.turn("rename the parser")["type"], "done");
    let active = b.ok(json!({"action": "chat_get"}));
    assert_eq!(active["name"], "Mine");
}

#[test]
fn a_title_model_replaces_the_local_title() {
    let (env, fake) = fake_env(json!({"title_model": "fake/titler"}));
    let (mut b, id) = env.with_chat();
    fake.push_sse(response("", "Sure.", vec![]));
    fake.push_completion("Parser Refactor");
    assert_eq!(b.turn("please refactor the parser")["type"], "done");
    let events = title_events(&mut b, 2);
    let titles: Vec<&str> = events
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Refactor the parser", "Parser Refactor"]);
    assert_eq!(env.chat_json(&id)["name"], "Parser Refactor");
}
