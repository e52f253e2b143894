//! A holder's guests are bounded: connections beyond `guests::MAX_GUESTS` are closed
//! at once, and a flood of idle connections neither spins the accept loop nor starves
//! the holder's own requests (its own file opens never meet EMFILE). Its own file, so
//! that its 1,100 descriptors do not share a test process with other tests.

mod cli_support;
mod common;

use std::os::unix::net::UnixStream;

use cli_support::*;
use common::fake_env;
use serde_json::json;

#[test]
fn idle_connections_beyond_the_cap_do_not_starve_the_holder() {
    let (env, _fake) = fake_env(json!({}));
    let (mut editor, id) = env.with_chat();
    // The socket is bound right after the reply to `chat_new`: one more round trip.
    editor.ok(json!({"action": "ping"}));
    let sock = env.chat_dir(&id).join("holder.sock");
    let mut idle = Vec::new();
    for _ in 0..1100 {
        match UnixStream::connect(&sock) {
            Ok(s) => idle.push(s),
            Err(_) => break,
        }
    }
    assert!(idle.len() > 100, "the holder's socket takes connections");
    for i in 0..20 {
        let r = editor
            .ok(json!({"action": "context_add", "path": format!("n{i}.txt"), "content": "x\n"}));
        assert_eq!(r["type"], "ok");
    }
    drop(idle);
    ok(&env, &["status"]);
}
