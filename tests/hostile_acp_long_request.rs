//! `bb7 acp` answers a request over the 64 MiB line limit with the request's own id
//! (read from the line's start), so a client waiting on it gets its answer, and the
//! session serves on (docs/PROTOCOL.md, "bb7 acp").

mod acp_raw;
mod common;

use acp_raw::Agent;
use common::fake_env;
use serde_json::json;

/// 70 MB: over the 64 MiB line limit.
const LONG: usize = 70 * 1000 * 1000;

#[test]
fn a_request_over_the_line_limit_is_answered_with_its_id_and_the_session_serves_on() {
    let (env, _fake) = fake_env(json!({}));
    let mut a = Agent::start(&env);
    let mut seen = Vec::new();
    a.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    a.response(json!(1), &mut seen);
    let new = json!({"jsonrpc":"2.0","id":2,"method":"session/new",
                     "params":{"cwd": env.project, "mcpServers": []}});
    a.send(&new.to_string());
    let sid = a.response(json!(2), &mut seen)["result"]["sessionId"].clone();
    let sid_text = sid.as_str().unwrap().to_owned();

    // A prompt whose text is 70 MB, id first as clients write it.
    let head = format!(
        r#"{{"jsonrpc":"2.0","id":"big-3","method":"session/prompt","params":{{"sessionId":"{sid_text}","prompt":[{{"type":"text","text":""#
    );
    a.send_long(&head, b'x', LONG, r#""}]}}"#);
    let e = a.response(json!("big-3"), &mut seen);
    assert_eq!(e["error"]["code"], -32600, "{e}");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("64 MiB"), "{e}");

    // The same with a numeric id.
    a.send_long(
        r#"{"jsonrpc":"2.0","id":4,"method":"session/list","params":{"x":""#,
        b'y',
        LONG,
        r#""}}"#,
    );
    let e = a.response(json!(4), &mut seen);
    assert_eq!(e["error"]["code"], -32600, "{e}");

    // An over-long line without an id before the long part is still a parse error.
    a.send_long(
        r#"{"jsonrpc":"2.0","params":{"x":""#,
        b'z',
        LONG,
        r#""},"id":5}"#,
    );
    let e = a.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert!(e["id"].is_null(), "{e}");

    // The session serves on.
    let set = json!({"jsonrpc":"2.0","id":6,"method":"session/set_config_option",
                     "params":{"sessionId": sid, "configId": "tools", "value": "ask"}});
    a.send(&set.to_string());
    let r = a.response(json!(6), &mut seen);
    assert!(r.get("result").is_some(), "{r}");
    assert!(
        seen.iter().all(|m| m.get("error").is_none()),
        "no other error: {seen:?}"
    );
}
