//! The model's file tools through the binary: the reference schemas per `diff_mode`,
//! `file_id` resolution (pending writes, then output, then snapshot), refusal codes,
//! and model paths that leave the project (a failed call; bb7 keeps serving).

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env, file_id};
use serde_json::{Value, json};

fn setup(extra: Value) -> (Env, FakeModel, Bb7, String) {
    let (env, fake) = fake_env(extra);
    let (b, id) = env.with_chat();
    (env, fake, b, id)
}

fn turn(b: &mut Bb7, fake: &FakeModel, calls: Vec<(&str, Value)>) -> Value {
    fake.push_sse(response("", "ok", calls));
    b.turn("change it")
}

#[test]
fn each_diff_mode_exposes_the_reference_schema() {
    let expect = [
        ("search_replace_multi", json!(["edits"])),
        (
            "search_replace",
            json!(["path", "file_id", "old_string", "new_string"]),
        ),
        ("anchored", json!(["path", "file_id", "changes"])),
    ];
    for (mode, required) in expect {
        let (_env, fake, mut b, _id) = setup(json!({"diff_mode": mode}));
        assert_eq!(turn(&mut b, &fake, vec![])["type"], "done");
        let tools = fake.chat_bodies()[0]["tools"].clone();
        assert_eq!(tools[0]["function"]["name"], "write_file");
        let edit = &tools[1]["function"];
        assert_eq!(edit["name"], "edit_file");
        assert_eq!(edit["parameters"]["required"], required, "{mode}");
        let props = &edit["parameters"]["properties"];
        match mode {
            "search_replace_multi" => {
                let item = &props["edits"]["items"];
                assert_eq!(
                    item["required"],
                    json!(["path", "file_id", "old_string", "new_string"])
                );
                assert_eq!(item["properties"]["replace_all"]["type"], "boolean");
                assert!(props.get("path").is_none(), "the path is per edit");
            }
            "anchored" => {
                let item = &props["changes"]["items"];
                assert_eq!(item["required"], json!(["start", "content"]));
                assert_eq!(item["properties"]["end"]["type"], "array");
            }
            _ => assert_eq!(props["replace_all"]["type"], "boolean"),
        }
        // The description tells the model the rules.
        let description = edit["description"].as_str().unwrap();
        assert!(description.contains("file_id"), "{mode}: {description}");
    }
}

#[test]
fn file_id_resolves_pending_writes_then_output_then_snapshot() {
    let (env, fake, mut b, id) = setup(json!({}));
    let snapshot = "a = 1\nb = 2\n";
    env.add(&mut b, "v.py", snapshot);
    let snap_id = file_id("v.py", snapshot);
    // First turn: edits against the snapshot, both with the id the model was shown;
    // the second edit sees the first.
    let m = turn(
        &mut b,
        &fake,
        vec![(
            "edit_file",
            json!({"edits": [
                {"path": "v.py", "file_id": snap_id, "old_string": "a = 1", "new_string": "a = 10"},
                {"path": "v.py", "file_id": snap_id, "old_string": "a = 10\nb = 2", "new_string": "a = 10\nb = 20"}]}),
        )],
    );
    assert_eq!(m["type"], "done", "{m}");
    let out = env.output(&id, "v.py").unwrap();
    assert_eq!(out, "a = 10\nb = 20\n");
    // Now the writable version is the pending output: the snapshot's id is stale.
    let m = turn(
        &mut b,
        &fake,
        vec![(
            "edit_file",
            json!({"edits": [{"path": "v.py", "file_id": snap_id, "old_string": "b = 20", "new_string": "b = 3"}]}),
        )],
    );
    assert_eq!(m["type"], "diff_error", "{m}");
    assert_eq!(m["tool_calls"][0]["code"], "file_id_mismatch");
    let out_id = file_id("v.py", &out);
    assert!(
        m["errors"][0].as_str().unwrap().contains(&out_id),
        "the error names the writable id: {m}"
    );
    assert_eq!(env.output(&id, "v.py").unwrap(), out);
    // With the output's id, a write_file and a later edit of the same response chain.
    let m = turn(
        &mut b,
        &fake,
        vec![
            (
                "edit_file",
                json!({"edits": [{"path": "v.py", "file_id": out_id, "old_string": "b = 20", "new_string": "b = 3"}]}),
            ),
            (
                "edit_file",
                json!({"edits": [{"path": "v.py", "file_id": out_id, "old_string": "b = 3", "new_string": "b = 4"}]}),
            ),
        ],
    );
    assert_eq!(m["type"], "done", "{m}");
    assert_eq!(env.output(&id, "v.py").unwrap(), "a = 10\nb = 4\n");
}

