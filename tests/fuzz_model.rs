//! Hostile model responses through the fake model server: broken SSE, odd tool calls,
//! escaping paths, huge payloads, odd usage and errors. After each the process is
//! alive, the stream ended with exactly one final message (`done`, `error` or
//! `diff_error`), nothing outside the project changed, and the next `send` works
//! (docs/PROTOCOL.md "Conventions": no input from a model ends bb7).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

const FINAL: &[&str] = &["done", "error", "diff_error"];

/// One streamed chunk with this `delta`.
fn delta(d: Value) -> Step {
    Step::Data(
        json!({"id": "gen-f", "object": "chat.completion.chunk", "model": "fake/model",
               "choices": [{"index": 0, "delta": d, "finish_reason": null}]})
        .to_string(),
    )
}

/// A tool call whose arguments are sent as this raw text.
fn raw_call(index: Value, name: Option<Value>, args: &str) -> Step {
    let mut function = json!({"arguments": args});
    if let Some(n) = name {
        function["name"] = n;
    }
    delta(
        json!({"tool_calls": [{"index": index, "id": "call_x", "type": "function",
                                 "function": function}]}),
    )
}

/// Wraps steps in a role chunk, a finish, usage and `[DONE]`.
fn wrap(mut steps: Vec<Step>) -> Vec<Step> {
    steps.insert(0, role());
    steps.push(finish("tool_calls"));
    steps.push(usage(10, 5, 0.001));
    steps.push(done());
    steps
}

