//! The same change on both sides is not a conflict: a hunk whose result the file on
//! disk already holds (the user typed it, or took the model's version by hand) is
//! applied, never pending, in `review_get`, `get_file_statuses`, `review_apply` and
//! `apply_file` (docs/PROTOCOL.md, "Review, apply and rollback").

mod common;

use common::{Bb7, Env};
use serde_json::{Value, json};

const BASE: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";
/// Three hunks: line 1, line 8, and an added line 11.
const OUT: &str = "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\nnine\nten\neleven\n";

fn setup() -> (Env, Bb7, String) {
    let env = Env::new();
    env.write("f.txt", BASE);
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "f.txt", "content": BASE}));
    env.plant_output(&id, "f.txt", OUT);
    (env, b, id)
}

fn review(b: &mut Bb7) -> Value {
    b.ok(json!({"action": "review_get", "path": "f.txt"}))["files"][0].clone()
}

/// (hunk id, state, on_disk, applies_cleanly) of each hunk, in review order.
fn rows(file: &Value) -> Vec<(String, String, bool, bool)> {
    file["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["hunk_id"].as_str().unwrap().to_owned(),
                h["state"].as_str().unwrap().to_owned(),
                h.get("on_disk").is_some_and(|v| v == true),
                h["applies_cleanly"] == true,
            )
        })
        .collect()
}

/// What [`rows`] gives for hunks `ids[i]` in the order of `want` (`(i, state,
/// on_disk)`), each applying cleanly.
fn clean(ids: &[String], want: &[(usize, &str, bool)]) -> Vec<(String, String, bool, bool)> {
    want.iter()
        .map(|&(i, state, on_disk)| (ids[i].clone(), state.to_owned(), on_disk, true))
        .collect()
}

fn status(b: &mut Bb7) -> Value {
    b.ok(json!({"action": "get_file_statuses", "contents": false}))["files"][0].clone()
}