#[test]
fn refusals_carry_codes_match_lines_and_suggestions() {
    let (env, fake, mut b, id) = setup(json!({}));
    env.add(
        &mut b,
        "r.go",
        "package r\n\nfunc A() {}\n\nfunc A2() {}\n\nfunc A() {}\n",
    );
    let m = turn(
        &mut b,
        &fake,
        vec![
            (
                "edit_file",
                json!({"edits": [{"path": "r.go", "old_string": "func A() {}", "new_string": "func B() {}"}]}),
            ),
            (
                "edit_file",
                json!({"edits": [{"path": "r.go", "old_string": "func A3() {}", "new_string": "func C() {}"}]}),
            ),
            ("edit_file", json!({"edits": [{"path": "r.go"}]})),
        ],
    );
    assert_eq!(m["type"], "diff_error");
    let calls = m["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["code"], "not_unique");
    assert_eq!(calls[0]["match_lines"], json!([3, 7]));
    assert_eq!(calls[1]["code"], "not_found");
    let suggestions = calls[1]["suggestions"].as_array().unwrap();
    assert!(
        suggestions.contains(&json!("5: func A2() {}")),
        "{}",
        calls[1]
    );
    assert_eq!(calls[2]["code"], "invalid_arguments");
    assert!(
        calls[2]["error"].as_str().unwrap().contains("\"edits\""),
        "the refusal quotes the expected shape: {}",
        calls[2]
    );
    assert!(env.output(&id, "r.go").is_none());
}

#[test]
fn every_escaping_path_is_a_failed_call_and_bb7_keeps_serving() {
    let (env, fake, mut b, id) = setup(json!({}));
    env.add(&mut b, "ok.txt", "fine\n");
    let outside = env.project.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.project.join("link")).unwrap();
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    for path in [
        "../x.txt",
        "/etc/bb7-test",
        "link/x.txt",
        ".git/config",
        ".bb7/chats/x",
        "sub/.svn/entries",
        ".jj/repo",
    ] {
        let m = turn(
            &mut b,
            &fake,
            vec![
                (
                    "edit_file",
                    json!({"edits": [{"path": "ok.txt", "old_string": "fine", "new_string": "changed"}]}),
                ),
                ("write_file", json!({"path": path, "content": "x\n"})),
            ],
        );
        assert_eq!(m["type"], "diff_error", "{path}: {m}");
        assert_eq!(m["tool_calls"][1]["code"], "path_escape", "{path}: {m}");
        assert!(env.output(&id, "ok.txt").is_none(), "{path}");
    }
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    assert!(!env.project.join(".git/config").exists());
    // Still serving: a normal turn applies.
    let m = turn(
        &mut b,
        &fake,
        vec![(
            "edit_file",
            json!({"edits": [{"path": "ok.txt", "old_string": "fine", "new_string": "changed"}]}),
        )],
    );
    assert_eq!(m["type"], "done", "{m}");
    assert_eq!(env.output(&id, "ok.txt").unwrap(), "changed\n");
}

#[test]
fn a_chat_with_tool_calls_in_older_shapes_replays() {
    let (env, fake, mut b, id) = setup(json!({}));
    env.add(&mut b, "a.txt", "one\ntwo\n");
    // bb7's earlier shape (a top-level path), then the reference's.
    let m = turn(
        &mut b,
        &fake,
        vec![(
            "edit_file",
            json!({"path": "a.txt", "edits": [{"old_string": "one", "new_string": "uno"}]}),
        )],
    );
    assert_eq!(m["type"], "done", "{m}");
    drop(b);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["id"], id.as_str());
    let m = turn(
        &mut b,
        &fake,
        vec![(
            "edit_file",
            json!({"edits": [{"path": "a.txt", "old_string": "two", "new_string": "dos"}]}),
        )],
    );
    assert_eq!(m["type"], "done", "{m}");
    assert_eq!(env.output(&id, "a.txt").unwrap(), "uno\ndos\n");
}

/// An old_string found only as part of longer names is refused, and the refusal says
/// where and why, so the model can send the whole name.
#[test]
fn a_match_only_inside_longer_names_is_refused_with_its_lines() {
    let (env, fake, mut b, id) = setup(json!({}));
    env.add(
        &mut b,
        "cfg.py",
        "DB_POOL_RETRIES = 3\nTIMEOUT = 10\nHTTP_RETRIES = 3\n",
    );
    let m = turn(
        &mut b,
        &fake,
        vec![(
            "edit_file",
            json!({"edits": [{"path": "cfg.py", "old_string": "RETRIES = 3", "new_string": "RETRIES = 5"}]}),
        )],
    );
    assert_eq!(m["type"], "diff_error", "{m}");
    let call = &m["tool_calls"][0];
    assert_eq!(call["code"], "not_found", "{call}");
    let error = call["error"].as_str().unwrap();
    assert!(
        error.contains("only inside longer names (line 1, 3)"),
        "{error}"
    );
    assert!(env.output(&id, "cfg.py").is_none());
}
