//! The local provider's server is down: `hybrid_auto` falls back at once (a refused
//! connection is not retried with backoff) and says "local server not reachable at …",
//! not "timeout"; `/mode local` with no local provider configured is refused with the
//! setting to add.

mod cli_support;
mod common;

use cli_support::*;
use common::Env;
use common::fake_model::*;
use serde_json::json;

/// A `http://127.0.0.1:PORT/v1` where nothing listens: a port the system gave out and
/// took back.
fn closed_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/v1")
}

#[test]
fn hybrid_with_the_local_server_down_falls_back_at_once_and_names_it() {
    let env = Env::new();
    let remote = FakeModel::start();
    let local = closed_url();
    env.write_config(json!({
        "providers": {"local": {"base_url": local, "model": "small"},
                      "remote": {"base_url": remote.url, "model": "big", "api_key": "rk"}},
        "agent_mode": "hybrid_auto",
        // Long enough that a retried refusal would show as retries, then a timeout.
        "retry_backoff_ms": 2000,
        "hybrid_remote_on_timeout_ms": 60000
    }));
    project_with(&env, &[("a.txt", "a\n")]);
    remote.push_sse(response("", "The remote answer.\n", vec![]));
    let o = ok(&env, &["ask", "hello"]);
    assert_eq!(stdout(&o), "The remote answer.\n");
    let err = stderr(&o);
    assert!(
        err.contains(&format!("local server not reachable at {local}")),
        "{err}"
    );
    assert!(!err.contains("retrying"), "{err}");
    assert!(!err.contains("timeout"), "{err}");
    assert!(err.contains("local_error"), "{err}");
    assert_eq!(remote.chat_bodies().len(), 1);
}

#[test]
fn slash_mode_local_is_refused_without_a_local_provider() {
    let env = Env::new();
    let remote = FakeModel::start();
    env.write_config(json!({"api_key": "k", "base_url": remote.url, "default_model": "m"}));
    project_with(&env, &[("a.txt", "a\n")]);
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("/mode local\r");
    t.expect("needs a local provider: set providers.local.base_url");
    t.expect("bb7> ");
    t.type_keys("/mode hybrid_auto\r");
    t.expect("needs a local provider");
    t.expect("bb7> ");
    t.type_keys("/mode\r");
    t.expect("remote");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());
}

/// `local` mode has no fallback: the turn fails, and the error names the local server
/// and its address (as the hybrid fallback's note does), not a remote API.
#[test]
fn local_mode_with_the_server_down_names_the_local_server() {
    let env = Env::new();
    let local = closed_url();
    env.write_config(json!({
        "providers": {"local": {"base_url": local, "model": "small"}},
        "agent_mode": "local",
        "retry_backoff_ms": 2000
    }));
    project_with(&env, &[("a.txt", "a\n")]);
    let err = fails(&env, &["ask", "hello"]);
    assert!(
        err.contains(&format!("local server not reachable at {local}")),
        "{err}"
    );
    assert!(!err.contains("Cannot reach the model API"), "{err}");
    assert!(!err.contains("retrying"), "{err}");
    // The chat keeps the same words for a later look (`bb7 show`).
    let shown = stdout(&ok(&env, &["show"]));
    assert!(shown.contains("local server not reachable at"), "{shown}");
    assert!(!shown.contains("Cannot reach the model API"), "{shown}");
}
