//! `apply_file` is a three-way merge (docs/PROTOCOL.md, "bb7 specifics"): the user's
//! edits on other lines survive, overlapping edits are a `conflict` that writes
//! nothing unless `force`, and line endings and the final newline follow the disk.

mod common;

use common::{Bb7, Env};
use serde_json::json;

const BASE: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\n";

/// A chat with `f.txt` in context as `snapshot`, the model's `output` pending, and the
/// file on disk holding `disk`.
fn setup(snapshot: &str, output: &str, disk: &[u8]) -> (Env, Bb7, String) {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    std::fs::write(env.project.join("f.txt"), disk).unwrap();
    b.ok(json!({"action": "context_add", "path": "f.txt", "content": snapshot}));
    env.plant_output(&id, "f.txt", output);
    (env, b, id)
}

fn disk(env: &Env) -> Vec<u8> {
    std::fs::read(env.project.join("f.txt")).unwrap()
}

#[test]
fn a_user_edit_elsewhere_survives_the_apply() {
    let output = BASE.replace("l9\n", "nine\n");
    let mine = BASE
        .replace("l2\n", "two (mine)\n")
        .replace("l12\n", "l12\nl13\n");
    let (env, mut b, id) = setup(BASE, &output, mine.as_bytes());
    let r = b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    let want = mine.replace("l9\n", "nine\n");
    assert_eq!(r["type"], "ok");
    assert_eq!(r["content"], want.as_str());
    assert_eq!(String::from_utf8(disk(&env)).unwrap(), want);
    assert!(!env.chat_dir(&id).join("output/f.txt").exists());
    // The snapshot is now the merged file, so nothing is pending or out of step.
    let c = b.ok(json!({"action": "get_context_file", "path": "f.txt"}));
    assert_eq!(c["content"], want.as_str());
    // One checkpoint, holding the user's version as "before".
    let cps = b.ok(json!({"action": "checkpoint_list"}));
    assert_eq!(cps["checkpoints"].as_array().unwrap().len(), 1);
    let cp = b.ok(json!({"action": "checkpoint_get", "checkpoint_id": r["checkpoint_id"]}));
    assert_eq!(cp["files"][0]["before_content"], mine.as_str());
}

#[test]
fn an_edit_on_the_same_lines_is_a_conflict_and_changes_nothing() {
    let output = BASE.replace("l9\n", "nine\n");
    let mine = BASE.replace("l9\n", "NINE (mine)\n");
    let (env, mut b, id) = setup(BASE, &output, mine.as_bytes());
    let e = b.err(json!({"action": "apply_file", "path": "f.txt"}));
    assert_eq!(e["code"], "conflict", "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("line 9"), "{msg}");
    // A client reads the file and the lines from `data`, not from the text.
    assert_eq!(e["data"]["path"], "f.txt", "{e}");
    assert_eq!(e["data"]["conflicts"][0]["start_line"], 9, "{e}");
    assert_eq!(String::from_utf8(disk(&env)).unwrap(), mine);
    assert!(env.chat_dir(&id).join("output/f.txt").exists());
    let cps = b.ok(json!({"action": "checkpoint_list"}));
    assert!(cps["checkpoints"].as_array().unwrap().is_empty());
    // The CLI's and the plugin's apply is the same request: still no write.
    b.err(json!({"action": "apply_file", "path": "f.txt", "force": false}));
    assert_eq!(String::from_utf8(disk(&env)).unwrap(), mine);

    // force: the model wins on line 9, the user's other edits stay.
    std::fs::write(
        env.project.join("f.txt"),
        mine.replace("l1\n", "one (mine)\n"),
    )
    .unwrap();
    let r = b.ok(json!({"action": "apply_file", "path": "f.txt", "force": true}));
    let want = output.replace("l1\n", "one (mine)\n");
    assert_eq!(String::from_utf8(disk(&env)).unwrap(), want);
    assert_eq!(r["content"], want.as_str());
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn crlf_and_the_final_newline_of_the_disk_file_are_kept() {
    // The editor sent the snapshot without its final newline, the model kept that,
    // and the file on disk uses CRLF with a final newline.
    let snapshot = "alpha\nbeta\ngamma";
    let output = "alpha\nBETA\ngamma";
    let (env, mut b, _id) = setup(snapshot, output, b"alpha\r\nbeta\r\ngamma\r\n");
    b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    assert_eq!(disk(&env), b"alpha\r\nBETA\r\ngamma\r\n");

    // A file without final newline keeps lacking it; an LF file stays LF.
    let (env, mut b, _id) = setup("a\nb\n", "a\nB\n", b"a\nb");
    b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    assert_eq!(disk(&env), b"a\nB");

    // Unless the model changed the end: then its final newline wins.
    let (env, mut b, _id) = setup("a\nb", "a\nb\nc\n", b"a\nb");
    b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    assert_eq!(disk(&env), b"a\nb\nc\n");
}

#[test]
fn a_new_file_the_user_created_meanwhile_is_a_conflict_unless_identical() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    env.plant_output(&id, "new.rs", "fn model() {}\n");
    env.write("new.rs", "fn mine() {}\n");
    let e = b.err(json!({"action": "apply_file", "path": "new.rs"}));
    assert_eq!(e["code"], "conflict");
    assert_eq!(env.read("new.rs"), "fn mine() {}\n");
    b.ok(json!({"action": "apply_file", "path": "new.rs", "force": true}));
    assert_eq!(env.read("new.rs"), "fn model() {}\n");

    // Identical content is no conflict (and needs no write).
    env.plant_output(&id, "same.rs", "same\n");
    env.write("same.rs", "same\n");
    b.ok(json!({"action": "apply_file", "path": "same.rs"}));
    assert_eq!(env.read("same.rs"), "same\n");

    // Save-as onto an existing, different file is a conflict as well.
    env.plant_output(&id, "src.rs", "fn model() {}\n");
    env.write("copy.rs", "fn mine() {}\n");
    let e = b.err(json!({"action": "apply_file_as", "path": "src.rs", "destination": "copy.rs"}));
    assert_eq!(e["code"], "conflict");
    assert_eq!(env.read("copy.rs"), "fn mine() {}\n");
    b.ok(json!({"action": "apply_file_as", "path": "src.rs", "destination": "copy.rs", "force": true}));
    assert_eq!(env.read("copy.rs"), "fn model() {}\n");

    // A file in context that the user deleted meanwhile is a conflict too.
    env.write("gone.rs", "x\n");
    b.ok(json!({"action": "context_add", "path": "gone.rs", "content": "x\n"}));
    env.plant_output(&id, "gone.rs", "y\n");
    std::fs::remove_file(env.project.join("gone.rs")).unwrap();
    assert_eq!(
        b.err(json!({"action": "apply_file", "path": "gone.rs"}))["code"],
        "conflict"
    );
    assert!(!env.project.join("gone.rs").exists());
}

#[test]
fn applying_again_after_an_interrupted_apply_is_harmless() {
    // A crash after the file was written but before the output was removed leaves the
    // output pending; applying it again merges to the same file.
    let output = BASE.replace("l3\n", "three\n");
    let (env, mut b, _id) = setup(BASE, &output, output.as_bytes());
    let r = b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    assert_eq!(String::from_utf8(disk(&env)).unwrap(), output);
    assert!(r["checkpoint_id"].is_null());
}
