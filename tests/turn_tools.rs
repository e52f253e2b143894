//! File tools through the binary: diff modes, matching, atomic failure, diff_error,
//! retry context, the hidden repair round, read-only refusals, the escape guard.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env, file_id};
use serde_json::{Value, json};

fn setup(extra: Value) -> (Env, FakeModel, Bb7, String) {
    let (env, fake) = fake_env(extra);
    let (b, id) = env.with_chat();
    (env, fake, b, id)
}

fn finish_of(b: &mut Bb7, content: &str) -> Value {
    b.turn(content)
}

const CODE: &str =
    "def total(items):\n    s = 0\n    for i in items:   \n        s += i\n    return s\n";

#[test]
fn search_replace_mode_and_the_matching_steps() {
    let (env, fake, mut b, id) = setup(json!({"diff_mode": "search_replace"}));
    env.add(&mut b, "calc.py", CODE);
    // Trailing whitespace in the file differs from old_string.
    fake.push_sse(response("", "ok", vec![("edit_file", json!({"path": "calc.py",
        "old_string": "    for i in items:\n        s += i", "new_string": "    for i in items:\n        s += i * 2"}))]));
    let done = finish_of(&mut b, "double it");
    assert_eq!(done["type"], "done", "{done}");
    let tools = &fake.chat_bodies()[0]["tools"];
    assert!(tools[1]["function"]["parameters"]["properties"]["old_string"].is_object());
    assert_eq!(
        env.output(&id, "calc.py").unwrap(),
        "def total(items):\n    s = 0\n    for i in items:   \n        s += i * 2\n    return s\n",
        "the line the model kept keeps the file's trailing spaces"
    );
    // Indentation differs: the replacement is re-indented to the file.
    fake.push_sse(response(
        "",
        "ok",
        vec![(
            "edit_file",
            json!({"path": "calc.py",
        "old_string": "return s", "new_string": "if not s:\n    return 0\nreturn s"}),
        )],
    ));
    assert_eq!(finish_of(&mut b, "guard")["type"], "done");
    assert!(
        env.output(&id, "calc.py")
            .unwrap()
            .ends_with("    if not s:\n        return 0\n    return s\n")
    );
}

#[test]
fn anchored_and_off_modes() {
    let (env, fake, mut b, id) = setup(json!({"diff_mode": "anchored"}));
    env.add(&mut b, "calc.py", CODE);
    // The reference's anchored shape, then bb7's earlier one (still accepted).
    fake.push_sse(response("", "ok", vec![("edit_file", json!({"path": "calc.py", "file_id": file_id("calc.py", CODE),
        "changes": [{"start": ["def total(items):"], "end": ["    s = 0"], "content": ["def total(items):", "    s = 1"]}]}))]));
    assert_eq!(finish_of(&mut b, "x")["type"], "done");
    let after = env.output(&id, "calc.py").unwrap();
    assert!(
        after.starts_with("def total(items):\n    s = 1\n    for"),
        "{after}"
    );
    let tools = &fake.chat_bodies()[0]["tools"];
    let change = &tools[1]["function"]["parameters"]["properties"]["changes"]["items"];
    assert_eq!(change["required"], json!(["start", "content"]));
    fake.push_sse(response("", "ok", vec![("edit_file", json!({"path": "calc.py",
        "edits": [{"start_anchor": "def total(items):", "end_anchor": "s = 1", "replacement": "def total(items):\n    s = 2\n"}]}))]));
    assert_eq!(finish_of(&mut b, "x")["type"], "done");
    let after = env.output(&id, "calc.py").unwrap();
    assert!(
        after.starts_with("def total(items):\n    s = 2\n    for"),
        "{after}"
    );

    let (_env, fake, mut b, _id) = setup(json!({"diff_mode": "off"}));
    fake.push_sse(response("", "ok", vec![]));
    assert_eq!(finish_of(&mut b, "x")["type"], "done");
    let tools = fake.chat_bodies()[0]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["function"]["name"], "write_file");
}

