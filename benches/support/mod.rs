//! What the benches share: bb7 spawned on a scratch HOME, with its pipes.
#![allow(dead_code)] // each bench uses part of it

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The real binary with `home` as HOME (config in `home/.config`), stdin and stdout piped.
pub fn spawn(home: &Path) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    spawn_program(Path::new(env!("CARGO_BIN_EXE_bb7")), &[], home)
}

/// `program` with `args`, started as [`spawn`] starts bb7.
pub fn spawn_program(
    program: &Path,
    args: &[&str],
    home: &Path,
) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = Command::new(program)
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

/// A scratch HOME whose config points bb7 at `base_url` with model `m`, and an empty
/// project directory beside it: `(the temporary directory, home, project)`.
pub fn scratch(base_url: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(home.join(".config/bb7")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let config = serde_json::json!({"api_key": "k", "base_url": base_url, "default_model": "m"});
    std::fs::write(home.join(".config/bb7/config.json"), config.to_string()).unwrap();
    (tmp, home, project)
}
