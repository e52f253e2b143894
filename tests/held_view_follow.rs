//! A chat opened read-only beside the process that holds it (`chat_select` with
//! `read_only`) follows the holder's turns as they stream, under `peer:` ids, and
//! shows each answer once it ends, without being selected again (docs/PROTOCOL.md,
//! "One chat, many front-ends").

mod cli_support;
mod common;

use std::time::Duration;

use common::fake_env;
use common::fake_model::*;
use common::peers::until;
use serde_json::{Value, json};

/// Opens chat `id` read-only in `viewer` and waits until it follows the holder: the
/// holder saves drafts until the viewer is told of one (the viewer connects to the
/// holder's socket in the background, so the first may come before it listens).
fn view(viewer: &mut common::Bb7, holder: &mut common::Bb7, env: &common::Env, id: &str) {
    viewer.ok(json!({"action": "init", "project_root": env.project}));
    let sel = viewer.request(json!({"action": "chat_select", "id": id}));
    assert_eq!(sel["code"], "locked", "{sel}");
    viewer.ok(json!({"action": "chat_select", "id": id, "read_only": true}));
    // 600 drafts: a hang guard for a loaded machine (100 were about 20 s).
    for n in 0..600 {
        holder.ok(json!({"action": "save_draft", "draft": format!("draft {n}")}));
        if let Some(m) = viewer.recv_timeout(Duration::from_millis(200)) {
            assert_eq!(m["type"], "peer_change", "{m}");
            assert_eq!(m["action"], "save_draft", "{m}");
            assert_eq!(m["chat_id"], id, "{m}");
            return;
        }
    }
    panic!("the viewer never heard of the holder's changes");
}

/// The active chat as `b` shows it (`chat_get`), as text.
fn shown(b: &mut common::Bb7) -> String {
    b.ok(json!({"action": "chat_get"}))["messages"].to_string()
}

#[test]
fn a_read_only_viewer_sees_the_holders_turn_stream_and_its_answer() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", "one\n");
    let (mut holder, id) = env.with_chat();
    let mut viewer = env.spawn();
    view(&mut viewer, &mut holder, &env, &id);

    let mut steps = vec![role(), reasoning("Weighing it. ")];
    steps.extend(["Holder ", "answer ", "streams."].map(text));
    steps.push(done());
    fake.push_sse(steps);
    let rid = holder.send(json!({"action": "send", "content": "what is it"}));
    let own = holder.stream(&rid);
    assert_eq!(own.last().unwrap()["type"], "done", "{own:?}");

    let peer = format!("peer:holder:{rid}");
    let seen = until(&mut viewer, |m| {
        m["type"] == "peer_change" && m["action"] == "send" && m["status"] == "done"
    });
    let started = seen
        .iter()
        .find(|m| m["type"] == "peer_change" && m["status"] == "started")
        .unwrap_or_else(|| panic!("a started note: {seen:?}"));
    assert_eq!(started["peer_request_id"], peer.as_str(), "{started}");
    assert_eq!(seen.last().unwrap()["peer_request_id"], peer.as_str());
    let of_turn: Vec<&Value> = seen
        .iter()
        .filter(|m| m["request_id"] == peer.as_str())
        .collect();
    let joined = |kind: &str| common::peers::joined(&seen, &peer, kind);
    assert_eq!(joined("chunk"), "Holder answer streams.", "{of_turn:?}");
    assert_eq!(joined("thinking"), "Weighing it. ", "{of_turn:?}");
    let last = of_turn.last().unwrap();
    assert_eq!(last["type"], "done", "{last}");
    assert_eq!(last["chat_id"], id.as_str());

    // The answer is in the viewer's chat without selecting it again, and the viewer
    // still only reads.
    let h = shown(&mut viewer);
    assert!(h.contains("Holder answer streams."), "{h}");
    let refused = viewer.request(json!({"action": "send", "content": "mine"}));
    assert_eq!(refused["code"], "locked", "{refused}");
}

#[test]
fn a_read_only_viewer_sees_a_guests_turn_and_watch_is_not_an_stdin_action() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", "one\n");
    let (mut holder, id) = env.with_chat();
    let mut viewer = env.spawn();
    view(&mut viewer, &mut holder, &env, &id);

    let mut steps = vec![role()];
    steps.extend(["Guest ", "answer."].map(text));
    steps.push(done());
    fake.push_sse(steps);
    let mut ask = cli_support::spawn(&env, &env.project, &["ask", "who", "asks"]);
    let seen = until(&mut viewer, |m| {
        m["type"] == "peer_change" && m["action"] == "send" && m["status"] == "done"
    });
    let peer = seen.last().unwrap()["peer_request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        peer.starts_with("peer:") && !peer.starts_with("peer:holder"),
        "{peer}"
    );
    let text: String = seen
        .iter()
        .filter(|m| m["request_id"] == peer.as_str() && m["type"] == "chunk")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(text, "Guest answer.", "{seen:?}");
    assert!(common::wait_with_timeout(&mut ask).success());
    let h = shown(&mut viewer);
    assert!(h.contains("Guest answer."), "{h}");

    let refused = holder.request(json!({"action": "watch"}));
    assert_eq!(refused["code"], "invalid_request", "{refused}");
}

