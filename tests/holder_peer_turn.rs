//! A turn that another bb7 process (`bb7 ask`, `bb7 chat`) starts on the chat an
//! editor holds is shown to the editor as it streams, under a `peer:` id that the
//! `peer_change` note names, and the editor can cancel it (docs/PROTOCOL.md, "One chat,
//! many front-ends").

mod cli_support;
mod common;

use std::time::Duration;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use common::peers::until;
use serde_json::{Value, json};

#[test]
fn a_guest_turn_streams_to_the_holder_under_its_peer_id() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", "one\n");
    let (mut editor, id) = env.with_chat();
    let mut steps = vec![Step::Comment, role(), reasoning("Weighing it. ")];
    steps.extend(["Peer ", "answer ", "streams."].map(text));
    steps.push(done());
    fake.push_sse(steps);
    let mut ask = spawn(&env, &env.project, &["ask", "what", "is", "it"]);

    let started = until(&mut editor, |m| {
        m["type"] == "peer_change" && m["action"] == "send" && m["status"] == "started"
    });
    let note = started.last().unwrap().clone();
    let peer = note["peer_request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the note names the turn: {note}"))
        .to_owned();
    assert!(peer.starts_with("peer:"), "{peer}");
    assert_eq!(note["chat_id"], id.as_str());

    let mut seen = started;
    seen.extend(until(&mut editor, |m| {
        m["type"] == "done" && m["request_id"] == peer.as_str()
    }));
    let of_turn: Vec<&Value> = seen
        .iter()
        .filter(|m| m["request_id"] == peer.as_str())
        .collect();
    let joined = |kind: &str| common::peers::joined(&seen, &peer, kind);
    assert_eq!(joined("chunk"), "Peer answer streams.", "{of_turn:?}");
    assert_eq!(joined("thinking"), "Weighing it. ", "{of_turn:?}");
    assert_eq!(of_turn.last().unwrap()["chat_id"], id.as_str());

    // The guest still gets its own answer, and the editor hears the turn ended.
    let status = common::wait_with_timeout(&mut ask);
    assert!(status.success(), "bb7 ask: {status:?}");
    let ended = until(&mut editor, |m| {
        m["type"] == "peer_change" && m["status"] == "done" && m["action"] == "send"
    });
    assert_eq!(ended.last().unwrap()["peer_request_id"], peer.as_str());
    // The editor's own requests never carry a peer id.
    let own = editor.send(json!({"action": "ping"}));
    assert!(!own.starts_with("peer:"));
    assert_eq!(editor.reply_to(&own)["type"], "ok");
}

#[test]
fn the_holder_cancels_a_guest_turn_by_its_peer_id() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", "one\n");
    let (mut editor, _id) = env.with_chat();
    fake.push_sse(paused(&[text("slow ")], Duration::from_secs(120), "never"));
    let mut ask = spawn(&env, &env.project, &["ask", "tell", "a", "story"]);
    let started = until(&mut editor, |m| {
        m["type"] == "peer_change" && m["status"] == "started"
    });
    let peer = started.last().unwrap()["peer_request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    until(&mut editor, |m| {
        m["type"] == "chunk" && m["request_id"] == peer.as_str()
    });

    // A send of the editor's own meanwhile is refused: one turn per chat.
    let busy = editor.request(json!({"action": "send", "content": "mine"}));
    assert_eq!(busy["code"], "busy", "{busy}");

    let ack = editor.request(json!({"action": "cancel", "target_request_id": peer}));
    assert_eq!(ack["type"], "ok", "{ack}");
    let end = until(&mut editor, |m| {
        m["request_id"] == peer.as_str()
            && matches!(m["type"].as_str(), Some("done" | "error" | "diff_error"))
    });
    let last = end.last().unwrap();
    assert!(
        last["cancelled"] == true || last["code"] == "cancelled",
        "{last}"
    );
    // The guest's command ends too, well before the model's stall is over.
    common::wait_with_timeout(&mut ask);
    // A peer id that names no running turn is an error, never a cancel of another.
    let gone = editor.request(json!({"action": "cancel", "target_request_id": peer}));
    assert_eq!(gone["type"], "error", "{gone}");
}
