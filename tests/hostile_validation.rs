//! `hybrid_validate_command` runs on the user's terms: only when the user's own config
//! or a client of this process chose `hybrid_auto` (a chat file saying so runs
//! nothing), in a 0700 scratch copy removed afterwards (and a crashed bb7's copy
//! removed at the next run), with bb7's and the providers' variables stripped from its
//! environment, in its own process group, killed whole when the check ends, and
//! confined (Linux with Landlock) to writing in its copy: no write elsewhere, no TCP.
//!
//! A confined command cannot leave evidence outside its copy, so each test reads what
//! it checked from the check's outcome: it passes (the local answer stands) only when
//! every condition the command tests holds, and fails (the turn moves to remote) else.

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
    // A command that fails: when it runs, the turn moves to remote.
    config(&env, &local, &remote, "local", "exit 1");
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
    assert_eq!(
        end["provider"], "local",
        "a planted chat file made bb7 run the validation command: {end}"
    );

    // The user's own choice of hybrid_auto in this session runs it: it fails, and the
    // remote model answers.
    b.ok(json!({"action": "save_chat_settings", "agent_mode": "hybrid_auto"}));
    local_edit(&local);
    remote.push_sse(response("", "remote answer", vec![]));
    let end = b.turn("again");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(
        end["provider"], "remote",
        "the user's own hybrid_auto runs the command: {end}"
    );
    assert_eq!(end["fallback_reason"], "validation_failed", "{end}");
}

#[test]
fn the_command_runs_stripped_private_and_leaves_nothing_running() {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    // Passes only when the environment is stripped and the copy private; leaves a
    // child behind that the test finds by its unique argument.
    let command = "set -e; test \"$KEPT_VARIABLE\" = kept; ! env | grep -q -e sk-or-secret -e OPENROUTER -e BB7_; \
         test \"$(stat -c %a ..)\" = 700; sleep 3017 & exit 0";
    config(&env, &local, &remote, "hybrid_auto", command);
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
    assert_eq!(end["provider"], "local", "the check failed: {end}");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "the copy is removed: {left:?}");
    assert!(!stale.exists(), "a crashed bb7's copy is removed");

    // The command's child went with its process group.
    let running = std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let state = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
        let state = state.rsplit(')').next().unwrap_or("").trim_start();
        cmdline == b"sleep\x003017\x00" && !state.starts_with('Z') && !state.starts_with('X')
    });
    assert!(
        !running,
        "the validation command's child outlived the check"
    );
}

/// Whether this kernel offers Landlock (its ABI version answered by
/// landlock_create_ruleset(2) with the version flag).
fn landlock_abi() -> i64 {
    // SAFETY: with LANDLOCK_CREATE_RULESET_VERSION the call only returns a number.
    unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, 0usize, 0usize, 1u32) }
}

#[test]
fn the_command_writes_only_in_its_copy_and_reaches_no_tcp_port() {
    let abi = landlock_abi();
    if abi < 4 {
        eprintln!("skipped: this kernel's Landlock ABI is {abi}, confinement needs 4");
        return;
    }
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    let outside = env.home.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let allowed = env.home.join("cache");
    std::fs::create_dir_all(&allowed).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // Passes only when writing in the copy, its TMPDIR and the allowed directory works
    // and writing elsewhere and connecting to a TCP port fail.
    let command = format!(
        "echo x > made.txt && echo x > \"$TMPDIR/t\" && echo x > {allowed}/c && \
         ! touch {outside}/escaped 2>/dev/null && \
         ! python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)' 2>/dev/null",
        allowed = allowed.display(),
        outside = outside.display(),
    );
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "qwen2.5-coder:14b"},
            "remote": {"base_url": remote.url, "model": "anthropic/claude-sonnet-4.5", "api_key": "rk"}
        },
        "agent_mode": "hybrid_auto",
        "hybrid_validate_command": command,
        "hybrid_validate_writable": [allowed],
        "retry_backoff_ms": 10
    }));
    let tmp = env.home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut b = spawn(&env, &tmp);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    env.add(&mut b, "src/main.rs", SRC);
    local_edit(&local);
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "local", "the confined check failed: {end}");
    assert!(
        !outside.join("escaped").exists(),
        "a write outside the copy"
    );
    assert!(
        allowed.join("c").exists(),
        "the allowed directory took the write"
    );
    assert!(listener.accept().is_err(), "the command reached a TCP port");
}