fn hunk_events(env: &Env, id: &str) -> Vec<(String, String, Option<String>)> {
    env.chat_json(id)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["action"] == "UserAcceptHunk" || p["action"] == "UserRejectHunk")
        .map(|p| {
            (
                p["action"].as_str().unwrap().to_owned(),
                p["hunk_id"].as_str().unwrap().to_owned(),
                p["reason"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[test]
fn a_hunk_the_user_typed_is_applied_not_pending() {
    let (env, mut b, id) = setup();
    let ids: Vec<String> = rows(&review(&mut b)).into_iter().map(|r| r.0).collect();
    assert_eq!(ids.len(), 3);
    // The user typed the model's first line, and changed line 5 their own way.
    let disk = BASE.replace("one", "ONE").replace("five", "five (mine)");
    env.write("f.txt", &disk);
    let f = review(&mut b);
    let held_first = [
        (0, "accepted", true),
        (1, "pending", false),
        (2, "pending", false),
    ];
    assert_eq!(rows(&f), clean(&ids, &held_first));
    assert_eq!(f["review_state"], "partial");
    let s = status(&mut b);
    assert_eq!(s["status"], "M");
    assert_eq!(s["on_disk"], "some", "{s}");

    // Accepting another hunk records the typed one as applied too, and writes only
    // the accepted one: the user's lines stay as they are.
    let r = b.ok(
        json!({"action": "review_apply", "path": "f.txt", "accept": [ids[1]],
                        "expected_disk_hash": f["disk_hash"]}),
    );
    assert_eq!(r["applied"], json!([ids[1], ids[0]]));
    assert_eq!(r["pending"], json!([ids[2]]));
    assert_eq!(r["conflicts"], json!([]));
    assert_eq!(env.read("f.txt"), disk.replace("eight", "EIGHT"));
    let after = review(&mut b);
    let both = [
        (0, "accepted", true),
        (1, "accepted", false),
        (2, "pending", false),
    ];
    assert_eq!(rows(&after), clean(&ids, &both));
    // The snapshot holds both, so the model reads that they were taken.
    let snap = b.ok(json!({"action": "get_context_file", "path": "f.txt"}));
    assert_eq!(
        snap["content"],
        BASE.replace("one", "ONE").replace("eight", "EIGHT")
    );
    let accepted: Vec<String> = hunk_events(&env, &id).into_iter().map(|e| e.1).collect();
    assert_eq!(accepted, [ids[1].clone(), ids[0].clone()]);
    assert!(status(&mut b).get("on_disk").is_none());
}

#[test]
fn taking_the_models_version_over_a_conflict_makes_the_hunk_applied() {
    let (env, mut b, id) = setup();
    // The user changed line 8 their own way: the model's hunk there conflicts.
    env.write("f.txt", &BASE.replace("eight", "8 (mine)"));
    let f = review(&mut b);
    let h = rows(&f);
    assert_eq!(h[1].1, "pending");
    assert!(!h[1].3, "conflicts with the user's edit");
    let r = b.ok(
        json!({"action": "review_apply", "path": "f.txt", "accept": [h[1].0],
                        "expected_disk_hash": f["disk_hash"]}),
    );
    assert_eq!(r["conflicts"], json!([h[1].0]));
    // They take the model's line by hand (as the Neovim plugin's gY does): now it is
    // applied, and accepting it records it without writing the file.
    let taken = BASE.replace("eight", "EIGHT");
    env.write("f.txt", &taken);
    let f = review(&mut b);
    assert_eq!(rows(&f)[1], (h[1].0.clone(), "accepted".into(), true, true));
    let r = b.ok(
        json!({"action": "review_apply", "path": "f.txt", "accept": [h[1].0],
                        "reasons": {h[1].0.as_str(): "taken by hand"},
                        "expected_disk_hash": f["disk_hash"]}),
    );
    assert_eq!(r["applied"], json!([h[1].0]));
    assert_eq!(r["conflicts"], json!([]));
    assert_eq!(r["checkpoint_id"], Value::Null, "nothing was written");
    assert_eq!(env.read("f.txt"), taken);
    assert_eq!(
        hunk_events(&env, &id),
        [(
            "UserAcceptHunk".to_owned(),
            h[1].0.clone(),
            Some("taken by hand".to_owned())
        )]
    );
}

#[test]
fn a_file_that_holds_the_whole_change_applies_without_a_conflict() {
    let (env, mut b, id) = setup();
    // The user wrote the model's whole version, with CRLF line ends of their own.
    env.write("f.txt", &OUT.replace('\n', "\r\n"));
    let f = review(&mut b);
    assert!(rows(&f).iter().all(|r| r.1 == "accepted" && r.2 && r.3));
    assert_eq!(status(&mut b)["on_disk"], "all");
    let r = b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    assert_eq!(r["content"], OUT);
    assert_eq!(r["checkpoint_id"], Value::Null, "nothing was written");
    assert_eq!(env.read("f.txt"), OUT.replace('\n', "\r\n"));
    assert!(env.output(&id, "f.txt").is_none());
    let s = status(&mut b);
    assert_eq!(s["status"], "");
    assert!(s.get("on_disk").is_none());

    // Rejecting such a hunk is still the user's call: the file keeps their text.
    let (env, mut b, _id) = setup();
    env.write("f.txt", &BASE.replace("one", "ONE"));
    let f = review(&mut b);
    let first = rows(&f)[0].0.clone();
    let r = b.ok(
        json!({"action": "review_apply", "path": "f.txt", "reject": [first],
                        "expected_disk_hash": f["disk_hash"]}),
    );
    assert_eq!(r["rejected"], json!([first]));
    assert_eq!(r["applied"], json!([]));
    assert_eq!(env.read("f.txt"), BASE.replace("one", "ONE"));
}

#[test]
fn a_new_file_already_on_disk_as_the_model_wrote_it_is_no_conflict() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    env.plant_output(&id, "new.rs", "fn new() {}\n");
    env.write("new.rs", "fn new() {}\n");
    let s = status(&mut b);
    assert_eq!(
        (s["status"].clone(), s["on_disk"].clone()),
        (json!("!A"), json!("all"))
    );
    let r = b.ok(json!({"action": "review_get", "path": "new.rs"}));
    assert_eq!(r["files"][0]["hunks"][0]["on_disk"], true);
    b.ok(json!({"action": "apply_file", "path": "new.rs"}));
    assert_eq!(env.read("new.rs"), "fn new() {}\n");
    // A different file there is still one.
    env.plant_output(&id, "other.rs", "fn other() {}\n");
    env.write("other.rs", "fn mine() {}\n");
    let rows = b.ok(json!({"action": "get_file_statuses"}))["files"].clone();
    let other = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "other.rs")
        .unwrap()
        .clone();
    assert!(other.get("on_disk").is_none(), "{other}");
    assert_eq!(
        b.err(json!({"action": "apply_file", "path": "other.rs"}))["code"],
        "conflict"
    );
}
