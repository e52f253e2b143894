//! Several chats at once: `send` with a `chat_id` that is not the active chat streams
//! there while the active chat streams too; every stream message names its chat; a
//! second send to a busy chat gets `busy`; the active chat stays what the user chose.

mod common;

use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn a_send_to_another_chat_streams_beside_the_active_one() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, first) = env.with_chat();
    let second = b.ok(json!({"action": "chat_new", "name": "side"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    b.ok(json!({"action": "chat_select", "id": first}));

    let (r1, slow) = b.start_slow_turn(&fake, json!({"action": "send", "content": "one"}));

    let quick = Gate::new();
    fake.push_sse(gated(&[text("quick ")], &quick, "second"));
    let r2 = b.send(json!({"action": "send", "content": "two", "chat_id": second}));
    // While the second chat streams, another send to it is refused, and so is one to
    // the first chat.
    let busy = b.err(json!({"action": "send", "content": "again", "chat_id": second}));
    assert_eq!(busy["code"], "busy");
    let busy = b.err(json!({"action": "send", "content": "again"}));
    assert_eq!(busy["code"], "busy");
    quick.open();

    let mut finished = Vec::new();
    while finished.len() < 2 {
        let m = b.recv().expect("stream message");
        let rid = m["request_id"].as_str().unwrap_or_default().to_owned();
        if rid == r1 {
            assert_eq!(m["chat_id"], first.as_str(), "{m}");
        } else if rid == r2 {
            assert_eq!(m["chat_id"], second.as_str(), "{m}");
        } else {
            continue;
        }
        if m["type"] == "done" {
            // The first turn goes on only once the second one ended.
            slow.open();
            finished.push(rid);
        }
    }
    assert_eq!(finished, [r2, r1]);

    let last = |id: &str| {
        env.chat_json(id)["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["parts"][0]["content"]
            .clone()
    };
    assert_eq!(last(&first), "slow first");
    assert_eq!(last(&second), "quick second");
    // The user's chosen chat is still the active one, and the side chat's lock was
    // given back once its turn ended.
    assert_eq!(b.ok(json!({"action": "chat_active"}))["id"], first.as_str());
    assert_eq!(
        std::fs::read_to_string(env.chat_dir(&second).join("lock")).unwrap_or_default(),
        ""
    );
}

#[test]
fn a_send_to_an_unknown_chat_is_an_error_and_the_process_keeps_serving() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, _) = env.with_chat();
    let e = b.err(json!({"action": "send", "content": "x", "chat_id": "0123456789"}));
    assert_eq!(e["message"], "Chat not found");
    b.ok(json!({"action": "ping"}));
}

#[test]
fn sigterm_ends_the_process_like_the_end_of_input() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    // A gate never opened: the answer stalls after "partial " for as long as the test
    // runs.
    fake.push_sse(gated(&[text("partial ")], &Gate::new(), "never"));
    let rid = b.send(json!({"action": "send", "content": "long"}));
    assert_eq!(b.reply_to(&rid)["type"], "chunk");
    // Editors stop their job with SIGTERM; the reference plugin warns about any exit
    // status but 0.
    unsafe { libc::kill(b.child.id() as i32, libc::SIGTERM) };
    let status = common::wait_with_timeout(&mut b.child);
    assert_eq!(status.code(), Some(0), "{status:?}");
    // The turn that was running saved what it had.
    let chat = env.chat_json(&id);
    let last = common::last_assistant(&chat);
    assert_eq!(last["parts"][0]["content"], "partial ");
}
