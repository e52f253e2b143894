//! What the eval's tests share: running `bb7 eval` from the repository (its shipped
//! tasks and traces) and reading its `--json` report.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The repository, where `eval/tasks` and `eval/traces` are.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs bb7 with `args` from the repository, with `home` as its home and nothing else
/// of the environment but `PATH`.
pub fn bb7(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args(args)
        .current_dir(ROOT)
        .env_clear()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .expect("run bb7")
}

/// The `--json` report on `out`'s stdout (panics, naming stderr, when it is not one
/// JSON document).
pub fn parse_report(out: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json prints one JSON document ({e}): {stderr}"))
}

/// The entry of `report[list]` whose `key` is `name`.
pub fn entry<'a>(report: &'a Value, list: &str, key: &str, name: &str) -> &'a Value {
    report[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m[key] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// The result of task `id` in `report`.
pub fn task_result<'a>(report: &'a Value, id: &str) -> &'a Value {
    entry(report, "tasks", "task", id)
}

/// A shipped task's JSON.
pub fn shipped_task(id: &str) -> Value {
    let path = Path::new(ROOT)
        .join("eval/tasks")
        .join(format!("{id}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A shipped trace's JSON.
pub fn shipped_trace(mode: &str, id: &str) -> Value {
    let path = Path::new(ROOT)
        .join("eval/traces")
        .join(mode)
        .join(format!("{id}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The shipped traces' folder.
pub fn shipped_traces() -> PathBuf {
    Path::new(ROOT).join("eval/traces")
}