#[test]
fn a_partly_failed_response_writes_nothing_and_reports_each_call() {
    let (env, fake, mut b, id) = setup(json!({}));
    env.add(&mut b, "calc.py", CODE);
    env.add(&mut b, "dup.txt", "x = 1\ny = 2\nx = 1\n");
    fake.push_sse(response("", "Three edits.", vec![
        ("write_file", json!({"path": "new.txt", "content": "fresh\n"})),
        ("edit_file", json!({"path": "dup.txt", "edits": [{"old_string": "x = 1", "new_string": "x = 9"}]})),
        ("edit_file", json!({"path": "calc.py", "edits": [{"old_string": "return total", "new_string": "return 0"}]})),
    ]));
    let m = finish_of(&mut b, "do it");
    assert_eq!(m["type"], "diff_error", "{m}");
    assert_eq!(m["errors"].as_array().unwrap().len(), 2);
    let calls = m["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["status"], "ok");
    assert_eq!(calls[0]["tool"], "write_file");
    assert_eq!(calls[1]["status"], "failed");
    assert_eq!(calls[1]["path"], "dup.txt");
    assert_eq!(calls[1]["match_lines"], json!([1, 3]));
    assert!(
        calls[1]["error"]
            .as_str()
            .unwrap()
            .contains("Found 2 matches")
    );
    assert_eq!(calls[2]["status"], "failed");
    assert!(
        calls[2]["suggestions"][0]
            .as_str()
            .unwrap()
            .starts_with("5: return s"),
        "{}",
        calls[2]
    );
    assert!(calls[2]["args"]["edits"].is_array());
    assert!(m["usage"]["total_tokens"].is_u64());
    // Nothing of that response was written.
    assert!(
        std::fs::read_dir(env.chat_dir(&id).join("output"))
            .map(|d| d.count() == 0)
            .unwrap_or(true)
    );

    // The next send tells the model what failed.
    fake.push_sse(response("", "Fixed.", vec![]));
    assert_eq!(finish_of(&mut b, "try again")["type"], "done");
    let user = fake.chat_bodies()[1]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(user.contains("could not be applied"), "{user}");
    assert!(user.contains("Found 2 matches"));
    assert!(user.contains("Three edits."));
}

#[test]
fn auto_retry_repairs_failed_edits_in_one_hidden_round() {
    let (env, fake, mut b, id) = setup(json!({"auto_retry_partial_edits": true}));
    env.add(&mut b, "calc.py", CODE);
    fake.push_sse(response("", "Two changes.", vec![
        ("write_file", json!({"path": "new.txt", "content": "fresh\n"})),
        ("edit_file", json!({"path": "calc.py", "edits": [{"old_string": "s = 00", "new_string": "s = 1"}]})),
    ]));
    let mut repair = vec![role(), text("hidden repair text")];
    repair.extend(tool_call(
        0,
        "edit_file",
        json!({"path": "calc.py", "edits": [{"old_string": "s = 0", "new_string": "s = 1"}]}),
        2,
    ));
    repair.push(usage(50, 5, 0.001));
    repair.push(done());
    fake.push_sse(repair);
    let rid = b.send(json!({"action": "send", "content": "go"}));
    let mut chunks = String::new();
    let done = loop {
        let m = b.reply_to(&rid);
        if m["type"] == "chunk" {
            chunks.push_str(m["content"].as_str().unwrap());
        }
        if matches!(m["type"].as_str(), Some("done" | "error" | "diff_error")) {
            break m;
        }
    };
    assert_eq!(done["type"], "done", "{done}");
    assert!(!chunks.contains("hidden repair"));
    assert_eq!(done["output_files"], json!(["calc.py", "new.txt"]));
    assert_eq!(done["usage"]["prompt_tokens"], 150);
    assert!(env.output(&id, "calc.py").unwrap().contains("s = 1"));
    assert_eq!(env.output(&id, "new.txt").unwrap(), "fresh\n");
    // The repair request carried the tool results.
    let repair_body = &fake.chat_bodies()[1];
    let msgs = repair_body["messages"].as_array().unwrap();
    assert!(
        msgs.iter()
            .any(|m| m["role"] == "tool" && m["content"].as_str().unwrap().contains("not found"))
    );
}

#[test]
fn read_only_files_sections_and_stale_file_ids_are_refused() {
    let (env, fake, mut b, id) = setup(json!({}));
    env.write("ro.txt", "keep\n");
    b.ok(json!({"action": "context_add", "path": "ro.txt", "content": "keep\n", "readonly": true}));
    env.write("sec.txt", "a\nb\nc\n");
    b.ok(json!({"action": "context_add_section", "path": "sec.txt", "content": "a\nb\nc\n", "start_line": 1, "end_line": 2}));
    env.add(&mut b, "w.txt", "one\n");
    for (name, args) in [
        (
            "write_file",
            json!({"path": "ro.txt", "content": "changed\n"}),
        ),
        (
            "write_file",
            json!({"path": "sec.txt", "content": "changed\n"}),
        ),
        (
            "edit_file",
            json!({"path": "w.txt", "file_id": "00000000", "edits": [{"old_string": "one", "new_string": "two"}]}),
        ),
        (
            "edit_file",
            json!({"path": "missing.txt", "edits": [{"old_string": "a", "new_string": "b"}]}),
        ),
        ("no_such_tool", json!({"path": "w.txt"})),
    ] {
        fake.push_sse(response("", "", vec![(name, args.clone())]));
        let m = finish_of(&mut b, "change it");
        assert_eq!(m["type"], "diff_error", "{name} {args}: {m}");
        assert!(env.output(&id, args["path"].as_str().unwrap()).is_none());
    }
    // Invalid JSON arguments are reported raw.
    let mut steps = vec![role()];
    steps.push(Step::Data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\": \"w.txt\", "}}]}}]}).to_string()));
    steps.push(done());
    fake.push_sse(steps);
    let m = finish_of(&mut b, "x");
    assert_eq!(m["tool_calls"][0]["args_raw"], "{\"path\": \"w.txt\", ");
    assert_eq!(env.read("ro.txt"), "keep\n");
}

