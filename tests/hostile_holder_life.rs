//! The holder socket's life around the holder's own client (docs/PROTOCOL.md, "One
//! chat, many front-ends"): it is bound before `chat_new` or `chat_select` answers, so
//! another bb7 started right then finds a holder (never a chat it could take); and a
//! holder whose stdin closes exits promptly though a guest is connected and idle.

mod common;

use common::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn the_socket_answers_as_soon_as_chat_new_and_chat_select_did() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, first) = env.with_chat();
    for round in 0..20 {
        let id = if round % 2 == 0 {
            b.ok(json!({"action": "chat_new"}))["id"]
                .as_str()
                .unwrap()
                .to_owned()
        } else {
            b.ok(json!({"action": "chat_select", "id": first}));
            first.clone()
        };
        // Right after the reply, before anything else reaches bb7.
        let s = UnixStream::connect(env.chat_dir(&id).join("holder.sock"))
            .unwrap_or_else(|e| panic!("round {round}: no holder socket yet: {e}"));
        let mut reader = BufReader::new(s.try_clone().unwrap());
        (&s).write_all(b"{\"action\":\"ping\",\"request_id\":\"g\"}\n")
            .unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.contains("\"ok\""), "round {round}: {line}");
    }
}

#[test]
fn bb7_serve_exits_when_its_stdin_closes_with_a_guest_connected() {
    let (env, _fake) = fake_env(json!({}));
    let mut child = Command::new(env!("CARGO_BIN_EXE_bb7"))
        .arg("serve")
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |req: serde_json::Value| {
        writeln!(stdin, "{req}").unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "bb7 ended");
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v["request_id"] == req["request_id"] {
                return v;
            }
        }
    };
    ask(json!({"action": "bb7_init", "project_root": env.project, "request_id": "1"}));
    let id = ask(json!({"action": "chat_new", "request_id": "2"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // One guest that asked something and another that sent half a line; neither
    // reads nor closes.
    let talker = UnixStream::connect(env.chat_dir(&id).join("holder.sock")).unwrap();
    let mut reader = BufReader::new(talker.try_clone().unwrap());
    (&talker)
        .write_all(b"{\"action\":\"ping\",\"request_id\":\"g\"}\n")
        .unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let half = UnixStream::connect(env.chat_dir(&id).join("holder.sock")).unwrap();
    (&half).write_all(b"{\"action\":\"pi").unwrap();
    drop(stdin);
    // Counted polls of 50 ms, up to the harness's TIMEOUT: a hang guard for a prompt
    // exit (20 s was tight for a first run on a loaded machine).
    let mut status = None;
    for _ in 0..2400 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("bb7 serve did not exit after its stdin closed, a guest connected");
    };
    assert!(status.success(), "{status}");
    // The guests see the holder gone.
    let mut rest = String::new();
    let _ = reader.read_line(&mut rest);
    drop((talker, half));
}
