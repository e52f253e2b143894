//! Hostile ground, data loss: an unreadable `context/` folder is not a missing one, a
//! failure while storing the model's files keeps the answer, and closing stdin
//! mid-turn is not a user's cancel, through the real binary (Durability 9 in
//! docs/ARCHITECTURE.md). Tests that need file modes run bb7 as an unprivileged user,
//! since root ignores permission bits.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::fake_model::*;
use common::{Bb7, Env, assert_a_turn_writes, assert_answer_then_note, fake_env};
use serde_json::{Value, json};

const NOBODY: &[&str] = &[
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
];

/// Hands the environment to `nobody` and returns whether bb7 can run as that user
/// (prints why not, so a skipped test says so).
fn as_nobody(env: &Env) -> bool {
    let ok = std::process::Command::new(NOBODY[0])
        .args(&NOBODY[1..])
        .arg("true")
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("note: cannot run as an unprivileged user (setpriv to uid 65534); skipped");
        return false;
    }
    let status = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(env._tmp.path())
        .status()
        .unwrap();
    assert!(status.success());
    true
}

fn spawn_nobody(env: &Env) -> Bb7 {
    Bb7::spawn_via(NOBODY, &env.home, &env.project, &[])
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn context_paths(chat: &Value) -> Vec<String> {
    common::paths_of(&chat["context_files"])
}

#[test]
fn an_unreadable_context_folder_is_not_a_missing_one() {
    let env = Env::new();
    if !as_nobody(&env) {
        return;
    }
    let mut b = spawn_nobody(&env);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    let a = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for name in ["x.txt", "y.txt"] {
        env.write(name, "text\n");
        b.ok(json!({"action": "context_add", "path": name, "content": "text\n"}));
    }
    b.ok(json!({"action": "chat_new"}));
    // A temporary permission error on A's snapshots (a backup tool, a wrong umask).
    let context = env.chat_dir(&a).join("context");
    set_mode(&context, 0o000);
    b.request(json!({"action": "chat_select", "id": a}));
    b.request(json!({"action": "context_list"}));
    b.request(json!({"action": "get_file_statuses"}));
    assert_eq!(b.close().code(), Some(0));
    set_mode(&context, 0o755);
    assert_eq!(context_paths(&env.chat_json(&a)), ["x.txt", "y.txt"]);
    // Readable again, the chat has its context.
    let mut b = spawn_nobody(&env);
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": a}));
    let listed = b.ok(json!({"action": "context_list"}));
    assert_eq!(listed["files"].as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(b.close().code(), Some(0));
    assert_eq!(context_paths(&env.chat_json(&a)), ["x.txt", "y.txt"]);
}

#[test]
fn an_unreadable_pin_file_is_never_replaced() {
    let env = Env::new();
    if !as_nobody(&env) {
        return;
    }
    let mut b = spawn_nobody(&env);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = b.ok(json!({"action": "chat_new"}))["id"]
            .as_str()
            .unwrap()
            .to_owned();
        b.ok(json!({"action": "chat_pin", "id": id, "pinned": true}));
        ids.push(id);
    }
    let pins = env.project.join(".bb7/pinned_chats.json");
    let before = std::fs::read(&pins).unwrap();
    set_mode(&pins, 0o000);
    let r = b.request(json!({"action": "chat_pin", "id": ids[0], "pinned": false}));
    set_mode(&pins, 0o644);
    assert_eq!(r["type"], "error", "{r}");
    assert_eq!(std::fs::read(&pins).unwrap(), before);
    // Readable again, the change goes through and keeps the other pins.
    b.ok(json!({"action": "chat_pin", "id": ids[0], "pinned": false}));
    let now = std::fs::read_to_string(&pins).unwrap();
    assert!(
        !now.contains(&ids[0]) && now.contains(&ids[1]) && now.contains(&ids[2]),
        "{now}"
    );
    assert_eq!(b.close().code(), Some(0));
}

fn no_two_user_messages_in_a_row(h: &[(String, String)]) {
    for w in h.windows(2) {
        assert!(
            !(w[0].0 == "user" && w[1].0 == "user"),
            "two user messages in a row: {h:?}"
        );
    }
}

fn staging_dirs(env: &Env, id: &str) -> usize {
    let staging = env.chat_dir(id).join("staging");
    if staging.is_dir() {
        std::fs::read_dir(staging).unwrap().count()
    } else {
        0
    }
}

#[test]
fn a_failure_storing_the_files_keeps_the_answer() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.txt", "a\n");
    // Staging cannot be created (as on a full disk): a file stands where the folder goes.
    std::fs::write(env.chat_dir(&id).join("staging"), "").unwrap();
    fake.push_sse(response(
        "",
        "Here is the change you asked for.",
        vec![("write_file", json!({"path": "a.txt", "content": "b\n"}))],
    ));
    let stream = b.turn_stream("change a");
    let end = stream.last().unwrap();
    assert_eq!(end["type"], "diff_error", "{end}");
    assert_eq!(end["tool_calls"][0]["code"], "store_failed", "{end}");
    let h = env.history(&id);
    assert!(
        h.iter()
            .any(|(r, t)| r == "assistant" && t.contains("Here is the change you asked for.")),
        "{h:?}"
    );
    no_two_user_messages_in_a_row(&h);
    assert!(env.output(&id, "a.txt").is_none());
    std::fs::remove_file(env.chat_dir(&id).join("staging")).unwrap();

    // A name the file system refuses (256 bytes) is a failed call, the text kept.
    let long = format!("{}.txt", "n".repeat(252));
    fake.push_sse(response(
        "",
        "A file with a long name.",
        vec![
            ("write_file", json!({"path": long, "content": "x\n"})),
            ("write_file", json!({"path": "ok.txt", "content": "ok\n"})),
        ],
    ));
    let end = b.turn("write it");
    assert_eq!(end["type"], "diff_error", "{end}");
    let h = env.history(&id);
    assert!(
        h.iter()
            .any(|(_, t)| t.contains("A file with a long name.")),
        "{h:?}"
    );
    no_two_user_messages_in_a_row(&h);
    assert_eq!(staging_dirs(&env, &id), 0);

    // The chat goes on normally.
    assert_a_turn_writes(&mut b, &fake, &env, &id);
    no_two_user_messages_in_a_row(&env.history(&id));
    assert_eq!(staging_dirs(&env, &id), 0);
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn staging_that_cannot_be_written_leaves_no_staging_folder() {
    let (env, fake) = fake_env(json!({}));
    if !as_nobody(&env) {
        return;
    }
    let mut b = spawn_nobody(&env);
    let id = env.init_chat(&mut b);
    env.add(&mut b, "a.txt", "a\n");
    let staging = env.chat_dir(&id).join("staging");
    fake.push_sse(response(
        "",
        "Two files.",
        vec![
            ("write_file", json!({"path": "a.txt", "content": "b\n"})),
            (
                "write_file",
                json!({"path": "z/new.txt", "content": "new\n"}),
            ),
        ],
    ));
    // A `staging/` bb7 may not write into (as on a full disk).
    std::fs::create_dir_all(&staging).unwrap();
    std::process::Command::new("chown")
        .args(["65534:65534"])
        .arg(&staging)
        .status()
        .unwrap();
    set_mode(&staging, 0o555);
    let end = b.turn("two files");
    // bb7 removes the empty `staging/` it could not use.
    let _ = std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755));
    assert_eq!(end["type"], "diff_error", "{end}");
    let h = env.history(&id);
    assert!(h.iter().any(|(_, t)| t.contains("Two files.")), "{h:?}");
    no_two_user_messages_in_a_row(&h);
    assert_eq!(staging_dirs(&env, &id), 0);
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn closing_stdin_mid_turn_is_not_a_users_cancel() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    fake.push_sse(vec![
        role(),
        text("The first half"),
        // Never opened: the turn is still running whenever the test ends it.
        Step::Wait(Gate::new()),
        text(" and the rest."),
        done(),
    ]);
    let rid = b.send(json!({"action": "send", "content": "tell me"}));
    b.wait_for_text(&rid, "The first half");
    assert_eq!(b.close().code(), Some(0));
    let h = env.history(&id);
    let note = assert_answer_then_note(&h, "The first half", "interrupted");
    assert!(!note.contains("aborted by user"), "{note}");
}

