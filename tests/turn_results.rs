//! What a multi-round turn tells the model about its file changes, and what the trace
//! records of retrieval results (docs/PROTOCOL.md, "bb7's retrieval semantics" and
//! the event table).

mod common;

use common::fake_model::*;
use common::{Bb7, fake_env};
use serde_json::{Value, json};

/// A response whose only content is these tool calls.
fn calls(list: Vec<(&str, Value)>) -> Vec<Step> {
    let mut steps = vec![role()];
    for (i, (name, args)) in list.into_iter().enumerate() {
        steps.extend(tool_call(i, name, args, 2));
    }
    steps.extend([finish("tool_calls"), usage(10, 5, 0.0), done()]);
    steps
}

fn tool_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

fn completed_events(b: &mut Bb7) -> Vec<Value> {
    let page = b.ok(json!({"action": "events_get", "after": 0}));
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool.call.completed")
        .cloned()
        .collect()
}

#[test]
fn an_early_file_call_is_staged_for_review_and_result_lines_count_the_result() {
    let (env, fake) = fake_env(json!({}));
    let src = "fn a() {}\nfn b() {}\nfn c() {}\nfn d() {}\n";
    env.write("src/lib.rs", src);
    env.write("src/main.rs", "fn main() { a(); }\n");
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "src/lib.rs", "content": src}));
    b.ok(json!({"action": "save_chat_settings", "tools": "auto"}));
    // Round one: a file change beside three retrieval calls; round two answers.
    let first = calls(vec![
        (
            "edit_file",
            json!({"edits": [{"path": "src/lib.rs", "old_string": "fn a() {}", "new_string": "fn aa() {}"}]}),
        ),
        ("read_file", json!({"file_path": "src/lib.rs"})),
        ("search_project", json!({"query": "fn "})),
        ("list_files", json!({"glob": "**/*.rs"})),
    ]);
    fake.push_sse(first);
    fake.push_sse(response("", "Renamed a.", vec![]));
    let done = b.turn("rename a");
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["output_files"], json!(["src/lib.rs"]));

    let results = tool_messages(&fake.chat_bodies()[1]);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results[0].contains("staged for the user's review"),
        "{}",
        results[0]
    );
    assert!(!results[0].contains("applied when"), "{}", results[0]);
    // Nothing reached the user's file: the change waits for review.
    assert_eq!(env.read("src/lib.rs"), src);

    let done: Vec<_> = completed_events(&mut b);
    let lines = |name: &str| {
        done.iter()
            .find(|e| e["data"]["tool"] == name || e["data"]["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {done:#?}"))["data"]["result_lines"]
            .clone()
    };
    // The read gave 4 lines, the listing 2 files; the search's snippets have lines
    // from both files (4 of lib.rs, 1 of main.rs).
    assert_eq!(lines("read_file"), 4, "{done:#?}");
    assert_eq!(lines("list_files"), 2, "{done:#?}");
    assert_eq!(lines("search_project"), 5, "{done:#?}");
}

