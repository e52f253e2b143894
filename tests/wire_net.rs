//! Network hygiene: a redirect never takes the key, the headers or the prompt to
//! another host; no body is read without bound (an error body, the model list, one
//! SSE line); a server that never answers ends the send; no URL secret reaches an
//! eval trace.

mod common;

use common::fake_model::*;
use common::{Env, fake_env};
use serde_json::json;

#[test]
fn a_redirect_to_another_host_is_not_followed() {
    let other = FakeModel::start();
    let (env, fake) = fake_env(json!({"providers": {"remote": {
        "headers": {"x-api-key": "HEADERSECRET"}
    }}}));
    // The same machine under another name is another host to HTTP.
    let elsewhere = other.url.replace("127.0.0.1", "localhost") + "/chat/completions";
    for _ in 0..4 {
        fake.push(Reply::Http {
            status: 307,
            headers: vec![("Location".into(), elsewhere.clone())],
            body: String::new(),
        });
    }
    let (mut b, _id) = env.with_chat();
    let end = b.turn("the prompt");
    assert_eq!(end["type"], "error", "{end}");
    let m = end["message"].as_str().unwrap();
    assert!(
        m.contains("redirected the request to http://localhost:")
            && m.contains("were not sent there"),
        "{m}"
    );
    assert!(other.requests().is_empty(), "the redirect was followed");
    assert_eq!(fake.chat_bodies().len(), 1, "a redirect is not retried");
}

#[test]
fn endless_bodies_are_cut_with_a_clear_error() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    // An error body without end: its start gives the message, the rest is never read.
    for _ in 0..4 {
        fake.push(Reply::Endless {
            head: "HTTP/1.1 500 X\r\nContent-Type: text/plain\r\n\r\n".into(),
            fill: b"upstream exploded ".repeat(4096),
        });
    }
    let end = b.turn("hi");
    assert_eq!(end["type"], "error", "{end}");
    let m = end["message"].as_str().unwrap();
    assert!(
        m.contains("HTTP 500") && m.contains("upstream exploded"),
        "{m}"
    );
    // One SSE line without end.
    fake.push(Reply::Endless {
        head: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"".into(),
        fill: b"x".repeat(1 << 16),
    });
    let end = b.turn("hi");
    assert_eq!(end["type"], "error", "{end}");
    let m = end["message"].as_str().unwrap();
    assert!(m.contains("stream event over 32 MiB"), "{m}");
    // A model list without end.
    fake.set_models(Reply::Endless {
        head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"data\":[".into(),
        fill: b"{\"id\":\"m\"},".repeat(8192),
    });
    let e = b.err(json!({"action": "get_models", "refresh": true}));
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("over 32 MiB"), "{m}");
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
}

#[test]
fn an_eval_recording_keeps_no_secret_of_the_base_url() {
    let env = Env::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    env.write_config(json!({
        "providers": {"remote": {
            "base_url": format!("http://user:PASSWORD@127.0.0.1:{port}/v1?key=QUERYKEY"),
            "api_key": "k"
        }},
        "default_model": "vendor/model",
        "retry_backoff_ms": 10
    }));
    let traces = env.home.join("traces");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args([
            "eval", "--mode", "remote", "--task", "js-const", "--json", "--record",
        ])
        .arg(&traces)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    let trace = std::fs::read_to_string(traces.join("remote/js-const.json")).unwrap_or_default();
    assert!(
        trace.contains("could not reach"),
        "no trace of the failure: {trace}"
    );
    for text in [
        trace,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ] {
        assert!(
            !text.contains("QUERYKEY") && !text.contains("PASSWORD"),
            "{text}"
        );
    }
}
