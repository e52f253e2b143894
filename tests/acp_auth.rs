//! `bb7 acp` authentication as the ACP Registry requires it: an `agent` method, or a
//! `terminal` one (`bb7 acp --login`) when the client can run one; `authenticate`
//! succeeds when a key is configured; without one `session/new` answers the schema's
//! auth-required error.

mod acp_raw;
mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use acp_raw::Agent;
use serde_json::{Value, json};

/// A project whose config names no key (the default endpoint is OpenRouter's).
fn keyless() -> common::Env {
    let env = common::Env::new();
    env.write_config(json!({"default_model": "fake/model"}));
    env
}

#[test]
fn without_a_key_the_agent_method_is_offered_and_session_new_asks_for_auth() {
    let env = keyless();
    let mut a = Agent::start(&env);
    let init = a.call(1, "initialize", json!({"protocolVersion": 1}));
    let methods = init["result"]["authMethods"].as_array().unwrap().clone();
    assert_eq!(methods.len(), 1, "{init}");
    assert_eq!(methods[0]["id"], "bb7-config");
    assert!(
        methods[0].get("type").is_none_or(|t| t == "agent"),
        "{init}"
    );
    let auth = a.call(2, "authenticate", json!({"methodId": "bb7-config"}));
    assert_eq!(auth["error"]["code"], -32000, "{auth}");
    let new = a.call(
        3,
        "session/new",
        json!({"cwd": env.project, "mcpServers": []}),
    );
    assert_eq!(new["error"]["code"], -32000, "{new}");
    assert!(
        new["error"]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("No API key"),
        "{new}"
    );
    assert!(!env.project.join(".bb7").exists(), "nothing made");
}

#[test]
fn a_terminal_client_gets_the_login_method_and_the_key_it_stores_authenticates() {
    let env = keyless();
    {
        let mut a = Agent::start(&env);
        let init = a.call(
            1,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": true}}}),
        );
        let m = &init["result"]["authMethods"][0];
        assert_eq!(m["type"], "terminal", "{init}");
        assert_eq!(m["id"], "bb7-login");
        assert_eq!(m["args"], json!(["--login"]));
    }
    // What the client runs in its terminal: the agent's command with the method's args.
    let mut login = Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args(["acp", "--login"])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    login
        .stdin
        .take()
        .unwrap()
        .write_all(b"sk-or-test\n")
        .unwrap();
    let out = login.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("sk-or-test"),
        "the key is never echoed: {err}"
    );
    let path = env.home.join(".config/bb7/config.json");
    let cfg: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(cfg["api_key"], "sk-or-test");
    assert_eq!(cfg["default_model"], "fake/model", "other keys kept");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let mut a = Agent::start(&env);
    a.call(1, "initialize", json!({"protocolVersion": 1}));
    let auth = a.call(2, "authenticate", json!({"methodId": "bb7-config"}));
    assert!(auth.get("result").is_some(), "{auth}");
    let new = a.call(
        3,
        "session/new",
        json!({"cwd": env.project, "mcpServers": []}),
    );
    assert!(new["result"]["sessionId"].is_string(), "{new}");
}

#[test]
fn a_local_endpoint_needs_no_key() {
    let env = common::Env::new();
    env.write_config(json!({"base_url": "http://127.0.0.1:9/v1", "default_model": "m"}));
    let mut a = Agent::start(&env);
    a.call(1, "initialize", json!({"protocolVersion": 1}));
    let auth = a.call(2, "authenticate", json!({"methodId": "bb7-config"}));
    assert!(auth.get("result").is_some(), "{auth}");
}
