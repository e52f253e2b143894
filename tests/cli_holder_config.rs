//! A process holding a chat reads `config.json` again when it changed: after the user
//! fixes the config as an error told them, the commands it serves for other front-ends
//! meet the fixed config instead of repeating the old advice.

mod cli_support;
mod common;

use cli_support::*;
use common::Env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn a_holder_serves_forwarded_commands_with_the_config_as_fixed() {
    let env = Env::new();
    let (remote, local) = (FakeModel::start(), FakeModel::start());
    // `local` mode without a local provider: a turn is refused with the setting to add.
    env.write_config(json!({"api_key": "k", "base_url": remote.url,
                            "default_model": "fake/model", "agent_mode": "local",
                            "retry_backoff_ms": 10}));
    let (mut editor, _id) = env.with_chat();
    let err = fails(&env, &["ask", "hello"]);
    assert!(err.contains("set providers.local.base_url"), "{err}");

    // The user adds it; the holder (still running) serves the next turn with it.
    env.write_config(json!({"api_key": "k", "base_url": remote.url,
                            "default_model": "fake/model", "agent_mode": "local",
                            "providers": {"local": {"base_url": local.url, "model": "small"}},
                            "retry_backoff_ms": 10}));
    local.push_sse(response("", "Answered by the local server.\n", vec![]));
    let o = ok(&env, &["ask", "hello"]);
    assert_eq!(stdout(&o), "Answered by the local server.\n");
    assert_eq!(local.chat_bodies().len(), 1);
    assert!(remote.chat_bodies().is_empty());
    editor.ok(json!({"action": "ping"}));
}
