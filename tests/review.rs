//! Review, per-hunk apply, checkpoints and rollback through the binary.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, events};
use serde_json::{Value, json};

const BASE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
const OUT: &str = "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\nnine\nten\neleven\n";

fn setup(content: &str, output: &str) -> (Env, Bb7, String) {
    let env = Env::new();
    std::fs::write(env.project.join("f.txt"), content).unwrap();
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "f.txt", "content": content}));
    env.plant_output(&id, "f.txt", output);
    (env, b, id)
}

fn review(b: &mut Bb7, path: &str) -> Value {
    let r = b.ok(json!({"action": "review_get", "path": path}));
    r["files"][0].clone()
}

fn ids(file: &Value) -> Vec<String> {
    file["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["hunk_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn hunks_are_listed_with_stable_ids() {
    let (env, mut b, _id) = setup(BASE, OUT);
    let all = b.ok(json!({"action": "review_get"}));
    assert_eq!(all["type"], "review");
    let f = &all["files"][0];
    assert_eq!(f["path"], "f.txt");
    assert_eq!(f["status"], "M");
    assert!(f["disk_hash"].as_str().unwrap().starts_with("sha256:"));
    let hunks = f["hunks"].as_array().unwrap();
    assert_eq!(hunks.len(), 3);
    assert_eq!(hunks[0]["header"], "@@ -1,1 +1,1 @@");
    assert_eq!(hunks[0]["patch"], "@@ -1,1 +1,1 @@\n-one\n+ONE\n");
    assert_eq!(
        (hunks[0]["added"].clone(), hunks[0]["removed"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(hunks[0]["state"], "pending");
    assert_eq!(hunks[0]["applies_cleanly"], true);
    assert_eq!(hunks[0]["oversized"], false);
    let first = ids(f);
    assert_eq!(ids(&review(&mut b, "f.txt")), first);
    drop(b);
    // Across a restart too.
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(ids(&review(&mut b, "f.txt")), first);
}

#[test]
fn accept_some_and_reject_others_in_one_file() {
    let (env, mut b, id) = setup(BASE, OUT);
    let f = review(&mut b, "f.txt");
    let h = ids(&f);
    let r = b.ok(json!({"action": "review_apply", "path": "f.txt", "accept": [h[0]], "reject": [h[2]],
                        "expected_disk_hash": f["disk_hash"], "reasons": {h[2].as_str(): "no new lines please"}}));
    assert_eq!(r["type"], "review_applied");
    assert_eq!(r["applied"], json!([h[0]]));
    assert_eq!(r["rejected"], json!([h[2]]));
    assert_eq!(r["pending"], json!([h[1]]));
    assert_eq!(r["conflicts"], json!([]));
    assert!(r["checkpoint_id"].as_str().unwrap().starts_with("cp_"));
    assert_eq!(env.read("f.txt"), BASE.replace("one", "ONE"));
    assert_eq!(r["content"], BASE.replace("one", "ONE"));
    // The output keeps only the pending hunk; the review still lists the decided
    // ones (decided first, same ids) with their state, also after a restart.
    let out = std::fs::read_to_string(env.chat_dir(&id).join("output/f.txt")).unwrap();
    assert_eq!(out, BASE.replace("one", "ONE").replace("eight", "EIGHT"));
    let states = |f: &Value| -> Vec<String> {
        f["hunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["state"].as_str().unwrap().to_owned())
            .collect()
    };
    let after = review(&mut b, "f.txt");
    assert_eq!(ids(&after), vec![h[0].clone(), h[2].clone(), h[1].clone()]);
    assert_eq!(states(&after), ["accepted", "rejected", "pending"]);
    assert_eq!(after["review_state"], "partial");
    drop(b);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    let again = review(&mut b, "f.txt");
    assert_eq!(ids(&again), ids(&after));
    assert_eq!(states(&again), states(&after));
    // Decisions are recorded for the model.
    let chat = env.chat_json(&id);
    let ev: Vec<_> = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .filter(|p| p["type"] == "context_event")
        .collect();
    let accept = ev.iter().find(|p| p["action"] == "UserAcceptHunk").unwrap();
    assert_eq!(accept["hunk"], "@@ -1,1 +1,1 @@");
    let rej = ev.iter().find(|p| p["action"] == "UserRejectHunk").unwrap();
    assert_eq!(rej["reason"], "no new lines please");
    // Accept the last one: the output is gone and the status is clean.
    let f = review(&mut b, "f.txt");
    b.ok(json!({"action": "review_apply", "path": "f.txt", "accept": "all", "expected_disk_hash": f["disk_hash"]}));
    assert_eq!(
        env.read("f.txt"),
        BASE.replace("one", "ONE").replace("eight", "EIGHT")
    );
    assert!(!env.chat_dir(&id).join("output/f.txt").exists());
    assert_eq!(
        b.ok(json!({"action": "get_file_statuses"}))["files"][0]["status"],
        ""
    );
}

#[test]
fn user_edits_survive_and_overlaps_are_conflicts() {
    let (env, mut b, _id) = setup(BASE, OUT);
    // The user changed line 5 (no hunk there) and line 8 (where a hunk is).
    std::fs::write(
        env.project.join("f.txt"),
        BASE.replace("five", "FIVE (user)")
            .replace("eight", "8 (user)"),
    )
    .unwrap();
    let f = review(&mut b, "f.txt");
    let clean: Vec<bool> = f["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["applies_cleanly"].as_bool().unwrap())
        .collect();
    assert_eq!(clean, [true, false, true]);
    let r = b.ok(json!({"action": "review_apply", "path": "f.txt", "accept": "all", "expected_disk_hash": f["disk_hash"]}));
    let h = ids(&f);
    assert_eq!(r["conflicts"], json!([h[1]]));
    assert_eq!(r["pending"], json!([h[1]]));
    assert_eq!(
        env.read("f.txt"),
        "ONE\ntwo\nthree\nfour\nFIVE (user)\nsix\nseven\n8 (user)\nnine\nten\neleven\n"
    );
}

#[test]
fn a_stale_review_is_refused_and_nothing_is_written() {
    let (env, mut b, id) = setup(BASE, OUT);
    let f = review(&mut b, "f.txt");
    std::fs::write(env.project.join("f.txt"), format!("{BASE}extra\n")).unwrap();
    let e = b.err(json!({"action": "review_apply", "path": "f.txt", "accept": "all", "expected_disk_hash": f["disk_hash"]}));
    assert_eq!(e["code"], "conflict");
    assert_eq!(env.read("f.txt"), format!("{BASE}extra\n"));
    assert_eq!(
        std::fs::read_to_string(env.chat_dir(&id).join("output/f.txt")).unwrap(),
        OUT
    );
    b.err(json!({"action": "review_apply", "path": "f.txt", "accept": ["h_unknown"], "expected_disk_hash": f["disk_hash"]}));
    b.err(json!({"action": "review_apply", "path": "f.txt", "accept": "all"}));
}

#[test]
fn crlf_and_missing_final_newline_are_preserved() {
    let crlf = BASE.replace('\n', "\r\n");
    let (env, mut b, _id) = setup(&crlf, OUT);
    let f = review(&mut b, "f.txt");
    assert_eq!(f["hunks"].as_array().unwrap().len(), 3);
    b.ok(json!({"action": "review_apply", "path": "f.txt", "accept": [ids(&f)[0]], "expected_disk_hash": f["disk_hash"]}));
    assert_eq!(
        std::fs::read(env.project.join("f.txt")).unwrap(),
        crlf.replace("one", "ONE").into_bytes()
    );

    let (env, mut b, _id) = setup("a\nb\nc", "a\nB\nc");
    let f = review(&mut b, "f.txt");
    b.ok(json!({"action": "review_apply", "path": "f.txt", "accept": "all", "expected_disk_hash": f["disk_hash"]}));
    assert_eq!(env.read("f.txt"), "a\nB\nc");
}

#[test]
fn new_files_and_conflicting_new_files() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    env.plant_output(&id, "new.rs", "fn new() {}\n");
    let f = review(&mut b, "new.rs");
    assert_eq!(f["status"], "A");
    assert_eq!(f["disk_hash"], Value::Null);
    b.ok(json!({"action": "review_apply", "path": "new.rs", "accept": "all", "expected_disk_hash": null}));
    assert_eq!(env.read("new.rs"), "fn new() {}\n");
    assert_eq!(
        b.ok(json!({"action": "context_list"}))["files"][0]["path"],
        "new.rs"
    );

    env.write("exists.rs", "mine\n");
    env.plant_output(&id, "exists.rs", "theirs\n");
    let f = review(&mut b, "exists.rs");
    assert_eq!(f["status"], "!A");
    assert_eq!(f["hunks"][0]["applies_cleanly"], false);
    let r = b.ok(json!({"action": "review_apply", "path": "exists.rs", "accept": "all", "expected_disk_hash": f["disk_hash"]}));
    assert_eq!(r["conflicts"].as_array().unwrap().len(), 1);
    assert_eq!(env.read("exists.rs"), "mine\n");
}

#[test]
fn checkpoints_and_rollbacks() {
    let (env, mut b, id) = setup(BASE, OUT);
    // apply_file records a checkpoint too.
    let r = b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    let cp = r["checkpoint_id"].as_str().unwrap().to_owned();
    assert_eq!(env.read("f.txt"), OUT);
    let list = b.ok(json!({"action": "checkpoint_list", "chat_id": id}));
    assert_eq!(list["checkpoints"][0]["checkpoint_id"], cp.as_str());
    assert_eq!(list["checkpoints"][0]["action"], "apply_file");
    assert_eq!(
        list["checkpoints"][0]["files"][0]["hunk_ids"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let got = b.ok(json!({"action": "checkpoint_get", "checkpoint_id": cp}));
    assert_eq!(got["files"][0]["before_content"], BASE);
    assert_eq!(got["files"][0]["after_content"], OUT);
    let d3 = b.ok(json!({"action": "checkpoint_diff3", "checkpoint_id": cp, "path": "f.txt"}));
    assert_eq!(
        (
            d3["checkpoint_base"].as_str(),
            d3["current"].as_str(),
            d3["proposed"].as_str()
        ),
        (Some(BASE), Some(OUT), Some(OUT))
    );

    // A later edit of a line the apply changed blocks a hard rollback unless forced.
    let later = OUT
        .replace("ONE", "ONE (later)")
        .replace("four", "FOUR (later)");
    std::fs::write(env.project.join("f.txt"), &later).unwrap();
    let r = b.ok(json!({"action": "checkpoint_rollback", "checkpoint_id": cp, "mode": "hard_all"}));
    assert_eq!(r["files"][0]["restored"], false);
    assert_eq!(r["files"][0]["conflict"], true);
    assert_eq!(r["checkpoint_id"], Value::Null);
    // Without force a hard rollback only says what it would drop: lines 1 and 4.
    let reason = r["files"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("would drop"), "{reason}");
    assert!(
        reason.contains("line 1") && reason.contains("line 4"),
        "{reason}"
    );
    assert_eq!(env.read("f.txt"), later);

    // A scoped rollback of one hunk keeps the later edit.
    let hunk = got["files"][0]["hunk_ids"][1].as_str().unwrap().to_owned();
    let r = b.ok(json!({"action": "checkpoint_rollback", "checkpoint_id": cp, "mode": "scoped_selected", "hunk_ids": [hunk]}));
    assert_eq!(r["files"][0]["restored"], true);
    assert_eq!(env.read("f.txt"), later.replace("EIGHT", "eight"));
    let scoped_cp = r["checkpoint_id"].as_str().unwrap().to_owned();

    // The rollback is a checkpoint and can be rolled back.
    b.ok(json!({"action": "checkpoint_rollback", "checkpoint_id": scoped_cp, "mode": "hard_all"}));
    assert_eq!(env.read("f.txt"), later);

    // A forced hard rollback resets the file to the checkpoint's base: the later edits
    // are dropped, the one on a line the apply did not touch too (the confirmed
    // "discard later edits"; a scoped rollback is the one that keeps them).
    let r = b.ok(json!({"action": "checkpoint_rollback", "checkpoint_id": cp, "mode": "hard_all", "force": true}));
    assert_eq!(r["files"][0]["restored"], true);
    assert_eq!(env.read("f.txt"), BASE);
    assert!(
        events(&env.chat_json(&id))
            .iter()
            .any(|(a, _)| a == "UserRollback")
    );
    assert_eq!(
        b.ok(json!({"action": "checkpoint_list"}))["checkpoints"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    b.err(json!({"action": "checkpoint_get", "checkpoint_id": "cp_../../x"}));
    b.err(json!({"action": "checkpoint_rollback", "checkpoint_id": cp, "mode": "sideways"}));
}

#[test]
fn decisions_reach_the_model_in_the_next_request() {
    let env = Env::new();
    let fake = FakeModel::start();
    env.write_config(json!({"api_key": "k", "base_url": fake.url, "default_model": "m"}));
    std::fs::write(env.project.join("f.txt"), BASE).unwrap();
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "f.txt", "content": BASE}));
    env.plant_output(&id, "f.txt", OUT);
    let f = review(&mut b, "f.txt");
    let h = ids(&f);
    b.ok(json!({"action": "review_apply", "path": "f.txt", "accept": [h[0]], "reject": [h[1]],
                "expected_disk_hash": f["disk_hash"], "reasons": {h[1].as_str(): "keep eight lowercase"}}));
    fake.push_sse(response("", "Noted.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "what did I keep?"}));
    loop {
        let m = b.reply_to(&rid);
        if m["type"] == "done" {
            break;
        }
        assert_ne!(m["type"], "error", "{m}");
    }
    let user = fake.chat_bodies()[0]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(user.contains("action=\"UserAcceptHunk\""), "{user}");
    assert!(user.contains("action=\"UserRejectHunk\""));
    assert!(user.contains("reason=\"keep eight lowercase\""));
    assert!(user.contains("hunk=\"@@ -8,1 +8,1 @@\""));
}

/// The change line of a turn (`Edit f.txt: N hunks`) counts the hunks the review lists
/// for it, also when two edits are a few lines apart (one unified-diff hunk with its
/// context, two review hunks).
#[test]
fn the_change_line_counts_the_hunks_the_review_lists() {
    let (env, fake) = common::fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    std::fs::write(env.project.join("f.txt"), BASE).unwrap();
    env.add(&mut b, "f.txt", BASE);
    let fid = common::file_id("f.txt", BASE);
    fake.push_sse(response(
        "",
        "done",
        vec![(
            "edit_file",
            json!({"edits": [
                {"path": "f.txt", "file_id": fid, "old_string": "two\n", "new_string": "TWO\n"},
                {"path": "f.txt", "file_id": fid, "old_string": "five\n", "new_string": "FIVE\n"}]}),
        )],
    ));
    let done = b.turn("shout two and five");
    assert_eq!(done["type"], "done", "{done}");
    let description = done["changes"][0]["description"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = review(&mut b, "f.txt")["hunks"].as_array().unwrap().len();
    assert_eq!(listed, 2);
    assert!(
        description.starts_with(&format!("Edit f.txt: {listed} hunks,")),
        "{description}"
    );
}
