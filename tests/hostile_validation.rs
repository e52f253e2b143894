//! `hybrid_validate_command` runs on the user's terms: only when the user's own config
//! or a client of this process chose `hybrid_auto` (a chat file saying so runs
//! nothing), in a 0700 scratch copy removed afterwards (and a crashed bb7's copy
//! removed at the next run), with bb7's and the providers' variables stripped from its
//! environment, and in its own process group, killed whole when the check ends.

mod common;

use common::fake_model::*;
use common::{Bb7, Env};
use serde_json::{Value, json};

const SRC: &str = "fn main() {\n    println!(\"one\");\n}\n";

fn config(env: &Env, local: &FakeModel, remote: &FakeModel, mode: &str, command: &str) {
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "qwen2.5-coder:14b"},
            "remote": {"base_url": remote.url, "model": "anthropic/claude-sonnet-4.5", "api_key": "rk"}
        },
        "agent_mode": mode,
        "hybrid_validate_command": command,
        "retry_backoff_ms": 10
    }));
}

fn local_edit(local: &FakeModel) {
    let four = "fn main() {\n    println!(\"four\");\n}\n";
    local.push_sse(response(
        "",
        "local edit",
        vec![(
            "write_file",
            json!({"path": "src/main.rs", "content": four}),
        )],
    ));
}

fn spawn(env: &Env, tmp: &std::path::Path) -> Bb7 {
    Bb7::spawn(
        &env.home,
        &env.project,
        &[
            ("TMPDIR", tmp.to_str().unwrap()),
            ("OPENROUTER_API_KEY", "sk-or-secret"),
            ("BB7_DEBUG", "0"),
            ("KEPT_VARIABLE", "kept"),
        ],
    )
}

#[test]
fn a_chat_file_saying_hybrid_auto_runs_no_command() {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    let marker = env.home.join("ran");
    config(
        &env,
        &local,
        &remote,
        "local",
        &format!("touch {}", marker.display()),
    );
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SRC);
    b.close();
    // Planted: the chat file raises the chat to hybrid_auto.
    let path = env.chat_dir(&chat).join("chat.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    c["agent_mode"] = json!("hybrid_auto");
    std::fs::write(&path, serde_json::to_string(&c).unwrap()).unwrap();

    let tmp = env.home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut b = spawn(&env, &tmp);
    b.ok(json!({"action": "init", "project_root": env.project}));
    local_edit(&local);
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    assert!(
        !marker.exists(),
        "a planted chat file made bb7 run the validation command"
    );

    // The user's own choice of hybrid_auto in this session runs it.
    b.ok(json!({"action": "save_chat_settings", "agent_mode": "hybrid_auto"}));
    local_edit(&local);
    let end = b.turn("again");
    assert_eq!(end["type"], "done", "{end}");
    assert!(
        marker.exists(),
        "the user's own hybrid_auto runs the command"
    );
}

#[test]
fn the_command_runs_stripped_private_and_leaves_nothing_running() {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    let out = env.home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let o = out.display();
    let command = format!(
        "env > {o}/env.txt; stat -c %a . > {o}/mode.txt; pwd > {o}/pwd.txt; \
         sleep 300 & echo $! > {o}/child.txt"
    );
    config(&env, &local, &remote, "hybrid_auto", &command);
    let tmp = env.home.join("tmp");
    // A copy a crashed bb7 left (its PID is over any pid_max).
    let stale = tmp.join("bb7-validate-999999999-x");
    std::fs::create_dir_all(stale.join("src")).unwrap();
    let mut b = spawn(&env, &tmp);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    env.add(&mut b, "src/main.rs", SRC);
    local_edit(&local);
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "local", "{end}");

    let vars = std::fs::read_to_string(out.join("env.txt")).unwrap();
    assert!(vars.contains("KEPT_VARIABLE=kept"), "{vars}");
    assert!(
        !vars.contains("sk-or-secret") && !vars.contains("OPENROUTER"),
        "{vars}"
    );
    assert!(!vars.contains("BB7_"), "{vars}");
    assert_eq!(
        std::fs::read_to_string(out.join("mode.txt"))
            .unwrap()
            .trim(),
        "700"
    );
    let copy = std::fs::read_to_string(out.join("pwd.txt")).unwrap();
    assert!(
        !std::path::Path::new(copy.trim()).exists(),
        "the copy is removed: {copy}"
    );
    assert!(!stale.exists(), "a crashed bb7's copy is removed");

    // The command's child went with its process group.
    let child = std::fs::read_to_string(out.join("child.txt")).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.trim()));
    let running = stat.is_ok_and(|s| {
        let state = s.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    });
    assert!(
        !running,
        "the validation command's child outlived the check"
    );
}
