//! The validation command does not run code the model just wrote into the files it
//! runs or reads: when the local edits change such a file (a script the command
//! names, one that script names, a tool's build file), the check does not run, the
//! user is told which files in the `attempt` message, the chat's events record it
//! (`validation.refused`), and the turn moves to remote (README, "Local, remote and
//! hybrid").

mod common;

use common::fake_model::*;
use common::{Bb7, Env};
use serde_json::{Value, json};

const CHECK: &str = "set -e\nsh ci/helper.sh\n";

/// A chat whose validation command first leaves a mark (in a directory the user's
/// `hybrid_validate_writable` opens), then runs the project's `ci/check.sh`; the
/// local model writes `path`.
fn setup(path: &str) -> (Env, FakeModel, FakeModel, std::path::PathBuf, Bb7) {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    let out = env.home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    env.write("ci/check.sh", CHECK);
    env.write("ci/helper.sh", "exit 0\n");
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "qwen2.5-coder:14b"},
            "remote": {"base_url": remote.url, "model": "anthropic/claude-sonnet-4.5", "api_key": "rk"}
        },
        "agent_mode": "hybrid_auto",
        "hybrid_validate_command": format!("touch {}/ran; sh ./ci/check.sh", out.display()),
        "hybrid_validate_writable": [out],
        "retry_backoff_ms": 10
    }));
    local.push_sse(response(
        "",
        "local edit",
        vec![(
            "write_file",
            json!({"path": path, "content": "exit 0 # anything passes\n"}),
        )],
    ));
    remote.push_sse(response("", "remote answer", vec![]));
    let mut b = Bb7::spawn(&env.home, &env.project, &[("BB7_DEBUG", "0")]);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    (env, local, remote, out, b)
}

fn events(b: &mut Bb7) -> Vec<Value> {
    let page = b.ok(json!({"action": "events_get", "after": 0}));
    page["events"].as_array().unwrap().clone()
}

#[test]
fn a_script_the_command_runs_changed_by_the_model_is_named_and_not_run() {
    for changed in ["ci/check.sh", "ci/helper.sh"] {
        let (_env, _l, _r, out, mut b) = setup(changed);
        let stream = b.turn_stream("change it");
        let end = stream.last().unwrap();
        assert_eq!(end["type"], "done", "{end}");
        assert_eq!(end["provider"], "remote", "{end}");
        assert_eq!(end["fallback_reason"], "validation_failed", "{end}");
        let attempt = stream
            .iter()
            .find(|m| m["type"] == "attempt")
            .expect("an attempt message");
        let detail = attempt["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with("not run") && detail.contains(changed),
            "the user is told which file: {attempt}"
        );
        assert!(!out.join("ran").exists(), "the command ran");
        let events = events(&mut b);
        let refused = events
            .iter()
            .find(|e| e["type"] == "validation.refused")
            .unwrap_or_else(|| panic!("recorded: {events:#?}"));
        assert_eq!(refused["data"]["paths"], json!([changed]), "{refused}");
    }
}

#[test]
fn a_change_to_a_file_the_command_does_not_name_is_checked() {
    let (_env, _l, _r, out, mut b) = setup("src/lib.sh");
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "local", "the check ran and passed: {end}");
    assert!(out.join("ran").exists(), "the command ran");
    assert!(
        events(&mut b)
            .iter()
            .all(|e| e["type"] != "validation.refused")
    );
}
