//! A `send` with `"queue": true` while the same chat streams: answered `queued` with
//! its position and started when the answer ends, in order; without the field the
//! `busy` error stays. After an answer that ended in an error or a cancel the queue
//! waits with a note until the chat's next answer ends well; `cancel` drops a queued
//! message.

mod common;

use common::fake_model::{FakeModel, Gate, gated, response, text};
use common::{Bb7, fake_env};
use serde_json::json;

/// Starts a turn whose answer stalls after its first chunk until the test opens `gate`
/// (the test's requests arrive during the stall however slow the machine), and returns
/// its request id.
fn slow_turn(b: &mut Bb7, fake: &FakeModel, gate: &Gate, content: &str) -> String {
    fake.push_sse(gated(&[text("slow ")], gate, "first"));
    let rid = b.send(json!({"action": "send", "content": content}));
    assert_eq!(b.reply_to(&rid)["type"], "chunk");
    rid
}

fn user_messages(env: &common::Env, id: &str) -> Vec<String> {
    env.history(id)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect()
}

#[test]
fn queued_sends_start_in_order_when_the_answer_ends() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let gate = Gate::new();
    let first = slow_turn(&mut b, &fake, &gate, "one");
    let busy = b.err(json!({"action": "send", "content": "not queued"}));
    assert_eq!(busy["code"], "busy", "without the field: busy as before");
    let second = b.send(json!({"action": "send", "content": "two", "queue": true}));
    let q = b.reply_to(&second);
    assert_eq!(
        (q["type"].as_str(), q["position"].as_u64()),
        (Some("queued"), Some(1)),
        "{q}"
    );
    let third = b.send(json!({"action": "send", "content": "three", "queue": true}));
    assert_eq!(b.reply_to(&third)["position"], 2);
    fake.push_sse(response("", "Second answer.", vec![]));
    fake.push_sse(response("", "Third answer.", vec![]));
    gate.open();
    assert_eq!(b.stream(&first).pop().unwrap()["type"], "done");
    assert_eq!(b.stream(&second).pop().unwrap()["type"], "done");
    assert_eq!(b.stream(&third).pop().unwrap()["type"], "done");
    assert_eq!(user_messages(&env, &id), ["one", "two", "three"]);
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies[1].to_string().contains("slow first"),
        "the queued send follows the answer"
    );
}

#[test]
fn after_a_cancelled_answer_the_queue_waits_with_a_note_and_can_be_cancelled() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let gate = Gate::new();
    let first = slow_turn(&mut b, &fake, &gate, "one");
    let kept = b.send(json!({"action": "send", "content": "kept", "queue": true}));
    assert_eq!(b.reply_to(&kept)["type"], "queued");
    let dropped = b.send(json!({"action": "send", "content": "dropped", "queue": true}));
    assert_eq!(b.reply_to(&dropped)["position"], 2);
    b.ok(json!({"action": "cancel", "target_request_id": first}));
    assert_eq!(b.stream(&first).pop().unwrap()["code"], "cancelled");
    gate.open();
    let note = b.reply_to(&kept);
    assert_eq!(note["type"], "queued", "{note}");
    assert!(note["note"].as_str().unwrap().contains("waits"), "{note}");
    assert_eq!(b.reply_to(&dropped)["type"], "queued");
    b.ok(json!({"action": "cancel", "target_request_id": dropped}));
    assert_eq!(b.reply_to(&dropped)["code"], "cancelled");
    assert_eq!(fake.chat_bodies().len(), 1, "nothing queued was sent");
    // The next answer that ends well lets the queue go.
    fake.push_sse(response("", "Again.", vec![]));
    fake.push_sse(response("", "Kept.", vec![]));
    assert_eq!(b.turn("again")["type"], "done");
    assert_eq!(b.stream(&kept).pop().unwrap()["type"], "done");
    assert_eq!(user_messages(&env, &id), ["one", "again", "kept"]);
}
