//! The opening of the validation-check scenarios (README, "Local, remote and
//! hybrid"): a `hybrid_auto` project whose local model answers with a write, so that
//! each turn is planned and its `hybrid_validate_command` runs.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::Env;
use super::fake_model::{FakeModel, response};

/// The file the local model rewrites, as it is before.
pub const SRC: &str = "fn main() {\n    println!(\"one\");\n}\n";

/// A `hybrid_auto` project whose validation command is `command(out)`, `out` being a
/// directory under HOME that `hybrid_validate_writable` opens to the check; the local
/// model answers `turns` times with a write of `src/main.rs`, the remote one with
/// text. Returns the environment, the local and remote models, and `out`.
pub fn hybrid_project(
    command: impl Fn(&Path) -> String,
    turns: usize,
) -> (Env, FakeModel, FakeModel, PathBuf) {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    let out = env.home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "qwen2.5-coder:14b"},
            "remote": {"base_url": remote.url, "model": "anthropic/claude-sonnet-4.5", "api_key": "rk"}
        },
        "agent_mode": "hybrid_auto",
        "hybrid_validate_command": command(&out),
        "hybrid_validate_writable": [out],
        "retry_backoff_ms": 10
    }));
    let four = "fn main() {\n    println!(\"four\");\n}\n";
    for _ in 0..turns {
        local.push_sse(response(
            "",
            "local edit",
            vec![(
                "write_file",
                json!({"path": "src/main.rs", "content": four}),
            )],
        ));
        remote.push_sse(response("", "remote answer", vec![]));
    }
    (env, local, remote, out)
}

/// Whether process `pid` runs (Linux's /proc; a zombie waiting for its parent does
/// not).
pub fn running(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    !state.is_empty() && !state.starts_with('Z') && !state.starts_with('X')
}
