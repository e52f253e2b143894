//! A holder's guests are held to byte budgets (docs/PROTOCOL.md, "One chat, many
//! front-ends"): four guests each writing a 56 MB request line at once cannot make the
//! holder buffer more than all guests' budget (144 MiB, so at most two such lines):
//! the guests that would go over are closed with an `error` naming the limit and the
//! line's request id, a line that fits is read whole and answered, and the holder's own
//! client is answered throughout. Which guests are closed depends on how their writes
//! interleave; how many may stay is fixed. Its own file: the test holds a few hundred
//! MB, best not beside other tests of one process.

mod cli_support;
mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier};

use cli_support::*;
use common::fake_env;
use serde_json::{Value, json};

/// The size of each guest's `content`: over a third of all guests' budget, under half.
const BODY: usize = 56_000_000;

/// What became of a guest: the answer it read, and whether its whole line was taken.
struct Outcome {
    wrote_all: bool,
    answer: Value,
}

/// A guest writing a request line of more than [`BODY`] bytes (a `ping` with a long
/// extra member, which bb7 ignores: the line costs the holder as much as a large
/// `context_add`, its answer far less); once every guest has written its text (or
/// been closed), it ends the line and reads one answer.
fn guest(sock: &std::path::Path, i: usize, body: Arc<Vec<u8>>, all: Arc<Barrier>) -> Outcome {
    let mut s = UnixStream::connect(sock).unwrap();
    let head = format!(r#"{{"request_id":"g{i}","action":"ping","pad":""#);
    let wrote = s
        .write_all(head.as_bytes())
        .and_then(|()| s.write_all(&body));
    // Every guest has either been read up to its last few socket-buffered bytes or
    // been closed: only then does anyone finish, so no add is handled (and its
    // bytes let go) while another guest still writes.
    all.wait();
    let wrote_all = wrote.is_ok() && s.write_all(b"\"}\n").is_ok();
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).unwrap();
    let answer = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("guest {i} read no JSON answer ({e}): {line:?}"));
    Outcome { wrote_all, answer }
}

#[test]
fn guests_over_the_shared_byte_budget_are_closed_and_the_holder_goes_on() {
    let (env, _fake) = fake_env(json!({}));
    let (mut editor, id) = env.with_chat();
    // The socket is bound right after the reply to `chat_new`: one more round trip.
    editor.ok(json!({"action": "ping"}));
    let sock = env.chat_dir(&id).join("holder.sock");
    let body = Arc::new(vec![b'x'; BODY]);
    let all = Arc::new(Barrier::new(5));
    let guests: Vec<_> = (0..4)
        .map(|i| {
            let (sock, body, all) = (sock.clone(), body.clone(), all.clone());
            std::thread::spawn(move || guest(&sock, i, body, all))
        })
        .collect();
    all.wait();
    // Up to two lines of 56 MB are held for the guests: the holder's client is served.
    let r = editor.ok(json!({"action": "context_add", "path": "own.txt", "content": "own\n"}));
    assert_eq!(r["type"], "ok");
    let outcomes: Vec<Outcome> = guests.into_iter().map(|g| g.join().unwrap()).collect();
    let mut served = 0;
    for (i, o) in outcomes.iter().enumerate() {
        let a = &o.answer;
        if a["type"] != "error" {
            assert_eq!(a["request_id"], format!("g{i}"), "{a}");
            assert!(o.wrote_all);
            served += 1;
            continue;
        }
        assert_eq!(a["type"], "error", "guest {i}: {a}");
        assert_eq!(
            a["request_id"],
            format!("g{i}"),
            "the error names the line's id: {a}"
        );
        let msg = a["message"].as_str().unwrap();
        assert!(
            msg.contains("144 MiB") && msg.contains("limit of all guests"),
            "guest {i}: {msg}"
        );
        assert!(!o.wrote_all, "guest {i}: a closed guest's writes fail");
    }
    // Two lines fit in all guests' budget, a third does not; a guest is closed only
    // when the holder's guests hold nearly all of it, so at least one is served.
    assert!(
        (1..=2).contains(&served),
        "{served} guests of 4 were served"
    );
    drop(body);
    assert_eq!(editor.ok(json!({"action": "ping"}))["type"], "ok");
    // The budget was given back: the command line is still a guest that is served.
    ok(&env, &["status"]);
}