#[test]
fn a_read_only_viewer_cancels_the_holders_turn_by_the_id_it_was_shown() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", "one\n");
    let (mut holder, id) = env.with_chat();
    let mut viewer = env.spawn();
    view(&mut viewer, &mut holder, &env, &id);

    fake.push_sse(paused(
        &[role(), text("slow ")],
        Duration::from_secs(120),
        "never",
    ));
    let rid = holder.send(json!({"action": "send", "content": "tell a story"}));
    let peer = format!("peer:holder:{rid}");
    until(&mut viewer, |m| {
        m["type"] == "chunk" && m["request_id"] == peer.as_str()
    });
    let ack = viewer.request(json!({"action": "cancel", "target_request_id": peer}));
    assert_eq!(ack["type"], "ok", "{ack}");
    let own = holder.stream(&rid);
    let last = own.last().unwrap();
    assert!(
        last["cancelled"] == true || last["code"] == "cancelled",
        "{last}"
    );
    let seen = until(&mut viewer, |m| {
        m["request_id"] == peer.as_str()
            && matches!(m["type"].as_str(), Some("done" | "error" | "diff_error"))
    });
    let end = seen.last().unwrap();
    assert!(
        end["cancelled"] == true || end["code"] == "cancelled",
        "{end}"
    );
    // A peer id that names no turn shown here is the session's: refused, read-only.
    let other =
        viewer.request(json!({"action": "cancel", "target_request_id": "peer:holder:nope"}));
    assert_eq!(other["type"], "error", "{other}");
}

#[test]
fn a_read_only_viewer_sees_the_holders_queued_turn_with_its_question() {
    let (env, fake) = fake_env(json!({}));
    let (mut holder, id) = env.with_chat();
    let mut viewer = env.spawn();
    view(&mut viewer, &mut holder, &env, &id);

    let gate = Gate::new();
    fake.push_sse(gated(&[text("First part. ")], &gate, "First end."));
    fake.push_sse(response("", "Queued answer.", vec![]));
    let first = holder.send(json!({"action": "send", "content": "first question"}));
    holder.wait_for_text(&first, "First part. ");
    let second = holder.send(json!({
        "action": "send", "content": "queued question", "queue": true
    }));
    let queued = holder.reply_to(&second);
    assert_eq!(queued["type"], "queued", "{queued}");
    gate.open();
    assert_eq!(holder.stream(&first).last().unwrap()["type"], "done");
    assert_eq!(holder.stream(&second).last().unwrap()["type"], "done");

    // The viewer sees both turns, each from its started note to its done note, and the
    // queued one's answer under its own peer id (no `queued` message: that was the
    // holder client's).
    let peer = format!("peer:holder:{second}");
    let seen = until(&mut viewer, |m| {
        m["type"] == "peer_change" && m["status"] == "done" && m["peer_request_id"] == peer.as_str()
    });
    let notes: Vec<(&str, &str)> = seen
        .iter()
        .filter(|m| m["type"] == "peer_change")
        .map(|m| {
            (
                m["status"].as_str().unwrap(),
                m["peer_request_id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let first_peer = format!("peer:holder:{first}");
    assert_eq!(
        notes,
        [
            ("started", first_peer.as_str()),
            ("done", first_peer.as_str()),
            ("started", peer.as_str()),
            ("done", peer.as_str()),
        ],
        "{seen:?}"
    );
    let of_turn: Vec<&Value> = seen
        .iter()
        .filter(|m| m["request_id"] == peer.as_str())
        .collect();
    let text: String = of_turn
        .iter()
        .filter(|m| m["type"] == "chunk")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(text, "Queued answer.", "{of_turn:?}");
    assert_eq!(of_turn.last().unwrap()["type"], "done", "{of_turn:?}");
    assert!(
        !seen.iter().any(|m| m["type"] == "queued"),
        "no queued reply is copied: {seen:?}"
    );
    // The question and its answer are in the viewer's chat, in order.
    let h = shown(&mut viewer);
    let (q, a) = (h.find("queued question"), h.find("Queued answer."));
    assert!(q.is_some() && a.is_some() && q < a, "{h}");
}

#[test]
fn a_read_only_viewer_is_told_when_the_holder_switches_chats_and_when_it_quits() {
    let (env, _fake) = fake_env(json!({}));
    let (mut holder, id) = env.with_chat();
    let mut viewer = env.spawn();
    view(&mut viewer, &mut holder, &env, &id);

    // The holder switches to a new chat: the viewer hears it, and may then take the
    // chat (its lock is free).
    let other = holder.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(other, id);
    let left = until(&mut viewer, |m| m["type"] == "holder_left");
    let left = left.last().unwrap();
    assert_eq!(left["reason"], "switched", "{left}");
    assert_eq!(left["chat_id"], id.as_str(), "{left}");
    assert!(left.get("request_id").is_none(), "{left}");
    viewer.ok(json!({"action": "chat_select", "id": id}));
    let active = viewer.ok(json!({"action": "chat_active"}));
    assert!(
        active.get("read_only").is_none_or(|r| r == false),
        "{active}"
    );

    // Now the first process views it read-only, and is told when its holder quits.
    let sel = holder.request(json!({"action": "chat_select", "id": id}));
    assert_eq!(sel["code"], "locked", "{sel}");
    holder.ok(json!({"action": "chat_select", "id": id, "read_only": true}));
    // Its watch connection is made in the background: the drafts show when it is.
    for n in 0..100 {
        viewer.ok(json!({"action": "save_draft", "draft": format!("draft {n}")}));
        if let Some(m) = holder.recv_timeout(Duration::from_millis(200)) {
            assert_eq!(m["type"], "peer_change", "{m}");
            break;
        }
        assert!(n < 99, "the old holder never followed the new one");
    }
    viewer.kill();
    let left = until(&mut holder, |m| m["type"] == "holder_left");
    let left = left.last().unwrap();
    assert_eq!(left["reason"], "quit", "{left}");
    assert_eq!(left["chat_id"], id.as_str(), "{left}");
    holder.ok(json!({"action": "chat_select", "id": id}));
    holder.ok(json!({"action": "save_draft", "draft": "mine again"}));
}
