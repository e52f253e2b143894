//! Ctrl-C during `bb7 ask` (SIGINT to the process): the turn is cancelled, the partial
//! answer is saved, "aborted" is printed, the exit status is 130 and the chat is free
//! for the next command.

mod cli_support;
mod common;

use std::io::Read;
use std::process::Child;
use std::time::{Duration, Instant};

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

/// A response that streams a first sentence, then hangs for ten minutes: longer than
/// the harness's hang guard (`common::TIMEOUT`), so a bb7 that waited for the stream's
/// end after Ctrl-C fails `wait_with_timeout` instead of a clock comparison.
fn slow_answer() -> Vec<Step> {
    vec![
        role(),
        text("Partial answer. "),
        Step::Sleep(Duration::from_secs(600)),
        text("never sent"),
        finish("stop"),
        done(),
    ]
}

/// Waits until `child`'s stdout has shown `needle`; returns what was read.
fn wait_for_stdout(child: &mut Child, needle: &str) -> String {
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + common::TIMEOUT;
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(b) => seen.extend(b),
            Err(_) => panic!("no {needle:?} on stdout; got {:?}", lossy(&seen)),
        }
    }
    lossy(&seen)
}

fn sigint(child: &Child) {
    // SAFETY: kill(2) with a pid we own and a valid signal number has no memory effects.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(r, 0);
}

fn finish_child(mut child: Child) -> (Option<i32>, String) {
    let status = common::wait_with_timeout(&mut child);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

#[test]
fn ctrl_c_cancels_keeps_the_partial_answer_and_exits_130() {
    let (env, fake) = fake_env(json!({}));
    ok(&env, &["init"]);
    let id = stdout(&ok(&env, &["new"])).trim().to_owned();
    fake.push_sse(slow_answer());
    let mut child = spawn(&env, &env.project, &["ask", "tell me a long story"]);
    wait_for_stdout(&mut child, "Partial answer.");
    sigint(&child);
    let (code, err) = finish_child(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("bb7: aborted"), "{err}");

    // The partial answer and the note were saved; the lock was released.
    let chat = env.chat_json(&id).to_string();
    assert!(chat.contains("Partial answer."), "{chat}");
    assert!(chat.contains("Response aborted by user."), "{chat}");
    let lock = env.chat_dir(&id).join("lock");
    assert!(
        std::fs::read_to_string(&lock)
            .unwrap_or_default()
            .is_empty(),
        "the lock still names a process"
    );
    let o = ok(&env, &["show", "--last"]);
    assert_eq!(stdout(&o).trim(), "Partial answer.");
    // The note shows as a quote (chat_get sends it as `content`, docs/PROTOCOL.md).
    let md = stdout(&ok(&env, &["show"]));
    assert!(md.contains("\n> Response aborted by user.\n"), "{md}");
    fake.push_sse(response("", "Fine again.", vec![]));
    let o = ok(&env, &["ask", "still there?"]);
    assert_eq!(stdout(&o), "Fine again.\n");
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let (env, fake) = fake_env(json!({}));
    ok(&env, &["init"]);
    let id = stdout(&ok(&env, &["new"])).trim().to_owned();
    fake.push_sse(slow_answer());
    let mut child = spawn(&env, &env.project, &["ask", "go"]);
    wait_for_stdout(&mut child, "Partial answer.");
    sigint(&child);
    sigint(&child);
    let (code, err) = finish_child(child);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("aborted"), "{err}");
    // No lock is left behind and the chat is usable afterwards.
    let lock = env.chat_dir(&id).join("lock");
    assert!(
        std::fs::read_to_string(&lock)
            .unwrap_or_default()
            .is_empty()
    );
    ok(&env, &["status"]);
}