#[test]
fn a_write_outside_the_project_is_a_failed_call_and_bb7_keeps_serving() {
    let (env, fake, mut b, id) = setup(json!({}));
    fake.push_sse(response(
        "",
        "Sneaky.",
        vec![
            ("write_file", json!({"path": "fine.txt", "content": "ok\n"})),
            (
                "write_file",
                json!({"path": "../escaped.txt", "content": "pwned\n"}),
            ),
        ],
    ));
    let m = finish_of(&mut b, "x");
    assert_eq!(m["type"], "diff_error", "{m}");
    assert_eq!(m["tool_calls"][0]["status"], "ok");
    assert_eq!(m["tool_calls"][1]["status"], "failed");
    assert_eq!(m["tool_calls"][1]["code"], "path_escape");
    // No input ends bb7: it still answers.
    assert_eq!(b.request(json!({"action": "ping"}))["type"], "ok");
    assert!(!env.project.parent().unwrap().join("escaped.txt").exists());
    assert!(env.output(&id, "fine.txt").is_none());
    // The chat records what happened, and the process keeps serving.
    let chat = env.chat_json(&id);
    let last = chat["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    assert!(
        last["diff_error"]["errors"][0]
            .as_str()
            .unwrap()
            .contains("escaped.txt"),
        "{last}"
    );
    b.ok(json!({"action": "chat_list"}));
}

#[test]
fn an_interrupted_commit_is_finished_or_discarded_when_the_chat_opens() {
    let (env, fake, mut b, id) = setup(json!({}));
    // A normal turn leaves nothing staged.
    fake.push_sse(response(
        "",
        "two files",
        vec![
            ("write_file", json!({"path": "one.txt", "content": "1\n"})),
            (
                "write_file",
                json!({"path": "two/deep.txt", "content": "2\n"}),
            ),
        ],
    ));
    assert_eq!(finish_of(&mut b, "x")["type"], "done");
    assert_eq!(env.output(&id, "two/deep.txt").as_deref(), Some("2\n"));
    assert!(!env.chat_dir(&id).join("staging").exists());
    drop(b);

    // A crash after the journal was written: finish the commit. Before: discard it.
    let staging = env.chat_dir(&id).join("staging");
    std::fs::create_dir_all(staging.join("aa/files/src")).unwrap();
    std::fs::write(staging.join("aa/files/src/a.txt"), "committed\n").unwrap();
    std::fs::write(
        staging.join("aa/journal.json"),
        r#"["src/a.txt", "gone.txt"]"#,
    )
    .unwrap();
    std::fs::create_dir_all(staging.join("bb/files")).unwrap();
    std::fs::write(staging.join("bb/files/b.txt"), "never committed\n").unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(b.ok(json!({"action": "chat_active"}))["id"], id.as_str());
    assert_eq!(env.output(&id, "src/a.txt").as_deref(), Some("committed\n"));
    assert!(env.output(&id, "b.txt").is_none());
    assert!(!staging.exists());
}
