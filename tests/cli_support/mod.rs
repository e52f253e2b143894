//! Running the one-shot `bb7` commands as a shell user would: in a directory, with a
//! temporary HOME, stdin from a pipe, and the outputs captured.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use crate::common::Env;

/// A `bb7` command in `dir` with the environment's HOME and config.
pub fn command(env: &Env, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bb7"));
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `bb7 ARGS` in `dir` with `input` on stdin.
pub fn run_in(env: &Env, dir: &Path, args: &[&str], input: &str) -> Output {
    let mut child = command(env, dir, args).spawn().unwrap();
    use std::io::Write;
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

/// Runs `bb7 ARGS` in the project root with empty stdin.
pub fn bb7(env: &Env, args: &[&str]) -> Output {
    run_in(env, &env.project, args, "")
}

/// Runs `bb7 ARGS` in the project root and asserts it succeeded.
#[track_caller]
pub fn ok(env: &Env, args: &[&str]) -> Output {
    let o = bb7(env, args);
    assert!(
        o.status.success(),
        "bb7 {args:?} failed: {}{}",
        lossy(&o.stdout),
        lossy(&o.stderr)
    );
    o
}

/// Runs `bb7 ARGS` in the project root and asserts it failed; returns stderr.
#[track_caller]
pub fn fails(env: &Env, args: &[&str]) -> String {
    let o = bb7(env, args);
    assert!(
        !o.status.success(),
        "bb7 {args:?} should fail: {}{}",
        lossy(&o.stdout),
        lossy(&o.stderr)
    );
    lossy(&o.stderr)
}

pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn stdout(o: &Output) -> String {
    lossy(&o.stdout)
}

pub fn stderr(o: &Output) -> String {
    lossy(&o.stderr)
}

/// `bb7 init` and `bb7 add` of these files (written first).
pub fn project_with(env: &Env, files: &[(&str, &str)]) {
    for (p, c) in files {
        env.write(p, c);
    }
    ok(env, &["init"]);
    let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
    let mut args = vec!["add"];
    args.extend(paths);
    ok(env, &args);
}

/// Starts `bb7 ARGS` in `dir` without waiting (stdin closed).
pub fn spawn(env: &Env, dir: &Path, args: &[&str]) -> Child {
    let mut cmd = command(env, dir, args);
    cmd.stdin(Stdio::null());
    cmd.spawn().unwrap()
}

/// A pseudo-terminal pair (master, slave), for a child whose stdin is a terminal.
pub fn pty() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the given integers; the name,
    // termios and winsize pointers may be null.
    let r = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty failed");
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(m),
            std::os::fd::OwnedFd::from_raw_fd(s),
        )
    }
}