#[test]
fn a_users_cancel_still_says_so() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    fake.push_sse(vec![
        role(),
        text("The first half"),
        // Never opened: the turn is still running whenever the test ends it.
        Step::Wait(Gate::new()),
        done(),
    ]);
    let rid = b.send(json!({"action": "send", "content": "tell me"}));
    b.wait_for_text(&rid, "The first half");
    b.ok(json!({"action": "cancel", "target_request_id": rid}));
    let end = b.stream(&rid).pop().unwrap();
    assert_eq!(end["message"], "Response aborted by user.", "{end}");
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn a_commit_that_fails_after_its_journal_is_undone_not_finished_later() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.txt", "a\n");
    env.plant_output(&id, "a.txt", "earlier\n");
    // A folder where the second output goes: staging and the journal succeed, moving
    // `b.txt` into `output/` fails after `a.txt` has moved.
    env.plant_output(&id, "b.txt/inside", "x\n");
    fake.push_sse(response(
        "",
        "Two files.",
        vec![
            ("write_file", json!({"path": "a.txt", "content": "new a\n"})),
            ("write_file", json!({"path": "b.txt", "content": "new b\n"})),
        ],
    ));
    let end = b.turn("two files");
    assert_eq!(end["type"], "diff_error", "{end}");
    let calls = end["tool_calls"].as_array().unwrap();
    assert_eq!(calls[1]["code"], "store_failed", "{end}");
    // What the client was told is what is there: nothing of the response.
    assert_eq!(env.output(&id, "a.txt").as_deref(), Some("earlier\n"));
    assert_eq!(staging_dirs(&env, &id), 0);
    assert_eq!(b.close().code(), Some(0));

    // The obstacle goes (as a full disk frees up); opening the chat again must not
    // finish the commit the client was told failed.
    std::fs::remove_dir_all(env.chat_dir(&id).join("output/b.txt")).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    let statuses = b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(env.output(&id, "a.txt").as_deref(), Some("earlier\n"));
    assert_eq!(env.output(&id, "b.txt"), None, "{statuses}");
    let h = env.history(&id);
    assert!(h.iter().any(|(_, t)| t.contains("Two files.")), "{h:?}");
    no_two_user_messages_in_a_row(&h);
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn a_prompt_ledger_from_another_chat_is_a_cache_miss() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, first) = env.with_chat();
    env.add(&mut b, "alpha.txt", "ALPHA ONLY IN THE FIRST CHAT\n");
    fake.push_sse(response("", "An answer.", vec![]));
    assert_eq!(b.turn("hi")["type"], "done");
    let second = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.add(&mut b, "bravo.txt", "BRAVO\n");
    fake.push_sse(response("", "An answer.", vec![]));
    assert_eq!(b.turn("hi")["type"], "done");
    // The second chat's folder gets the first chat's ledger, as a chat copied over it
    // (or restored from elsewhere) would; both chats began with the same message.
    let ledger = |id: &str| env.chat_dir(id).join("prompt.json");
    std::fs::copy(ledger(&first), ledger(&second)).unwrap();
    fake.push_sse(response("", "An answer.", vec![]));
    assert_eq!(b.turn("and now?")["type"], "done");
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(
        !sent.contains("ALPHA"),
        "another chat's file was sent: {sent}"
    );
    assert!(sent.contains("BRAVO"), "{sent}");
    // A whole copied chat folder starts its ledger anew, with its own files.
    b.ok(json!({"action": "chat_select", "id": first}));
    assert_eq!(b.close().code(), Some(0));
    let copy = "c0c0c0c0c0";
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(env.chat_dir(&first))
        .arg(env.chat_dir(copy))
        .status()
        .unwrap();
    assert!(status.success());
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": copy}));
    fake.push_sse(response("", "An answer.", vec![]));
    assert_eq!(b.turn("again")["type"], "done");
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(sent.contains("ALPHA") && !sent.contains("BRAVO"), "{sent}");
    assert_eq!(b.close().code(), Some(0));
}
