//! A context journal whose replay stopped early is told when a real client loads the
//! chat: codecompanion.nvim's own `initialize` and `session/load` requests, as
//! recorded in tests/fixtures/acp-clients/codecompanion-19.22.0-resume.jsonl (only the
//! session id and the project directory are this test's), get the warning as an agent
//! message (docs/PROTOCOL.md, ACP `session/load`).

mod acp_raw;
mod common;

use common::fake_env;
use common::reopen::{chat_with_journal, forget_active, plant_bad_second_line};
use serde_json::{Value, json};

/// The recorded client request with `method`, as codecompanion sent it.
fn recorded(method: &str) -> Value {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/acp-clients/codecompanion-19.22.0-resume.jsonl"
    );
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["dir"] == "client->agent" && v["msg"]["method"] == method)
        .unwrap_or_else(|| panic!("the recording has {method}"))["msg"]
        .clone()
}

fn told(v: &Value) -> bool {
    v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        && v["params"]["update"]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("context journal") && t.contains("line 2"))
}

#[test]
fn codecompanions_session_load_is_told_the_stopped_journal() {
    let (env, _fake) = fake_env(json!({}));
    let (chat, journal) = chat_with_journal(&env);
    plant_bad_second_line(&journal);
    forget_active(&env);
    let mut agent = acp_raw::Agent::start(&env);
    let init = recorded("initialize");
    agent.send(&init.to_string());
    assert!(agent.response(init["id"].clone(), &mut Vec::new())["result"].is_object());
    let mut load = recorded("session/load");
    load["params"]["sessionId"] = json!(chat);
    load["params"]["cwd"] = json!(env.project);
    agent.send(&load.to_string());
    let mut seen = Vec::new();
    let answer = agent.response(load["id"].clone(), &mut seen);
    assert!(answer["result"].is_object(), "{answer}");
    // Told after the history: before the answer, or in the messages right after it.
    while !seen.iter().any(told) {
        seen.push(agent.next());
    }
    assert_eq!(seen.iter().filter(|v| told(v)).count(), 1, "{seen:?}");
}
