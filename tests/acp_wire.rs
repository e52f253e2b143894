//! `bb7 acp` on the wire, line by line: malformed JSON-RPC gets the standard errors
//! and the agent keeps serving; a proposal's `tool_call` says `pending` itself.

mod acp_raw;
mod common;

use acp_raw::Agent;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

#[test]
fn malformed_json_rpc_gets_standard_errors_and_the_agent_keeps_serving() {
    let (env, _fake) = fake_env(json!({}));
    let mut a = Agent::start(&env);
    let mut seen = Vec::new();
    a.send("{this is not json");
    let e = a.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e["id"], Value::Null);
    a.send(r#"{"jsonrpc":"2.0","id":1}"#);
    let e = a.next();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    a.send(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}"#);
    let r = a.response(json!(2), &mut seen);
    assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    a.send(r#"{"jsonrpc":"2.0","id":3,"method":"no/such_method","params":{}}"#);
    let e = a.response(json!(3), &mut seen);
    assert_eq!(e["error"]["code"], -32601, "{e}");
    a.send(r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":5}}"#);
    let e = a.response(json!(4), &mut seen);
    assert_eq!(e["error"]["code"], -32602, "{e}");
    a.send(r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#);
    let e = a.response(json!(5), &mut seen);
    assert!(e["error"]["code"].as_i64().is_some(), "{e}");
    let new = json!({"jsonrpc":"2.0","id":6,"method":"session/new",
                     "params":{"cwd": env.project, "mcpServers": []}});
    a.send(&new.to_string());
    let r = a.response(json!(6), &mut seen);
    assert!(r["result"]["sessionId"].as_str().is_some(), "{r}");
}

#[test]
fn invalid_utf8_and_an_over_long_line_get_a_parse_error_and_the_agent_serves_on() {
    let (env, _fake) = fake_env(json!({}));
    let mut a = Agent::start(&env);
    let mut seen = Vec::new();
    a.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    a.response(json!(1), &mut seen);
    let new = json!({"jsonrpc":"2.0","id":2,"method":"session/new",
                     "params":{"cwd": env.project, "mcpServers": []}});
    a.send(&new.to_string());
    let sid = a.response(json!(2), &mut seen)["result"]["sessionId"].clone();
    a.send_bytes(
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/list\",\"params\":{\"x\":\"\xff\"}}",
    );
    let e = a.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e["id"], Value::Null);
    // Over the 64 MiB line limit.
    let long = vec![b'x'; 64 * 1024 * 1024 + 1];
    a.send_bytes(&long);
    let e = a.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    // The open session serves on.
    let list = json!({"jsonrpc":"2.0","id":4,"method":"session/list",
                      "params":{"cwd": env.project}});
    a.send(&list.to_string());
    let r = a.response(json!(4), &mut seen);
    let ids: Vec<Value> = r["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].clone())
        .collect();
    assert!(ids.contains(&sid) || ids.is_empty(), "{r}");
    let set = json!({"jsonrpc":"2.0","id":5,"method":"session/set_config_option",
                     "params":{"sessionId": sid, "configId": "tools", "value": "ask"}});
    a.send(&set.to_string());
    let r = a.response(json!(5), &mut seen);
    assert!(r.get("result").is_some(), "{r}");
}

#[test]
fn a_proposal_on_the_wire_is_a_pending_edit_then_a_permission_request() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "one\n");
    fake.push_sse(response(
        "",
        "Done.",
        vec![
            ("write_file", json!({"path": "a.txt", "content": "ONE\n"})),
            ("write_file", json!({"path": "new.txt", "content": "new\n"})),
        ],
    ));
    let mut a = Agent::start(&env);
    let mut seen = Vec::new();
    a.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":true}}}"#);
    a.response(json!(1), &mut seen);
    let new = json!({"jsonrpc":"2.0","id":2,"method":"session/new",
                     "params":{"cwd": env.project, "mcpServers": []}});
    a.send(&new.to_string());
    let sid = a.response(json!(2), &mut seen)["result"]["sessionId"].clone();
    let uri = format!("file://{}", env.project.join("a.txt").display());
    let p = json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId": sid,
        "prompt":[{"type":"text","text":"Shout"},{"type":"resource_link","uri": uri,"name":"a.txt"}]}});
    a.send(&p.to_string());
    // Up to the permission request.
    let perm = loop {
        let v = a.next();
        if v["method"] == "session/request_permission" {
            break v;
        }
        assert!(v.get("result").is_none() && v.get("error").is_none(), "{v}");
        seen.push(v);
    };
    let call = seen
        .iter()
        .find(|v| v["params"]["update"]["sessionUpdate"] == "tool_call")
        .expect("a tool_call before the permission request");
    let update = &call["params"]["update"];
    assert_eq!(update["status"], "pending", "{update}");
    assert_eq!(update["kind"], "edit");
    assert_eq!(update["content"][0]["oldText"], "one\n");
    assert_eq!(
        perm["params"]["toolCall"]["toolCallId"],
        update["toolCallId"]
    );
    let answer = json!({"jsonrpc":"2.0","id": perm["id"],
                        "result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}});
    a.send(&answer.to_string());
    let r = a.response(json!(3), &mut seen);
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(env.read("a.txt"), "ONE\n");
    assert_eq!(
        env.read("new.txt"),
        "new\n",
        "allowed always: not asked again"
    );
    let new_file = seen
        .iter()
        .filter(|v| v["params"]["update"]["sessionUpdate"] == "tool_call")
        .nth(1)
        .expect("the new file's tool_call");
    let diff = &new_file["params"]["update"]["content"][0];
    assert!(diff.get("oldText").is_some_and(Value::is_null), "{diff}");
    assert_eq!(new_file["params"]["update"]["status"], "pending");
    // Even a client that offers a terminal gets no terminal request.
    assert!(
        seen.iter()
            .all(|v| !v["method"].as_str().unwrap_or("").starts_with("terminal/")),
        "{seen:?}"
    );
}
