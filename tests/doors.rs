//! One rule at every door: what bb7 stores it can read back. A context path is
//! checked by the same rule when it is added and when its chat is opened; content
//! with a NUL byte is refused when added; a model output over the read limit is
//! refused when the model writes it, and an existing one can still be listed,
//! reviewed beside the others, rejected and deleted (invariant 13 in docs/ARCHITECTURE.md, "State files").

mod common;

use common::fake_model::*;
use common::{Env, fake_env};
use serde_json::{Value, json};

fn context_paths(r: &Value) -> Vec<String> {
    common::paths_of(&r["files"])
}

#[test]
fn a_backslash_name_is_stored_and_opened_again() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "..\\pwn.txt", "inside\n");
    fake.push_sse(response("", "seen", vec![]));
    assert_eq!(b.turn("look")["type"], "done");
    assert_eq!(b.close().code(), Some(0));
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    let listed = b.ok(json!({"action": "context_list"}));
    assert_eq!(context_paths(&listed), ["..\\pwn.txt"]);
    fake.push_sse(response("", "again", vec![]));
    assert_eq!(b.turn("and now")["type"], "done");
    assert!(!env.project.parent().unwrap().join("pwn.txt").exists());
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn a_path_refused_on_opening_is_refused_when_added() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    // `.BB7` is bb7's state directory on a case-insensitive file system: a chat that
    // names it is refused as damaged, so adding it is refused too.
    env.write(".BB7/x.txt", "x\n");
    let r = b.err(json!({"action": "context_add", "path": ".BB7/x.txt", "content": "x\n"}));
    assert_eq!(r["code"], "path_escape", "{r}");
    assert_eq!(b.close().code(), Some(0));
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn nul_in_added_content_is_refused_at_the_door() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    env.write("a.txt", "a\n");
    for req in [
        json!({"action": "context_add", "path": "a.txt", "content": "a\u{0}b\n"}),
        json!({"action": "context_add_section", "path": "a.txt", "content": "a\u{0}b\n",
               "start_line": 1, "end_line": 1}),
    ] {
        let r = b.err(req);
        assert_eq!(r["code"], "invalid_request", "{r}");
        assert!(r["message"].as_str().unwrap().contains("NUL"), "{r}");
    }
    assert!(context_paths(&b.ok(json!({"action": "context_list"}))).is_empty());
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    let r = b.err(json!({"action": "context_update", "path": "a.txt", "content": "\u{0}"}));
    assert!(r["message"].as_str().unwrap().contains("NUL"), "{r}");
    fake.push_sse(response("", "fine", vec![]));
    assert_eq!(b.turn("read it")["type"], "done");
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn a_model_output_over_the_read_limit_is_refused_when_written() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    // 70,000 one-letter lines, each made 1,000 bytes long: about 70 MB from a small
    // answer.
    env.add(&mut b, "big.txt", &"x\n".repeat(70_000));
    let long = "y".repeat(1000);
    fake.push_sse(response(
        "",
        "grown",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "big.txt", "old_string": "x", "new_string": long,
                              "replace_all": true}]}),
        )],
    ));
    let m = b.turn("grow it");
    assert_eq!(m["type"], "diff_error", "{m}");
    let call = &m["tool_calls"][0];
    assert!(
        call["error"].as_str().unwrap().contains("too large"),
        "{call}"
    );
    assert!(env.output(&id, "big.txt").is_none());
    b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(b.close().code(), Some(0));
}

/// Plants a sparse output of 65 MiB for `rel` in chat `id`, as an older bb7 could have
/// stored it.
fn plant_huge_output(env: &Env, id: &str, rel: &str) {
    env.plant_output(id, rel, "");
    let p = env.chat_dir(id).join("output").join(rel);
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
}

#[test]
fn an_existing_output_over_the_read_limit_is_listed_rejected_and_deleted() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.txt", "a\n");
    plant_huge_output(&env, &id, "a.txt");
    plant_huge_output(&env, &id, "new.txt");
    for contents in [true, false] {
        let rows = b.ok(json!({"action": "get_file_statuses", "contents": contents}));
        let rows = rows["files"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{rows:?}");
        for row in rows {
            assert_eq!(row["has_output"], true, "{row}");
            assert!(
                row["output_error"].as_str().unwrap().contains("too large"),
                "{row}"
            );
        }
    }
    // A send cannot show it to the model, and says how to go on.
    let m = b.turn("go");
    assert_eq!(m["type"], "error", "{m}");
    assert!(
        m["message"].as_str().unwrap().contains("output_delete"),
        "{m}"
    );
    b.ok(json!({"action": "output_delete", "path": "a.txt"}));
    b.ok(json!({"action": "output_delete", "path": "new.txt"}));
    assert!(!env.chat_dir(&id).join("output/a.txt").exists());
    let rows = b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(rows["files"].as_array().unwrap().len(), 1, "{rows}");
    fake.push_sse(response("", "fine", vec![]));
    assert_eq!(b.turn("go on")["type"], "done");
    // A chat holding one is deleted whole.
    plant_huge_output(&env, &id, "b.txt");
    b.ok(json!({"action": "chat_new"}));
    b.ok(json!({"action": "chat_delete", "id": id}));
    assert!(!env.chat_dir(&id).exists());
    assert_eq!(b.close().code(), Some(0));
}

/// A chat with `good.txt` in context and a one-line change of it waiting for review.
fn chat_with_a_good_change(env: &Env) -> (common::Bb7, String) {
    let (mut b, id) = env.with_chat();
    let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    env.add(&mut b, "good.txt", &text);
    env.plant_output(&id, "good.txt", &text.replace("line 3\n", "line three\n"));
    (b, id)
}

