//! The holder socket trusts only what it checks. A cloned repository can plant a
//! `holder.sock` symlink (or a socket of another user's) in a chat folder: the command
//! line never sends it a byte and says what it ignored. A planted folder there is set
//! aside by the holder. A guest acts only on the chat it was admitted to and cannot
//! change the holder's session (its lock, its event follow, other chats).

mod cli_support;
mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};

use cli_support::*;
use common::fake_env;
use serde_json::{Value, json};

/// A listener standing for another user's socket; `true` when anyone connected.
fn anyone_connected(l: &UnixListener) -> bool {
    l.set_nonblocking(true).unwrap();
    l.accept().is_ok()
}

#[test]
fn a_planted_symlink_or_foreign_socket_receives_nothing() {
    let (env, _fake) = fake_env(json!({}));
    env.write("secret.txt", "top secret\n");
    let (mut editor, id) = env.with_chat();
    // The socket is bound right after the reply to `chat_new`: one more round trip.
    editor.ok(json!({"action": "ping"}));
    let sock = env.chat_dir(&id).join("holder.sock");
    // The editor serves the command line while the socket is its own.
    ok(&env, &["status"]);
    let bait_dir = tempfile::tempdir().unwrap();
    let bait = bait_dir.path().join("other.sock");
    let listener = UnixListener::bind(&bait).unwrap();

    // A symlink in place of the holder's socket.
    std::fs::remove_file(&sock).unwrap();
    std::os::unix::fs::symlink(&bait, &sock).unwrap();
    let o = bb7(&env, &["add", "secret.txt"]);
    let err = stderr(&o);
    assert!(
        !anyone_connected(&listener),
        "the planted socket was connected to"
    );
    assert!(
        err.contains("holder socket") && err.contains("ignored"),
        "{err} / {}",
        stdout(&o)
    );
    assert!(err.contains("holder.sock"), "{err}");
    assert!(!o.status.success());

    // A real socket at the path, owned by another user (nobody).
    std::fs::remove_file(&sock).unwrap();
    let planted = UnixListener::bind(&sock).unwrap();
    std::os::unix::fs::chown(&sock, Some(65534), Some(65534)).unwrap();
    let o = bb7(&env, &["add", "secret.txt"]);
    assert!(
        !anyone_connected(&planted),
        "a socket of another user was connected to"
    );
    assert!(stderr(&o).contains("another user"), "{}", stderr(&o));
    assert_eq!(editor.ok(json!({"action": "ping"}))["type"], "ok");
}

#[test]
fn a_planted_folder_at_the_socket_path_is_set_aside() {
    let (env, _fake) = fake_env(json!({}));
    env.write("f.txt", "f\n");
    let (mut editor, first) = env.with_chat();
    editor.ok(json!({"action": "chat_new"}));
    let sock = env.chat_dir(&first).join("holder.sock");
    let _ = std::fs::remove_file(&sock);
    std::fs::create_dir(&sock).unwrap();
    editor.ok(json!({"action": "chat_select", "id": first}));
    editor.ok(json!({"action": "ping"}));
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::symlink_metadata(&sock).unwrap();
    assert!(m.file_type().is_socket(), "the holder bound its socket");
    let aside = std::fs::read_dir(env.chat_dir(&first))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("holder.sock.aside-")
        });
    assert!(aside, "the planted folder was set aside");
    // Commands beside the editor are served by it.
    ok(&env, &["add", "f.txt"]);
}

/// One request over a raw guest connection; its reply.
fn guest_call(conn: &mut (UnixStream, BufReader<UnixStream>), req: Value) -> Value {
    let mut line = serde_json::to_vec(&req).unwrap();
    line.push(b'\n');
    conn.0.write_all(&line).unwrap();
    loop {
        let mut reply = String::new();
        assert!(
            conn.1.read_line(&mut reply).unwrap() > 0,
            "the holder closed"
        );
        let v: Value = serde_json::from_str(&reply).unwrap();
        if v["request_id"] == req["request_id"] {
            return v;
        }
    }
}

#[test]
fn a_guest_acts_only_on_its_chat_and_never_on_the_holders_session() {
    let (env, _fake) = fake_env(json!({}));
    env.write("f.txt", "f\n");
    let (mut editor, first) = env.with_chat();
    let other = editor.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    editor.ok(json!({"action": "chat_select", "id": first}));
    editor.ok(json!({"action": "ping"}));
    let s = UnixStream::connect(env.chat_dir(&first).join("holder.sock")).unwrap();
    let mut conn = (s.try_clone().unwrap(), BufReader::new(s));

    // Selecting its own chat read-only leaves the holder's lock and session alone.
    let r = guest_call(
        &mut conn,
        json!({"action": "chat_select", "id": first, "read_only": true, "request_id": "g1"}),
    );
    assert_eq!(r["type"], "ok", "{r}");
    editor.ok(json!({"action": "context_add", "path": "f.txt", "content": "f\n"}));

    // Other chats are out of reach.
    for req in [
        json!({"action": "chat_rename", "id": other, "name": "pwned", "request_id": "g2"}),
        json!({"action": "chat_pin", "id": other, "pinned": true, "request_id": "g3"}),
        json!({"action": "chat_archive", "id": other, "archived": true, "request_id": "g4"}),
        json!({"action": "events_get", "chat_id": other, "request_id": "g5"}),
        json!({"action": "events_get", "follow": false, "request_id": "g6"}),
    ] {
        let r = guest_call(&mut conn, req.clone());
        assert_eq!(r["type"], "error", "{req} → {r}");
        assert_eq!(r["code"], "locked", "{req} → {r}");
    }
    let list = editor.ok(json!({"action": "chat_list"}));
    assert!(!list.to_string().contains("pwned"), "{list}");
    // Its own chat it may rename.
    let r = guest_call(
        &mut conn,
        json!({"action": "chat_rename", "id": first, "name": "mine", "request_id": "g7"}),
    );
    assert_eq!(r["type"], "ok", "{r}");
}
