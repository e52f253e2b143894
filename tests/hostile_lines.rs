//! Request lines over the 64 MiB limit: every error carries the request id the line
//! began with (so no front-end waits for an answer that never comes), and bb7's own
//! front-ends refuse to build such a line, naming what made it so big. Each command
//! here ends with a clear error; a hang is caught by a poll-counting guard.

mod cli_support;
mod common;

use std::io::Write;
use std::process::{Child, Output};

use cli_support::*;
use common::{Env, fake_env};
use serde_json::json;

/// Waits for `child` (its stdin fed by `input` from another thread); panics after
/// many polls rather than hanging the suite.
fn finish(mut child: Child, input: Vec<u8>) -> Output {
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut polls = 0;
    while child.try_wait().unwrap().is_none() {
        polls += 1;
        if polls > 3000 {
            let _ = child.kill();
            panic!("bb7 hangs on an over-long request");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = feeder.join();
    child.wait_with_output().unwrap()
}

fn run_big(env: &Env, args: &[&str], input: Vec<u8>) -> Output {
    finish(command(env, &env.project, args).spawn().unwrap(), input)
}

#[test]
fn the_errors_of_unreadable_lines_carry_their_request_id() {
    let env = Env::new();
    let (mut b, _id) = env.with_chat();
    let mut line = br#"{"request_id":"big1","action":"save_draft","draft":""#.to_vec();
    line.resize(64 * 1024 * 1024 + 10, b'x');
    line.extend_from_slice(br#""}"#);
    b.send_raw(&line);
    let m = b.recv().unwrap();
    assert_eq!(m["type"], "error", "{m}");
    assert_eq!(m["request_id"], "big1", "{m}");
    assert!(m["message"].as_str().unwrap().contains("too long"), "{m}");
    // A number id, after members the scan reads past.
    let mut line = br#"{"action":"ping", "x":[1,{"a":"}"}], "request_id":7, "y":""#.to_vec();
    line.resize(64 * 1024 * 1024 + 10, b'\\');
    b.send_raw(&line);
    let m = b.recv().unwrap();
    assert_eq!(m["request_id"], "7", "{m}");
    // Bad JSON after the id.
    b.send_raw(br#"{"request_id":"bad2","action":"ping","x":tru}"#);
    let m = b.recv().unwrap();
    assert_eq!(
        (&m["type"], &m["request_id"]),
        (&json!("error"), &json!("bad2")),
        "{m}"
    );
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
}

#[test]
fn adding_a_file_of_control_characters_too_big_to_send_is_refused() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "a\n")]);
    // 12 MiB of U+0001: each becomes `\u0001` in JSON, 72 MiB of line.
    std::fs::write(env.project.join("ctl.bin"), vec![1u8; 12 * 1024 * 1024]).unwrap();
    let o = run_big(&env, &["add", "ctl.bin"], Vec::new());
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("file ctl.bin is too large to send"), "{err}");
    assert!(err.contains("12.0 MiB as text"), "{err}");
    assert!(err.contains("limit is 64 MiB"), "{err}");
    // Nothing was added; bb7 still works.
    assert!(!stdout(&ok(&env, &["status"])).contains("ctl.bin"));
}

#[test]
fn a_command_printing_70_mb_is_refused_not_hung() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "a\n")]);
    let o = run_big(
        &env,
        &["add", "--run", "head -c 73400320 /dev/zero | tr '\\0' y"],
        Vec::new(),
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("too large to send"), "{err}");
}

#[test]
fn seventy_mb_piped_into_ask_is_refused_not_hung() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "a\n")]);
    let o = run_big(
        &env,
        &["ask", "what is this?"],
        vec![b'q'; 70 * 1000 * 1000],
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("attachment stdin is too large to send"),
        "{err}"
    );
}