/// The scripted faults, each with a name for failure messages.
fn faults() -> Vec<(String, Reply)> {
    let sse = |name: &str, steps: Vec<Step>| (name.to_owned(), Reply::Sse(steps));
    let mut v =
        vec![
            sse(
                "invalid JSON data",
                wrap(vec![Step::Data("{not json".into()), text("after")]),
            ),
            sse("empty data", wrap(vec![Step::Data(String::new())])),
            sse(
                "data is a JSON string",
                wrap(vec![Step::Data("\"str\"".into())]),
            ),
            sse(
                "choices not an array",
                wrap(vec![Step::Data(r#"{"choices": 5}"#.into())]),
            ),
            sse(
                "delta content a number",
                wrap(vec![delta(json!({"content": 42}))]),
            ),
            sse("delta null", wrap(vec![delta(Value::Null)])),
            sse(
                "tool_calls not an array",
                wrap(vec![delta(json!({"tool_calls": {"a": 1}}))]),
            ),
            sse(
                "truncated arguments",
                wrap(vec![raw_call(
                    json!(0),
                    Some(json!("write_file")),
                    r#"{"path": "x"#,
                )]),
            ),
            sse(
                "huge garbage arguments",
                wrap(vec![raw_call(
                    json!(0),
                    Some(json!("write_file")),
                    &"{[".repeat(500_000),
                )]),
            ),
            sse(
                "unknown tool",
                wrap(vec![raw_call(
                    json!(0),
                    Some(json!("rm_rf")),
                    r#"{"path": "a.txt"}"#,
                )]),
            ),
            sse(
                "tool without name",
                wrap(vec![raw_call(
                    json!(0),
                    None,
                    r#"{"path": "n.txt", "content": "x"}"#,
                )]),
            ),
            sse(
                "tool name null",
                wrap(vec![raw_call(json!(0), Some(Value::Null), "{}")]),
            ),
            sse(
                "tool name a number",
                wrap(vec![raw_call(json!(0), Some(json!(7)), "{}")]),
            ),
            sse(
                "tool index huge",
                wrap(vec![raw_call(
                    json!(u64::MAX),
                    Some(json!("write_file")),
                    r#"{"path": "h.txt", "content": "x"}"#,
                )]),
            ),
            sse(
                "tool index 4 billion",
                wrap(vec![raw_call(
                    json!(4_000_000_000u64),
                    Some(json!("write_file")),
                    r#"{"path": "h.txt", "content": "x"}"#,
                )]),
            ),
            sse(
                "tool index negative",
                wrap(vec![raw_call(json!(-1), Some(json!("write_file")), "{}")]),
            ),
            sse(
                "tool index a string",
                wrap(vec![raw_call(json!("0"), Some(json!("write_file")), "{}")]),
            ),
            sse(
                "usage with strings and negatives",
                vec![role(), text("x"), Step::Data(
            json!({"choices": [], "usage": {"prompt_tokens": "10", "completion_tokens": -5,
                   "total_tokens": 1e30, "cost": "abc",
                   "prompt_tokens_details": {"cached_tokens": -1}}}).to_string()), done()],
            ),
            sse(
                "usage negative cost",
                vec![role(), text("x"), Step::Data(
            json!({"choices": [], "usage": {"prompt_tokens": -1, "completion_tokens": 1,
                   "cost": -1.5}}).to_string()), done()],
            ),
            sse(
                "usage null",
                vec![
                    role(),
                    text("x"),
                    Step::Data(json!({"choices": [], "usage": null}).to_string()),
                    done(),
                ],
            ),
            sse(
                "error with numeric code",
                vec![
                    role(),
                    text("part"),
                    stream_error(json!(502), "upstream died"),
                    done(),
                ],
            ),
            sse(
                "error with string code",
                vec![
                    role(),
                    text("part"),
                    stream_error(json!("server_error"), "boom"),
                    done(),
                ],
            ),
            sse(
                "error object odd",
                vec![role(), Step::Data(r#"{"error": 5}"#.into()), done()],
            ),
            sse(
                "error message an object",
                vec![
                    role(),
                    Step::Data(r#"{"error": {"code": null, "message": {"a": 1}}}"#.into()),
                    done(),
                ],
            ),
            sse("no [DONE]", vec![role(), text("cut"), finish("stop")]),
            sse("dropped mid-stream", vec![role(), text("cut"), Step::Drop]),
            sse(
                "dropped inside a tool call",
                vec![
                    role(),
                    raw_call(
                        json!(0),
                        Some(json!("write_file")),
                        r#"{"path": "d.txt", "con"#,
                    ),
                    Step::Drop,
                ],
            ),
            sse("only comments", vec![Step::Comment, Step::Comment]),
            sse(
                "stalled past the timeout",
                vec![
                    role(),
                    text("x"),
                    Step::Sleep(Duration::from_secs(7)),
                    text("late"),
                    done(),
                ],
            ),
            sse(
                "300 KB of text in one chunk",
                wrap(vec![text(&"y".repeat(300_000))]),
            ),
            sse(
                "deeply nested data",
                wrap(vec![Step::Data("[".repeat(100_000))]),
            ),
            sse(
                "deeply nested arguments",
                wrap(vec![raw_call(
                    json!(0),
                    Some(json!("write_file")),
                    &"[".repeat(100_000),
                )]),
            ),
            sse("nothing at all", vec![]),
            (
                "empty 200 body".into(),
                Reply::Http {
                    status: 200,
                    headers: vec![],
                    body: String::new(),
                },
            ),
            (
                "200 text/html".into(),
                Reply::Http {
                    status: 200,
                    headers: vec![("Content-Type".into(), "text/html".into())],
                    body: "<html><body>Bad gateway</body></html>".into(),
                },
            ),
            (
                "200 JSON not a completion".into(),
                Reply::Http {
                    status: 200,
                    headers: vec![],
                    body: "[1,2]".into(),
                },
            ),
            (
                "400 HTML".into(),
                Reply::Http {
                    status: 400,
                    headers: vec![("Content-Type".into(), "text/html".into())],
                    body: "<h1>no</h1>".into(),
                },
            ),
        ];
    // File tools with hostile arguments.
    let call = |name: &str, args: Value| wrap(tool_call(0, name, args, 3));
    for (label, args) in [
        ("write_file arguments an array", json!([1, 2])),
        ("write_file arguments a string", json!("a.txt")),
        ("write_file arguments null", Value::Null),
        (
            "write_file path a number",
            json!({"path": 5, "content": "x"}),
        ),
        (
            "write_file content an object",
            json!({"path": "o.txt", "content": {"a": 1}}),
        ),
        (
            "write_file NUL in content",
            json!({"path": "nul.txt", "content": "a\u{0}b\n"}),
        ),
        (
            "write_file NUL in path",
            json!({"path": "nul\u{0}.txt", "content": "x"}),
        ),
        (
            "write_file ..",
            json!({"path": "../escape.txt", "content": "x"}),
        ),
        (
            "write_file a/../../x",
            json!({"path": "a/../../escape.txt", "content": "x"}),
        ),
        (
            "write_file absolute outside",
            json!({"path": "/tmp/bb7-fuzz-escape.txt", "content": "x"}),
        ),
        (
            "write_file ~",
            json!({"path": "~/escape.txt", "content": "x"}),
        ),
        (
            "write_file .git hook",
            json!({"path": ".git/hooks/pre-commit", "content": "rm -rf /"}),
        ),
        (
            "write_file .bb7",
            json!({"path": ".bb7/chats/index.json", "content": "{}"}),
        ),
        (
            "write_file through symlink",
            json!({"path": "link_out/victim.txt", "content": "x"}),
        ),
        ("write_file empty path", json!({"path": "", "content": "x"})),
        ("write_file dot", json!({"path": ".", "content": "x"})),
        (
            "write_file trailing slash",
            json!({"path": "dir/", "content": "x"}),
        ),
        (
            "write_file very long path",
            json!({"path": "d/".repeat(3000) + "x", "content": "x"}),
        ),
        (
            "write_file 10 MB",
            json!({"path": "big.txt", "content": "0123456789abcde\n".repeat(655_360)}),
        ),
    ] {
        v.push(sse(label, call("write_file", args)));
    }
    for (label, args) in [
        (
            "edit_file ..",
            json!({"edits": [{"path": "../a.txt", "old_string": "one", "new_string": "1"}]}),
        ),
        (
            "edit_file absolute",
            json!({"edits": [{"path": "/etc/passwd", "old_string": "root", "new_string": "r"}]}),
        ),
        (
            "edit_file symlink",
            json!({"edits": [{"path": "link_out/victim.txt", "old_string": "precious", "new_string": "p"}]}),
        ),
        ("edit_file edits a number", json!({"edits": 7})),
        (
            "edit_file edits nested",
            json!({"edits": [[[{"path": "a.txt"}]]]}),
        ),
        (
            "edit_file NUL strings",
            json!({"edits": [{"path": "a.txt", "old_string": "\u{0}", "new_string": "\u{0}"}]}),
        ),
        (
            "edit_file empty old_string",
            json!({"edits": [{"path": "a.txt", "old_string": "", "new_string": "x"}]}),
        ),
        (
            "edit_file anchored garbage",
            json!({"path": "a.txt", "changes": [{"start": 5, "content": null}]}),
        ),
    ] {
        v.push(sse(label, call("edit_file", args)));
    }
    let mut many = vec![role()];
    for i in 0..100 {
        many.extend(tool_call(
            i,
            "write_file",
            json!({"path": format!("many/f{i}.txt"), "content": "x\n"}),
            2,
        ));
    }
    many.extend([finish("tool_calls"), usage(10, 5, 0.001), done()]);
    v.push(sse("100 tool calls", many));
    v
}

/// Sends a message; returns every message of its stream up to the final one.
fn turn(b: &mut Bb7, label: &str) -> (String, Vec<Value>) {
    let rid = b.send(json!({"action": "send", "content": format!("fault: {label}")}));
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            Instant::now() < deadline,
            "{label}: the stream never ended: {seen:?}"
        );
        if let Some(status) = b.child.try_wait().unwrap() {
            panic!("{label}: bb7 exited ({status})");
        }
        let Some(m) = b.recv_timeout(Duration::from_millis(200)) else {
            continue;
        };
        if m["request_id"] != rid.as_str() {
            b.backlog.push(m);
            continue;
        }
        let last = FINAL.contains(&m["type"].as_str().unwrap_or(""));
        seen.push(m);
        if last {
            return (rid, seen);
        }
    }
}

fn setup() -> (tempfile::TempDir, Env, FakeModel, Bb7, String) {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim.txt"), "precious\n").unwrap();
    let (env, fake) = fake_env(json!({"stream_timeout_secs": 5}));
    env.write("a.txt", "one\ntwo\nthree\n");
    env.write(".git/hooks/pre-commit", "#!/bin/sh\n");
    std::os::unix::fs::symlink(&outside, env.project.join("link_out")).unwrap();
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "one\ntwo\nthree\n"}));
    (tmp, env, fake, b, id)
}

#[test]
fn hostile_model_responses_end_each_stream_once_and_bb7_keeps_serving() {
    let (tmp, env, fake, mut b, _id) = setup();
    // `BB7_FAULT=<part of a label>` runs only the matching faults (for debugging).
    let only = std::env::var("BB7_FAULT").unwrap_or_default();
    for (label, reply) in faults().into_iter().filter(|(l, _)| l.contains(&only)) {
        let started = Instant::now();
        fake.push(reply);
        let (rid, seen) = turn(&mut b, &label);
        let finals = seen
            .iter()
            .filter(|m| FINAL.contains(&m["type"].as_str().unwrap_or("")))
            .count();
        assert_eq!(finals, 1, "{label}: {seen:?}");

        // The next send works, and the faulty stream sent nothing more.
        fake.push_sse(response("", "recovered", vec![]));
        let (_, next) = turn(&mut b, "after");
        let end = next.last().unwrap();
        assert_eq!(end["type"], "done", "{label}: the next send failed: {end}");
        assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
        while let Some(m) = b.recv_timeout(Duration::from_millis(50)) {
            b.backlog.push(m);
        }
        let late: Vec<&Value> = b
            .backlog
            .iter()
            .filter(|m| m["request_id"] == rid.as_str())
            .collect();
        assert!(
            late.is_empty(),
            "{label}: messages after the final one: {late:?}"
        );
        b.backlog.clear();
        // Pending output from a fault must not weigh on the next faults.
        let statuses = b.ok(json!({"action": "get_file_statuses", "contents": false}));
        for f in statuses["files"].as_array().unwrap() {
            if f["has_output"] == true {
                b.ok(json!({"action": "output_delete", "path": f["path"]}));
            }
        }
        eprintln!("{label}: {:?}", started.elapsed());
    }
    let outside = tmp.path().join("outside");
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).unwrap(),
        "precious\n"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    assert!(!env.project.parent().unwrap().join("escape.txt").exists());
    assert!(!Path::new("/tmp/bb7-fuzz-escape.txt").exists());
    assert!(!env.home.join("escape.txt").exists());
    assert_eq!(env.read(".git/hooks/pre-commit"), "#!/bin/sh\n");
    b.ok(json!({"action": "shutdown"}));
    assert_eq!(common::wait_with_timeout(&mut b.child).code(), Some(0));

    // The chat the faults left behind loads in a new process.
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let chat = b.ok(json!({"action": "chat_get"}));
    assert!(!chat["messages"].as_array().unwrap().is_empty(), "{chat}");
    b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(b.close().code(), Some(0));
}
