//! One chat, many front-ends: with a chat open in one bb7 process (an editor's
//! `bb7 serve`, or `bb7 chat` on a terminal), the one-shot commands beside it are
//! served by that process through its holder socket, and the holder's client hears
//! what they did (`peer_change`). Exit status 4 is left for a live lock nobody answers.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

/// The `peer_change` notes the holder wrote so far, once there are at least `n`: a
/// ping's round trip collects those already written, then each wait is for the
/// holder's next message (no clock; a holder that never writes one ends at the
/// harness's hang guard with the notes found so far).
fn notes(editor: &mut common::Bb7, n: usize) -> Vec<Value> {
    let found = |b: &common::Bb7| -> Vec<Value> {
        b.backlog
            .iter()
            .filter(|m| m["type"] == "peer_change")
            .cloned()
            .collect()
    };
    // The holder answers its own requests in order with the notes of what it served
    // before: a ping's answer brings every note already written.
    editor.request(json!({"action": "ping"}));
    while found(editor).len() < n {
        match editor.recv() {
            Some(m) => editor.backlog.push(m),
            None => break,
        }
    }
    found(editor)
}

#[test]
fn every_one_shot_command_is_served_by_the_editor_holding_the_chat() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    env.write("g.txt", TEN);
    let (mut editor, id) = env.with_chat();
    editor.ok(json!({"action": "context_add", "path": "f.txt", "content": TEN}));
    let sock = env.chat_dir(&id).join("holder.sock");
    {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let m = std::fs::metadata(&sock).expect("the holder listens in the chat's folder");
        assert!(m.file_type().is_socket());
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
    }

    // Read-only commands.
    let o = ok(&env, &["status"]);
    assert!(stdout(&o).contains("f.txt"), "{}", stdout(&o));
    ok(&env, &["show"]);
    ok(&env, &["log"]);
    ok(&env, &["checkpoints"]);
    assert!(notes(&mut editor, 0).is_empty(), "reads change nothing");

    // A change: the editor's session sees it and its client is told.
    ok(&env, &["add", "g.txt"]);
    let list = editor.ok(json!({"action": "context_list"}));
    assert!(list.to_string().contains("g.txt"), "{list}");
    let n = notes(&mut editor, 1);
    assert_eq!(n[0]["action"], "context_add", "{n:?}");
    assert_eq!(n[0]["chat_id"], id.as_str());
    assert!(n[0]["pid"].as_u64().is_some(), "{n:?}");

    // A question: the answer is printed by the command, the turn ran in the editor.
    fake.push_sse(response(
        "",
        "Two files changed.\n",
        vec![
            (
                "edit_file",
                json!({"path": "f.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
            ),
            (
                "edit_file",
                json!({"path": "g.txt", "edits": [{"old_string": "l3\n", "new_string": "THREE\n"}]}),
            ),
        ],
    ));
    let o = ok(&env, &["ask", "change", "two", "files"]);
    assert_eq!(stdout(&o), "Two files changed.\n");
    // context_add, then the send started and done.
    let n = notes(&mut editor, 3);
    assert!(
        n.iter()
            .any(|m| m["action"] == "send" && m["status"] == "done"),
        "{n:?}"
    );
    let o = ok(&env, &["diff"]);
    assert!(stdout(&o).contains("+TWO"), "{}", stdout(&o));
    let o = ok(&env, &["review"]);
    assert!(stdout(&o).contains("f.txt"), "{}", stdout(&o));

    ok(&env, &["apply"]);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "TWO\n"));
    assert_eq!(env.read("g.txt"), TEN.replace("l3\n", "THREE\n"));
    ok(&env, &["rollback", "--last"]);
    assert_eq!(env.read("f.txt"), TEN);
    assert_eq!(env.read("g.txt"), TEN);
    ok(&env, &["remove", "g.txt"]);
    let list = editor.ok(json!({"action": "context_list"}));
    assert!(!list.to_string().contains("g.txt"), "{list}");

    // On the socket itself: the guest's own ids come back; requests that would change
    // the editor's session are refused with the reason; `shutdown` only leaves.
    {
        use std::io::{BufRead, BufReader, Write};
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        s.set_read_timeout(Some(common::TIMEOUT)).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut ask = |line: &str| -> Value {
            s.write_all(format!("{line}\n").as_bytes()).unwrap();
            let mut got = String::new();
            r.read_line(&mut got).unwrap();
            serde_json::from_str(&got).unwrap()
        };
        let v = ask(r#"{"action":"ping","request_id":"p1"}"#);
        assert_eq!(
            (v["type"].as_str(), v["request_id"].as_str()),
            (Some("ok"), Some("p1"))
        );
        let v = ask(r#"{"action":"chat_new","request_id":"n1"}"#);
        assert_eq!(v["code"], "locked", "{v}");
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .contains("open in another bb7 process")
        );
        let v = ask(r#"{"action":"chat_select","id":"0000000000","request_id":"s1"}"#);
        assert_eq!(v["code"], "locked", "{v}");
        let v = ask("not json");
        assert_eq!(v["type"], "error", "{v}");
        let v = ask(r#"{"action":"shutdown","request_id":"q"}"#);
        assert_eq!(v["type"], "ok");
    }

    // The editor is still the holder and keeps serving its own client.
    editor.ok(json!({"action": "save_draft", "draft": "still mine"}));
    assert_eq!(env.chat_json(&id)["draft"], "still mine");
    editor.close();
    assert!(!sock.exists(), "the socket goes with the holder");
}

#[test]
fn a_live_lock_that_no_holder_answers_is_exit_4_and_a_dead_holders_socket_is_replaced() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    let id = stdout(&ok(&env, &["chats"]))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned();
    let sock = env.chat_dir(&id).join("holder.sock");

    // A holder killed outright leaves its socket: the next command takes the chat and
    // a socket nobody listens on is no obstacle.
    let mut editor = env.spawn();
    editor.ok(json!({"action": "init", "project_root": env.project}));
    editor.ok(json!({"action": "chat_select", "id": id}));
    assert!(sock.exists());
    editor.kill();
    assert!(sock.exists());
    let o = ok(&env, &["status"]);
    assert!(stdout(&o).contains("f.txt"));
    assert!(
        !sock.exists(),
        "the stale socket was replaced, then removed"
    );

    // A process that holds the lock but serves no socket (the reference BB-7 writes
    // only its PID): nobody answers, so a change is refused as held (status 4) …
    env.write("g.txt", TEN);
    let mut other = hold_without_socket(&env, &id);
    let o = bb7(&env, &["add", "g.txt"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("PID"), "{}", stderr(&o));
    // … while the commands that only read never need the lock: the chat as on disk.
    for args in [
        &["status"][..],
        &["diff"],
        &["show"],
        &["log"],
        &["checkpoints"],
        &["review"],
    ] {
        let o = bb7(&env, args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
    let o = ok(&env, &["status"]);
    assert!(stdout(&o).contains("f.txt"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("read as it is on disk"),
        "{}",
        stderr(&o)
    );
    let _ = other.kill();
    let _ = other.wait();

    // On the protocol: `chat_select` with `read_only` serves reads only.
    let mut other = hold_without_socket(&env, &id);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let e = b.err(json!({"action": "chat_select", "id": id}));
    assert_eq!(e["code"], "locked");
    b.ok(json!({"action": "chat_select", "id": id, "read_only": true}));
    let list = b.ok(json!({"action": "context_list"}));
    assert!(list.to_string().contains("f.txt"), "{list}");
    let e = b.err(json!({"action": "context_add", "path": "g.txt", "content": TEN}));
    assert_eq!(e["code"], "locked", "{e}");
    assert!(!env.chat_dir(&id).join("holder.sock").exists());
    let _ = other.kill();
    let _ = other.wait();
}

#[test]
fn commands_beside_bb7_chat_on_a_terminal_are_served_and_shown_there() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    env.write("g.txt", TEN);
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    ok(&env, &["add", "g.txt"]);
    // The chat's screen says what the other command did, at the prompt.
    t.expect("context_add");
    let o = ok(&env, &["status"]);
    assert!(stdout(&o).contains("g.txt"), "{}", stdout(&o));
    fake.push_sse(response(
        "",
        "Done.\n",
        vec![(
            "edit_file",
            json!({"path": "g.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
        )],
    ));
    let o = ok(&env, &["ask", "edit g"]);
    assert_eq!(stdout(&o), "Done.\n");
    ok(&env, &["apply", "g.txt"]);
    assert_eq!(env.read("g.txt"), TEN.replace("l2\n", "TWO\n"));
    // The other command's turn is shown there too (its edit names g.txt): the
    // listing is read after the echo of /files, and /quit typed at the prompt.
    t.expect("got its answer in this chat");
    t.type_keys("/files\r");
    t.expect("/files");
    t.expect("g.txt");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    t.wait();
}

#[test]
fn a_holder_whose_chat_was_taken_over_says_so_at_its_next_save_instead_of_overwriting() {
    let (env, _fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    env.write("g.txt", TEN);
    env.write("h.txt", TEN);
    let (mut editor, id) = env.with_chat();
    editor.ok(json!({"action": "context_add", "path": "f.txt", "content": TEN}));
    // Another process takes the chat over and saves a change of its own.
    let o = ok(&env, &["add", "g.txt", "--take-over"]);
    assert!(stderr(&o).contains("took chat"), "{}", stderr(&o));
    // The old holder's next save is refused and says why; the other's change stays.
    let e = editor.err(json!({"action": "context_add", "path": "h.txt", "content": TEN}));
    assert_eq!(e["code"], "locked", "{e}");
    assert!(e["message"].as_str().unwrap().contains("taken over"), "{e}");
    let saved = env.chat_json(&id).to_string();
    assert!(
        saved.contains("g.txt") && !saved.contains("h.txt"),
        "{saved}"
    );
    // Selecting the chat again (its new holder is gone) continues it with both.
    editor.ok(json!({"action": "chat_select", "id": id}));
    editor.ok(json!({"action": "context_add", "path": "h.txt", "content": TEN}));
    // (The add is in the chat's journal until the chat is let go: read through bb7.)
    let chat = editor
        .ok(json!({"action": "chat_get", "id": id}))
        .to_string();
    assert!(chat.contains("g.txt") && chat.contains("h.txt"), "{chat}");
    // … and it serves other commands again.
    let o = ok(&env, &["status"]);
    assert!(stdout(&o).contains("h.txt"), "{}", stdout(&o));
    let _ = notes(&mut editor, 0);
}