/// A read waiting for approval says what the file is: its lines and size, or that
/// there is no such file (docs/PROTOCOL.md, "approved retrieval tools").
#[test]
fn read_approvals_carry_the_files_size_and_existence() {
    let (env, fake) = fake_env(json!({}));
    env.write("notes.md", "one\ntwo\n");
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "save_chat_settings", "tools": "ask"}));
    fake.push_sse(calls(vec![
        ("read_file", json!({"file_path": "notes.md"})),
        ("read_file", json!({"file_path": "gone.md"})),
    ]));
    fake.push_sse(response("", "Done.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "read them"}));
    let mut payloads = Vec::new();
    let done = loop {
        let m = b.reply_to(&rid);
        match m["type"].as_str() {
            Some("tool_approval") => {
                payloads.push(m["payload"].clone());
                b.ok(json!({"action": "tool_approve", "approval_id": m["approval_id"], "approved": true}));
            }
            Some("done" | "error" | "diff_error") => break m,
            _ => {}
        }
    };
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(payloads[0]["description"], "Read notes.md (2 lines, 8 B)");
    assert_eq!(
        (
            &payloads[0]["exists"],
            &payloads[0]["bytes"],
            &payloads[0]["lines"]
        ),
        (&json!(true), &json!(8), &json!(2))
    );
    assert_eq!(payloads[1]["description"], "Read gone.md (no such file)");
    assert_eq!(payloads[1]["exists"], false);
    assert!(payloads[1].get("bytes").is_none(), "{}", payloads[1]);
}

/// Each edit of a change says what it replaced, where and how it was found, and the
/// change the file's size before and after (docs/PROTOCOL.md, "typed change payloads").
#[test]
fn an_edit_payload_carries_each_edit_and_how_it_matched() {
    let (env, fake) = fake_env(json!({}));
    let src = "fn a() {\n    one();\n    two();\n}\nfn b() {}\n";
    env.write("src/lib.rs", src);
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "src/lib.rs", "content": src}));
    let big = "x".repeat(5000);
    fake.push_sse(response(
        "",
        "Done.",
        vec![(
            "edit_file",
            json!({"edits": [
                {"path": "src/lib.rs", "old_string": "fn b() {}", "new_string": format!("fn b() {{ let _ = \"{big}\"; }}")},
                {"path": "src/lib.rs", "old_string": "one();\ntwo();", "new_string": "three();"},
            ]}),
        )],
    ));
    let done = b.turn("change it");
    assert_eq!(done["type"], "done", "{done}");
    let change = &done["changes"][0];
    assert_eq!(change["type"], "edit");
    assert_eq!(
        change["description"], "Edit src/lib.rs: 2 hunks, +2 \u{2212}3 (was 5 lines, now 4)",
        "{change}"
    );
    assert_eq!(change["existing_bytes"], src.len());
    let edits = change["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 2, "{change}");
    // The first: found as it is on line 5; its new text is large, so only its hash.
    assert_eq!(edits[0]["matched"], "exact");
    assert_eq!(
        (&edits[0]["start_line"], &edits[0]["end_line"]),
        (&json!(5), &json!(5))
    );
    assert_eq!(edits[0]["old_text"], "fn b() {}");
    assert!(edits[0].get("new_text").is_none(), "{}", edits[0]);
    assert_eq!(edits[0]["new_sha256"].as_str().unwrap().len(), 64);
    assert!(edits[0]["new_bytes"].as_u64().unwrap() > 5000);
    // The second: found up to indentation, on lines 2-3.
    assert_eq!(edits[1]["matched"], "tolerant");
    assert_eq!(edits[1]["tolerance"], "indentation");
    assert_eq!(
        (&edits[1]["start_line"], &edits[1]["end_line"]),
        (&json!(2), &json!(3))
    );
    assert_eq!(edits[1]["new_text"], "three();");
}

/// A file the model read through an approved `read_file` may be edited though it is
/// not in context: it joins the context (marked as added by retrieval) and the edit
/// is a proposal reviewed like any other. A file it did not read still may not be.
#[test]
fn a_file_the_model_read_can_be_edited_and_joins_the_context() {
    let (env, fake) = fake_env(json!({}));
    env.write("notes.py", "x = 1\r\ny = 2\r\n");
    env.write("other.py", "z = 3\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "save_chat_settings", "tools": "ask"}));
    fake.push_sse(calls(vec![("read_file", json!({"file_path": "notes.py"}))]));
    fake.push_sse(response(
        "",
        "Changed y.",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "notes.py", "old_string": "y = 2", "new_string": "y = 20"}]}),
        )],
    ));
    let rid = b.send(json!({"action": "send", "content": "make y bigger"}));
    let done = loop {
        let m = b.reply_to(&rid);
        match m["type"].as_str() {
            Some("tool_approval") => {
                b.ok(json!({"action": "tool_approve", "approval_id": m["approval_id"], "approved": true}));
            }
            Some("done" | "error" | "diff_error") => break m,
            _ => {}
        }
    };
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["output_files"], json!(["notes.py"]));
    assert_eq!(done["changes"][0]["type"], "edit", "{done}");
    // The user's file is untouched: the change waits for review.
    assert_eq!(env.read("notes.py"), "x = 1\r\ny = 2\r\n");
    let list = b.ok(json!({"action": "context_list"}));
    let entry = &list["files"][0];
    assert_eq!(entry["path"], "notes.py", "{list}");
    assert_eq!(entry["meta"]["added_by"], "retrieval", "{list}");
    assert_eq!(
        entry["version"],
        common::file_id("notes.py", "x = 1\r\ny = 2\r\n")
    );
    let st = b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(st["files"][0]["status"], "M", "{st}");
    let review = b.ok(json!({"action": "review_get", "path": "notes.py"}));
    assert_eq!(
        review["files"][0]["hunks"].as_array().unwrap().len(),
        1,
        "{review}"
    );
    b.ok(json!({"action": "apply_file", "path": "notes.py"}));
    assert_eq!(env.read("notes.py"), "x = 1\r\ny = 20\r\n");
    let chat = b.ok(json!({"action": "chat_get"}));
    let added = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().iter())
        .find(|p| p["action"] == "UserAddFile" && p["path"] == "notes.py")
        .cloned()
        .unwrap_or_else(|| panic!("no add event in {chat}"));
    assert_eq!(added["added_by"], "retrieval", "{added}");
    let _ = id;

    // A file the model did not read stays out of reach.
    fake.push_sse(response(
        "",
        "Changed z.",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "other.py", "old_string": "z = 3", "new_string": "z = 30"}]}),
        )],
    ));
    let end = b.turn("make z bigger");
    assert_eq!(end["type"], "diff_error", "{end}");
    assert_eq!(env.read("other.py"), "z = 3\n");
}
