//! What a send says before its answer (docs/PROTOCOL.md "Notices of a send"): an
//! external context entry the user never added in this project is left out of the
//! request with a `notice` naming it, once per send, and neither the token estimate
//! nor ACP counts or sends it; a context that holds invisible characters the add never
//! named (a refreshed file) gets a `notice` naming file, line and code point, also as
//! an ACP agent message and on `bb7 ask`'s stderr.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

/// The notices of a stream with `kind`.
fn notices<'a>(stream: &'a [Value], kind: &str) -> Vec<&'a Value> {
    stream
        .iter()
        .filter(|m| m["type"] == "notice" && m["kind"] == kind)
        .collect()
}

/// A project chat listing the external file `credentials` (its text `secret`) that the
/// user added on another machine: added here, then the user's record of it removed.
/// Returns the environment, the fake model, the chat id and the file's absolute path.
fn planted_external(secret: &str) -> (common::Env, FakeModel, String, String) {
    let (env, fake) = fake_env(json!({}));
    let outside = env.home.join("credentials");
    std::fs::write(&outside, secret).unwrap();
    let abs = std::fs::canonicalize(&outside).unwrap();
    let abs = abs.to_str().unwrap().to_owned();
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": abs, "content": secret}));
    env.add(&mut b, "a.txt", "project text\n");
    assert_eq!(b.close().code(), Some(0));
    let record = env.home.join(".bb7").join("external_context.json");
    assert!(record.is_file(), "the add left no record");
    std::fs::remove_file(&record).unwrap();
    (env, fake, id, abs)
}

#[test]
fn an_external_entry_left_out_is_named_once_per_send_and_never_estimated() {
    let (env, fake, id, abs) = planted_external("SECRET-ONE\n");
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));

    let estimate = b.ok(json!({"action": "estimate_tokens"}));
    let files = estimate["files"].as_array().unwrap();
    assert!(
        files.iter().all(|f| f["path"] != abs.as_str()),
        "the estimate counts an entry the send leaves out: {estimate}"
    );
    assert!(files.iter().any(|f| f["path"] == "a.txt"), "{estimate}");

    for question in ["first?", "second?"] {
        fake.push_sse(response("", "An answer.", vec![]));
        let stream = b.turn_stream(question);
        assert_eq!(stream.last().unwrap()["type"], "done", "{stream:?}");
        let left_out = notices(&stream, "external_left_out");
        assert_eq!(left_out.len(), 1, "one notice per send: {stream:?}");
        let m = left_out[0]["message"].as_str().unwrap();
        assert!(
            m.contains(&abs) && m.contains("not added in this project") && m.contains("again"),
            "{m}"
        );
        assert_eq!(left_out[0]["chat_id"], id.as_str());
        let sent = prompt_text(fake.chat_bodies().last().unwrap());
        assert!(!sent.contains("SECRET-ONE"), "{sent}");
        assert!(sent.contains("project text"), "{sent}");
    }

    // Added again by the user: sent, counted, and no notice.
    b.ok(json!({"action": "context_add", "path": abs, "content": "SECRET-ONE\n"}));
    let estimate = b.ok(json!({"action": "estimate_tokens"}));
    let files = estimate["files"].as_array().unwrap();
    assert!(
        files.iter().any(|f| f["path"] == abs.as_str()),
        "{estimate}"
    );
    fake.push_sse(response("", "An answer.", vec![]));
    let stream = b.turn_stream("third?");
    assert!(
        notices(&stream, "external_left_out").is_empty(),
        "{stream:?}"
    );
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(sent.contains("SECRET-ONE"), "{sent}");
}

#[test]
fn acp_never_sends_an_external_entry_left_out_and_says_so() {
    let (env, fake, id, abs) = planted_external("SECRET-ACP\n");
    fake.push_sse(response("", "An answer.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        use agent_client_protocol::v1::schema::LoadSessionRequest;
        cx.send_request(LoadSessionRequest::new(id.clone(), &env.project))
            .block_task()
            .await?;
        ed.clear();
        prompt(&cx, &id, vec![say("What is in my context?")]).await?;
        Ok(())
    }))
    .unwrap();
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(!sent.contains("SECRET-ACP"), "{sent}");
    let shown = ed.text(&id, "agent_message_chunk");
    assert!(
        shown.contains(&abs) && shown.contains("left out of this send"),
        "{shown}"
    );
}

#[test]
fn a_refreshed_file_with_invisible_characters_is_named_on_the_send() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.rs", "fn main() {}\n");
    fake.push_sse(response("", "An answer.", vec![]));
    let stream = b.turn_stream("clean?");
    assert!(
        !stream.iter().any(|m| m["type"] == "notice"),
        "a clean context gives no notice: {stream:?}"
    );

    // The file changes on disk and is refreshed: the refresh names nothing.
    env.write("a.rs", "fn main() {}\nlet admin = \"user\u{202E}\";\n");
    b.ok(json!({"action": "sync_context", "path": "a.rs"}));
    fake.push_sse(response("", "An answer.", vec![]));
    let stream = b.turn_stream("and now?");
    assert_eq!(stream.last().unwrap()["type"], "done", "{stream:?}");
    let found = notices(&stream, "invisible");
    assert_eq!(found.len(), 1, "{stream:?}");
    let m = found[0]["message"].as_str().unwrap();
    assert!(
        m.contains("a.rs:2: invisible characters: U+202E (right-to-left override)"),
        "{m}"
    );
    assert_eq!(found[0]["chat_id"], id.as_str());
    // The notice comes before the answer.
    let at = |t: &str| stream.iter().position(|m| m["type"] == t).unwrap();
    assert!(at("notice") < at("chunk"), "{stream:?}");
}

#[test]
fn acp_shows_the_invisible_characters_of_a_prompt_as_an_agent_message() {
    let (env, fake) = fake_env(json!({}));
    let text = "# Notes\nsay \u{2066}hi\u{2069}\n";
    env.write("notes.md", text);
    fake.push_sse(response("", "An answer.", vec![]));
    let ed = Editor::new(false);
    let uri = file_uri(&env.project.join("notes.md"));
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![resource(&uri, text), say("Read it")]).await?;
        Ok(())
    }))
    .unwrap();
    let shown = ed.text(&sid, "agent_message_chunk");
    assert!(
        shown.contains("notes.md:2: invisible characters: U+2066"),
        "{shown}"
    );
    let answer_at = shown.find("An answer.").unwrap();
    assert!(shown.find("notes.md:2").unwrap() < answer_at, "{shown}");
}
