//! One guest of a holder is held to its own byte budget (docs/PROTOCOL.md, "One chat,
//! many front-ends"): 72 MiB of its requests unanswered, whatever room all guests
//! together still have. The request loop lets a line's bytes go as soon as it handles
//! it, so the limit is reached only while the loop cannot handle guest lines: here,
//! because the holder's own editor has stopped reading its answers (invariant 14 in
//! docs/ARCHITECTURE.md). A guest then writing two 40 MB lines gets `busy` naming the
//! per-connection limit and the second line's request id, and is closed; once the
//! editor reads again, the editor and another guest are both served. Its own file:
//! the test holds a few hundred MB, best not beside other tests of one process.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

use common::Env;
use serde_json::{Value, json};

/// The size of each guest line's padding: over half a guest's budget, under all of it.
const BODY: usize = 40_000_000;

/// Answers the editor waits for unread: each a little over 1 MiB, 48 of them well
/// over the 32 MiB the loop lets its stdout queue hold before it stops reading.
const BIG_ANSWERS: usize = 48;

/// Reads the editor's lines until the one answering `id`.
fn reply_to(out: &mut impl BufRead, id: &str) -> Value {
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "bb7 closed its stdout before answering {id}");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["request_id"] == id {
            return v;
        }
    }
}

#[test]
fn a_guest_over_its_own_byte_budget_is_closed_and_the_others_go_on() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    let big = "0123456789abcdef".repeat(65_536);
    env.add(&mut b, "big.txt", &big);
    assert_eq!(b.close().code(), Some(0));

    let mut child = Command::new(env!("CARGO_BIN_EXE_bb7"))
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut lines = format!(
        "{}\n{}\n",
        json!({"action": "init", "project_root": env.project, "request_id": "i"}),
        json!({"action": "chat_select", "id": id, "request_id": "s"})
    );
    for n in 0..BIG_ANSWERS {
        let req =
            json!({"action": "get_context_file", "path": "big.txt", "request_id": format!("b{n}")});
        lines.push_str(&format!("{req}\n"));
    }
    // A few KB in one write: bb7's stdin thread reads them together, so the loop
    // (which takes the editor's lines before any guest's) has them all in hand.
    stdin.write_all(lines.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let selected = reply_to(&mut out, "s");
    assert_eq!(selected["type"], "ok", "{selected}");
    // The first big answer read; from here the editor reads nothing, so the loop
    // handles the editor's queued requests until its stdout queue is full and then
    // stops handling lines, the editor's and the guests' alike.
    let first = reply_to(&mut out, "b0");
    assert_ne!(first["type"], "error", "{first}");
    let sock = env.chat_dir(&id).join("holder.sock");

    let guest = UnixStream::connect(&sock).unwrap();
    // A hang guard: a guest never refused would otherwise wait for ever.
    guest.set_read_timeout(Some(common::TIMEOUT)).unwrap();
    let mut writing = guest.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let pad = vec![b'x'; BODY];
        for rid in ["g1", "g2"] {
            let head = format!(r#"{{"request_id":"{rid}","action":"ping","pad":""#);
            let wrote = writing
                .write_all(head.as_bytes())
                .and_then(|()| writing.write_all(&pad))
                .and_then(|()| writing.write_all(b"\"}\n"));
            if wrote.is_err() {
                return false;
            }
        }
        true
    });
    // The refusal is the guest's first answer, written while the loop is stopped.
    let mut guest_out = BufReader::new(&guest);
    let mut line = String::new();
    guest_out.read_line(&mut line).unwrap();
    let busy: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("the guest read no JSON answer ({e}): {line:?}"));
    assert_eq!(busy["type"], "error", "{busy}");
    assert_eq!(busy["code"], "busy", "{busy}");
    assert_eq!(
        busy["request_id"], "g2",
        "the error names the line's id: {busy}"
    );
    let msg = busy["message"].as_str().unwrap();
    assert!(
        msg.contains("72 MiB") && msg.contains("limit of one guest"),
        "{msg}"
    );

    // Another guest asks while the editor still reads nothing; it is served once
    // the editor reads again, as is the editor itself.
    let mut other = UnixStream::connect(&sock).unwrap();
    other.set_read_timeout(Some(common::TIMEOUT)).unwrap();
    other
        .write_all(format!("{}\n", json!({"action": "ping", "request_id": "h1"})).as_bytes())
        .unwrap();
    stdin
        .write_all(format!("{}\n", json!({"action": "ping", "request_id": "own"})).as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let last = reply_to(&mut out, &format!("b{}", BIG_ANSWERS - 1));
    assert_ne!(last["type"], "error", "{last}");
    assert_eq!(reply_to(&mut out, "own")["type"], "ok");
    // The refused guest's connection ends: at most its whole first line is answered.
    let mut rest = String::new();
    guest_out.read_to_string(&mut rest).unwrap();
    assert!(
        !writer.join().unwrap(),
        "the second line was never read whole"
    );
    for l in rest.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["request_id"], "g1", "{v}");
        assert_eq!(v["type"], "ok", "{v}");
    }
    let mut line = String::new();
    BufReader::new(&other).read_line(&mut line).unwrap();
    let pong: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(pong["request_id"], "h1", "{pong}");
    assert_eq!(pong["type"], "ok", "{pong}");

    drop(stdin);
    assert!(child.wait().unwrap().success());
}
