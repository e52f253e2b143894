//! The context gauge through the binary: `estimate_tokens` carries the next request's
//! share of the model's window (from the models list's `context_length` or the
//! provider's `context_window`), says "window unknown" when none is known, warns from
//! 80%, and a send that fills the window is refused before anything is sent, naming
//! the largest context files.

mod cli_support;
mod common;

use common::fake_model::{Reply, response};
use common::{Bb7, fake_env};
use serde_json::{Value, json};

const MODEL: &str = "test/small-window";

/// `n` numbered lines of Python.
fn source(name: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("def {name}_{i}(x):  # {name}\n"))
        .collect()
}

fn estimate(b: &mut Bb7) -> Value {
    let e = b.request(json!({"action": "estimate_tokens"}));
    assert_eq!(e["type"], "token_estimate", "{e}");
    e
}

fn models_with_window(window: u64) -> Reply {
    Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{"id": MODEL, "name": MODEL, "context_length": window,
                               "pricing": {"prompt": "0", "completion": "0"}}]})
        .to_string(),
    }
}

#[test]
fn the_gauge_warns_from_80_percent_and_a_full_window_refuses_the_send_unbilled() {
    let (env, fake) = fake_env(json!({"default_model": MODEL}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "small.py", &source("s", 40));
    // No models list yet: the window is unknown and nothing is guessed.
    let e = estimate(&mut b);
    assert_eq!(e["context_window"], Value::Null, "{e}");
    assert_eq!(e["context_percent"], Value::Null);
    assert_eq!(e["context_level"], "unknown");
    let gauge = e["context_gauge"].as_str().unwrap();
    assert!(
        gauge.ends_with("(window unknown)") && gauge.starts_with('~'),
        "{gauge}"
    );
    let base = e["total"].as_u64().unwrap();

    // A window that the chat fills to about 85%.
    let window = base * 100 / 85;
    fake.set_models(models_with_window(window));
    b.ok(json!({"action": "get_models"}));
    let e = estimate(&mut b);
    assert_eq!(e["context_window"], window, "{e}");
    let percent = e["context_percent"].as_u64().unwrap();
    assert!((80..100).contains(&percent), "{e}");
    assert_eq!(e["context_level"], "warning");
    assert!(
        e["context_gauge"]
            .as_str()
            .unwrap()
            .ends_with(&format!("({percent}%)")),
        "{e}"
    );
    // Still under the window: the send goes out.
    fake.push_sse(response("", "Fine.", vec![]));
    assert_eq!(b.turn("Hi")["type"], "done");
    let sent = fake.chat_bodies().len();

    // A large file pushes it over.
    env.add(&mut b, "big.py", &source("big", 400));
    let e = estimate(&mut b);
    assert_eq!(e["context_level"], "full", "{e}");
    assert!(e["context_percent"].as_u64().unwrap() >= 100);
    let err = b.err(json!({"action": "send", "content": "Explain."}));
    let msg = err["message"].as_str().unwrap();
    assert!(
        msg.contains("context window") && msg.contains("nothing was sent"),
        "{msg}"
    );
    let big = msg.find("big.py").expect(msg);
    let small = msg.find("small.py").expect(msg);
    assert!(big < small, "the largest file is named first: {msg}");
    assert_eq!(fake.chat_bodies().len(), sent, "no request was made");
    let users = env.chat_json(&id)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 1, "the refused message was not saved");

    // Dropping the file makes room again.
    b.ok(json!({"action": "context_remove", "path": "big.py"}));
    assert_ne!(estimate(&mut b)["context_level"], "full");
}

#[test]
fn the_configured_context_window_is_the_window_and_a_piped_bb7_status_stays_quiet() {
    let (env, _fake) = fake_env(json!({"default_model": MODEL,
                                       "providers": {"remote": {"context_window": 200000}}}));
    let (mut b, _id) = env.with_chat();
    env.add(&mut b, "a.py", &source("a", 40));
    let e = estimate(&mut b);
    assert_eq!(e["context_window"], 200000, "{e}");
    assert_eq!(e["context_level"], "ok");
    let gauge = e["context_gauge"].as_str().unwrap().to_owned();
    assert!(
        gauge.contains("/200k (") && gauge.ends_with("%)"),
        "{gauge}"
    );
    drop(b);
    let o = cli_support::ok(&env, &["status"]);
    // Piped, stderr stays quiet for scripts: the gauge is for a terminal.
    let stderr = cli_support::lossy(&o.stderr);
    assert!(!stderr.contains("context"), "{stderr}");
    let stdout = cli_support::lossy(&o.stdout);
    assert!(
        stdout.contains("a.py") && !stdout.contains("context"),
        "{stdout}"
    );
}

#[test]
fn the_top_level_context_window_serves_the_remote_model() {
    let (env, _fake) = fake_env(json!({"default_model": MODEL, "context_window": 8000}));
    let (mut b, _id) = env.with_chat();
    let e = estimate(&mut b);
    assert_eq!(e["context_window"], 8000, "{e}");
    assert!(
        e["context_gauge"].as_str().unwrap().contains("/8k ("),
        "{e}"
    );
}