/// `review_get` of two files: `good.txt`'s row (one hunk, no error) and the other's.
fn review_rows(b: &mut common::Bb7) -> (Value, Value) {
    let review = b.ok(json!({"action": "review_get"}));
    let files = review["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{review}");
    let (good, other): (Vec<&Value>, Vec<&Value>) =
        files.iter().partition(|f| f["path"] == "good.txt");
    let good = good[0].clone();
    assert_eq!(good["hunks"].as_array().unwrap().len(), 1, "{good}");
    assert!(good.get("output_error").is_none(), "{good}");
    (good, other[0].clone())
}

/// Applies `good.txt`'s change whole, reviewed as `good`.
fn apply_the_good_change(env: &Env, b: &mut common::Bb7, good: &Value) {
    b.ok(
        json!({"action": "review_apply", "path": "good.txt", "accept": "all", "reject": [],
                "expected_disk_hash": good["disk_hash"]}),
    );
    assert!(env.read("good.txt").contains("line three\n"));
}

/// `review_get` with an output over the read limit beside a good one: the good one is
/// reviewed and applied, the bad one is reported on its own row (`output_error`, no
/// hunks) and rejected.
#[test]
fn a_review_goes_on_beside_an_output_over_the_read_limit() {
    let env = Env::new();
    let (mut b, id) = chat_with_a_good_change(&env);
    env.add(&mut b, "big.txt", "small\n");
    plant_huge_output(&env, &id, "big.txt");

    let (good, big) = review_rows(&mut b);
    assert!(
        big["output_error"].as_str().unwrap().contains("too large"),
        "{big}"
    );
    assert!(
        big["output_error"]
            .as_str()
            .unwrap()
            .contains("output_delete"),
        "{big}"
    );
    assert_eq!(big["hunks"], json!([]));
    assert_eq!(big["output_version"], Value::Null);
    assert_eq!(big["status"], "M");
    // Asked for alone, it is the same row, not an error.
    let alone = b.ok(json!({"action": "review_get", "path": "big.txt"}));
    assert_eq!(alone["files"][0]["output_error"], big["output_error"]);

    apply_the_good_change(&env, &mut b, &good);
    b.ok(json!({"action": "output_delete", "path": "big.txt"}));
    let review = b.ok(json!({"action": "review_get"}));
    assert!(
        review["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["path"] != "big.txt" && f.get("output_error").is_none()),
        "{review}"
    );
    assert_eq!(b.close().code(), Some(0));
}

/// Adds append to the chat's journal: `chat.json` is not rewritten by each add, a
/// repeated add is still refused, and letting the chat go folds the journal into
/// `chat.json` (docs/ARCHITECTURE.md, "Durability" 10).
#[test]
fn adds_append_to_a_journal_and_closing_folds_it() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    let chat_json = env.chat_dir(&id).join("chat.json");
    let stamp = || {
        let m = std::fs::metadata(&chat_json).unwrap();
        (m.ino(), m.len())
    };
    env.add(&mut b, "f0.txt", "0\n");
    let first = stamp();
    for i in 1..50 {
        env.add(&mut b, &format!("f{i}.txt"), &format!("{i}\n"));
    }
    assert_eq!(stamp(), first, "chat.json was rewritten by an add");
    let r = b.err(json!({"action": "context_add", "path": "f7.txt", "content": "7\n"}));
    assert!(
        r["message"].as_str().unwrap().contains("already exists"),
        "{r}"
    );
    b.ok(json!({"action": "context_remove", "path": "f7.txt"}));
    b.ok(json!({"action": "context_add", "path": "f7.txt", "content": "seven\n"}));
    assert_eq!(b.close().code(), Some(0));
    let saved = env.chat_json(&id);
    assert_eq!(saved["context_files"].as_array().unwrap().len(), 50);
    assert!(saved.get("context_journal").is_none(), "folded on close");
    let journals = std::fs::read_dir(env.chat_dir(&id))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .count();
    assert_eq!(journals, 0);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    let listed = b.ok(json!({"action": "context_list"}));
    assert_eq!(context_paths(&listed).len(), 50);
    assert_eq!(b.close().code(), Some(0));
}

/// `review_get` while the user's copy of one file under review is no longer text (a
/// binary written over it): that file's row says so, the others are reviewed and
/// applied, and its output can still be rejected.
#[test]
fn a_review_goes_on_beside_a_file_on_disk_that_is_not_text() {
    let env = Env::new();
    let (mut b, id) = chat_with_a_good_change(&env);
    env.add(&mut b, "bin.txt", "small\n");
    env.plant_output(&id, "bin.txt", "smaller\n");
    std::fs::write(env.project.join("bin.txt"), b"\xff\xfe\x00binary").unwrap();

    let (good, bin) = review_rows(&mut b);
    assert!(
        bin["output_error"].as_str().unwrap().contains("not UTF-8"),
        "{bin}"
    );
    assert_eq!(bin["hunks"], json!([]));
    assert!(
        bin["output_version"].is_string(),
        "the output itself read: {bin}"
    );
    let alone = b.ok(json!({"action": "review_get", "path": "bin.txt"}));
    assert_eq!(alone["files"][0]["output_error"], bin["output_error"]);

    apply_the_good_change(&env, &mut b, &good);
    b.ok(json!({"action": "output_delete", "path": "bin.txt"}));
    assert_eq!(
        std::fs::read(env.project.join("bin.txt")).unwrap(),
        b"\xff\xfe\x00binary",
        "the user's file is untouched"
    );
}
