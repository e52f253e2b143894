//! A tool approval asked on the terminal (`bb7 ask --tools ask`) whose turn ends
//! elsewhere while the question waits: the editor holding the chat cancels the turn
//! by its `peer:` id. The question is withdrawn with a note and the command ends as
//! a stopped turn does, without a key typed; the terminal reads nothing more.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use common::peers::until;
use serde_json::json;

#[test]
fn an_approval_question_is_withdrawn_when_its_turn_is_cancelled_elsewhere() {
    let (env, fake) = fake_env(json!({}));
    env.write("secret.txt", "hidden\n");
    let (mut editor, _id) = env.with_chat();
    fake.push_sse(response(
        "",
        "",
        vec![("read_file", json!({"path": "secret.txt"}))],
    ));
    let mut t = Terminal::start(&env, &["ask", "--tools", "ask", "look", "around"]);
    let started = until(&mut editor, |m| {
        m["type"] == "peer_change" && m["status"] == "started"
    });
    let peer = started.last().unwrap()["peer_request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    t.expect("Allow? [y/N]");
    let ack = editor.request(json!({"action": "cancel", "target_request_id": peer}));
    assert_eq!(ack["type"], "ok", "{ack}");
    t.expect("the question is withdrawn: the turn ended before it was answered");
    let status = t.wait();
    assert_eq!(status.code(), Some(130), "{}", t.screen());
    // Nothing was read for the model: the only request is the first one.
    assert_eq!(fake.chat_bodies().len(), 1);
}
