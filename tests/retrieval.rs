//! Approved retrieval tools (PROTOCOL.md extension): list_files, search_project,
//! read_file and clarify_user, in `auto` and `ask` modes.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

fn setup(tools: &str) -> (Env, FakeModel, Bb7, String) {
    let (env, fake) = fake_env(json!({}));
    env.write(
        "src/lib.rs",
        "pub fn parse(s: &str) -> u32 {\n    s.parse().unwrap()\n}\n",
    );
    env.write(
        "src/main.rs",
        "fn main() { println!(\"{}\", lib::parse(\"\")); }\n",
    );
    env.write("README.md", "Parser demo\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "save_chat_settings", "tools": tools}));
    assert_eq!(b.ok(json!({"action": "chat_get"}))["tools"], tools);
    (env, fake, b, id)
}

/// A response whose only content is these tool calls.
fn calls(list: Vec<(&str, Value)>) -> Vec<Step> {
    let mut steps = vec![role()];
    for (i, (name, args)) in list.into_iter().enumerate() {
        steps.extend(tool_call(i, name, args, 2));
    }
    steps.push(finish("tool_calls"));
    steps.push(usage(10, 5, 0.001));
    steps.push(done());
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

#[test]
fn auto_mode_reads_and_searches_then_answers_with_an_edit() {
    let (env, fake, mut b, id) = setup("auto");
    fake.push_sse(calls(vec![
        ("search_project", json!({"query": "parse("})),
        (
            "read_file",
            json!({"path": "src/lib.rs", "start_line": 1, "end_line": 2}),
        ),
        ("list_files", json!({"glob": "**/*.rs"})),
    ]));
    fake.push_sse(response(
        "",
        "parse() unwraps; I made it return an Option.",
        vec![(
            "write_file",
            json!({"path": "src/lib.rs",
        "content": "pub fn parse(s: &str) -> Option<u32> {\n    s.parse().ok()\n}\n"}),
        )],
    ));
    let rid = b.send(json!({"action": "send", "content": "why does main panic?"}));
    let mut steps = Vec::new();
    let done = loop {
        let m = b.reply_to(&rid);
        match m["type"].as_str() {
            Some("tool_call") => steps.push((
                m["name"].as_str().unwrap().to_owned(),
                m["status"].as_str().unwrap().to_owned(),
                m["summary"].as_str().unwrap().to_owned(),
            )),
            Some("done" | "error" | "diff_error") => break m,
            _ => {}
        }
    };
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["output_files"], json!(["src/lib.rs"]));
    assert_eq!(done["usage"]["prompt_tokens"], 110);
    let completed: Vec<_> = steps
        .iter()
        .filter(|s| s.1 == "completed")
        .map(|s| (s.0.as_str(), s.2.as_str()))
        .collect();
    assert_eq!(
        completed,
        [
            ("search_project", "Found 3 matches for \"parse(\""),
            ("read_file", "Read src/lib.rs lines 1-2"),
            ("list_files", "Listed 2 files"),
        ]
    );
    // The tools were offered, and their results went back to the model.
    let bodies = fake.chat_bodies();
    let names: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "write_file",
            "edit_file",
            "list_files",
            "search_project",
            "read_file",
            "clarify_user"
        ]
    );
    assert!(
        bodies[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("read-only tools: list_files")
    );
    let results: Vec<Value> = tool_messages(&bodies[1])
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect();
    // Search results are snippets with their line ranges (JSON, as the design has them).
    let hits = results[0]["results"].as_array().unwrap();
    assert_eq!(hits[0]["file_path"], "src/lib.rs", "{results:?}");
    assert_eq!(
        (&hits[0]["start_line"], &hits[0]["end_line"]),
        (&json!(1), &json!(3))
    );
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .starts_with("pub fn parse(s: &str) -> u32 {\n    s.parse().unwrap()"),
        "{results:?}"
    );
    assert!(hits.iter().any(|h| h["file_path"] == "src/main.rs"));
    assert_eq!(results[0]["total_matches"], 3);
    assert_eq!(
        results[1],
        json!({"file_path": "src/lib.rs", "start_line": 1, "end_line": 2, "total_lines": 3,
               "content": "pub fn parse(s: &str) -> u32 {\n    s.parse().unwrap()\n"})
    );
    assert_eq!(results[2], json!({"files": ["src/lib.rs", "src/main.rs"]}));
    // The steps are kept in the chat and shown to the model later.
    let chat = env.chat_json(&id);
    let reply = chat["messages"].as_array().unwrap().last().unwrap().clone();
    let kinds: Vec<&str> = reply["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_call",
            "tool_call",
            "tool_call",
            "text",
            "context_event"
        ]
    );
    fake.push_sse(response("", "ok", vec![]));
    let rid = b.send(json!({"action": "send", "content": "thanks"}));
    while !matches!(b.reply_to(&rid)["type"].as_str(), Some("done" | "error")) {}
    let user = fake.chat_bodies()[2]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(user.contains("<tool-call name=\"read_file\" status=\"completed\" summary=\"Read src/lib.rs lines 1-2\"/>"), "{user}");
}

#[test]
fn ask_mode_waits_for_approval_and_honours_a_denial() {
    let (_env, fake, mut b, _id) = setup("ask");
    fake.push_sse(calls(vec![
        ("read_file", json!({"path": "README.md"})),
        ("read_file", json!({"path": "src/lib.rs"})),
    ]));
    fake.push_sse(response("", "Done.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "look around"}));
    let mut approvals = 0;
    let done = loop {
        let m = b.reply_to(&rid);
        match m["type"].as_str() {
            Some("tool_approval") => {
                approvals += 1;
                assert_eq!(m["payload"]["type"], "read");
                let path = m["payload"]["path"].as_str().unwrap().to_owned();
                // The description says what the file is: the user does not approve blind.
                let desc = m["payload"]["description"].as_str().unwrap();
                assert!(desc.starts_with(&format!("Read {path} (")), "{desc}");
                assert!(desc.contains(" line"), "{desc}");
                assert_eq!(m["payload"]["exists"], true, "{m}");
                // Approve the README, deny the source.
                let r = b.ok(json!({"action": "tool_approve", "approval_id": m["approval_id"], "approved": path == "README.md"}));
                assert_eq!(r["type"], "ok");
            }
            Some("done" | "error" | "diff_error") => break m,
            _ => {}
        }
    };
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(approvals, 2);
    let results = tool_messages(&fake.chat_bodies()[1]);
    assert!(results[0].contains("Parser demo"));
    assert!(results[1].contains("declined"), "{results:?}");
    let e = b.err(json!({"action": "tool_approve", "approval_id": "nope", "approved": true}));
    assert_eq!(e["code"], "not_found");
}

#[test]
fn clarify_user_asks_and_passes_the_answer_on() {
    let (env, fake, mut b, id) = setup("auto");
    fake.push_sse(calls(vec![(
        "clarify_user",
        json!({"question": "Which parser, lib or main?"}),
    )]));
    fake.push_sse(calls(vec![(
        "clarify_user",
        json!({"question": "And the second one?"}),
    )]));
    fake.push_sse(response("", "Understood.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "fix the parser"}));
    let mut questions = 0;
    let done = loop {
        let m = b.reply_to(&rid);
        match m["type"].as_str() {
            Some("clarification") => {
                questions += 1;
                let answer = if questions == 1 {
                    "the lib one"
                } else {
                    "no_user_answer"
                };
                b.ok(
                    json!({"action": "clarify", "question_id": m["question_id"], "answer": answer}),
                );
            }
            Some("done" | "error" | "diff_error") => break m,
            _ => {}
        }
    };
    assert_eq!(done["type"], "done");
    assert_eq!(questions, 2);
    let bodies = fake.chat_bodies();
    assert_eq!(tool_messages(&bodies[1]), ["the lib one"]);
    assert_eq!(tool_messages(&bodies[2]), ["the lib one", "no_user_answer"]);

    // The answer is kept with the chat, and later requests' history carries it.
    let steps: Vec<Value> = common::last_assistant(&env.chat_json(&id))["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "tool_call")
        .cloned()
        .collect();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0]["answer"], "the lib one", "{steps:?}");
    assert!(
        steps[1].get("answer").is_none(),
        "a skipped question has no answer"
    );
    fake.push_sse(response("", "Noted.", vec![]));
    b.turn("go on");
    let history = fake.chat_bodies().last().unwrap().to_string();
    assert!(
        history.contains("answer=\\\"the lib one\\\""),
        "the next request's history names the answer: {history}"
    );
}

#[test]
fn reads_stay_in_the_project_and_the_call_limit_holds() {
    let (_env, fake, mut b, _id) = setup("auto");
    let mut many = vec![
        ("read_file", json!({"path": "../outside.txt"})),
        ("read_file", json!({"path": ".bb7/chats/index.json"})),
    ];
    for _ in 0..11 {
        many.push(("read_file", json!({"path": "README.md"})));
    }
    fake.push_sse(calls(many));
    fake.push_sse(response("", "ok", vec![]));
    let rid = b.send(json!({"action": "send", "content": "read a lot"}));
    while !matches!(b.reply_to(&rid)["type"].as_str(), Some("done" | "error")) {}
    let results = tool_messages(&fake.chat_bodies()[1]);
    assert_eq!(results.len(), 13);
    assert!(
        results[0].starts_with("Error: Path is outside the project"),
        "{}",
        results[0]
    );
    assert!(
        results[1].starts_with("Error: Path is inside bb7's state directory"),
        "{}",
        results[1]
    );
    assert!(results[11].contains("Parser demo"));
    assert!(
        results[12].contains("limit of 12 tool calls"),
        "{}",
        results[12]
    );
}

#[test]
fn cancel_while_waiting_for_approval_and_tools_off() {
    let (_env, fake, mut b, _id) = setup("ask");
    fake.push_sse(calls(vec![("read_file", json!({"path": "README.md"}))]));
    let rid = b.send(json!({"action": "send", "content": "look"}));
    loop {
        if b.reply_to(&rid)["type"] == "tool_approval" {
            break;
        }
    }
    b.ok(json!({"action": "cancel", "target_request_id": rid}));
    let end = b.reply_to(&rid);
    assert_eq!(end["type"], "error");
    assert_eq!(end["code"], "cancelled");

    b.ok(json!({"action": "save_chat_settings", "tools": "off"}));
    fake.push_sse(response("", "plain", vec![]));
    let rid = b.send(json!({"action": "send", "content": "again"}));
    while !matches!(b.reply_to(&rid)["type"].as_str(), Some("done" | "error")) {}
    let last = fake.chat_bodies().pop().unwrap();
    assert_eq!(last["tools"].as_array().unwrap().len(), 2);
    b.err(json!({"action": "save_chat_settings", "tools": "sometimes"}));
}

/// `read_file` takes the design's `file_path` as well as `path`: the approval names the
/// file and the model gets its lines, not "Path must not be empty".
#[test]
fn read_file_takes_file_path() {
    let (_env, fake, mut b, _id) = setup("ask");
    fake.push_sse(calls(vec![(
        "read_file",
        json!({"file_path": "src/lib.rs", "start_line": 1, "end_line": 2}),
    )]));
    fake.push_sse(response("", "Done.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "look"}));
    let done = loop {
        let m = b.reply_to(&rid);
        match m["type"].as_str() {
            Some("tool_approval") => {
                assert_eq!(m["payload"]["path"], "src/lib.rs", "{m}");
                assert_eq!(
                    m["payload"]["description"],
                    "Read src/lib.rs lines 1-2 (3 lines, 56 B)"
                );
                assert_eq!(m["payload"]["exists"], true, "{m}");
                assert_eq!(m["payload"]["bytes"], 56, "{m}");
                assert_eq!(m["payload"]["lines"], 3, "{m}");
                b.ok(json!({"action": "tool_approve", "approval_id": m["approval_id"], "approved": true}));
            }
            Some("done" | "error" | "diff_error") => break m,
            _ => {}
        }
    };
    assert_eq!(done["type"], "done", "{done}");
    let result: Value = serde_json::from_str(&tool_messages(&fake.chat_bodies()[1])[0]).unwrap();
    assert_eq!(result["file_path"], "src/lib.rs");
    assert_eq!(
        result["content"],
        "pub fn parse(s: &str) -> u32 {\n    s.parse().unwrap()\n"
    );
}

/// The retrieval limits are config keys: calls per turn, lines per read, search
/// results and snippet lines; the tool descriptions name the defaults in force.
#[test]
fn retrieval_limits_come_from_the_config() {
    let (env, fake) = fake_env(json!({
        "max_tool_calls_per_job": 3,
        "max_read_lines_default": 2,
        "max_search_results_default": 1,
        "max_search_results_cap": 2,
        "max_search_snippet_lines": 1,
        "max_read_bytes_default": 4096
    }));
    let body: String = (1..=40).map(|i| format!("line {i} needle\n")).collect();
    env.write("big.txt", &body);
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "save_chat_settings", "tools": "auto"}));
    fake.push_sse(calls(vec![
        ("read_file", json!({"file_path": "big.txt"})),
        ("search_project", json!({"query": "needle"})),
        ("search_project", json!({"query": "needle", "limit": 50})),
        ("list_files", json!({})),
    ]));
    fake.push_sse(response("", "ok", vec![]));
    let rid = b.send(json!({"action": "send", "content": "read"}));
    while !matches!(b.reply_to(&rid)["type"].as_str(), Some("done" | "error")) {}
    let bodies = fake.chat_bodies();
    let described = bodies[0]["tools"].to_string();
    assert!(described.contains("default 4096"), "{described}");
    assert!(described.contains("default 1, at most 2"), "{described}");
    let results = tool_messages(&bodies[1]);
    let read: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(read["content"], "line 1 needle\nline 2 needle\n");
    assert_eq!(read["truncated"], "at 2 lines");
    assert_eq!(read["next_start_line"], 3);
    let search: Value = serde_json::from_str(&results[1]).unwrap();
    let hits = search["results"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{search}");
    assert_eq!(
        (&hits[0]["start_line"], &hits[0]["end_line"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(search["total_matches"], 40);
    let capped: Value = serde_json::from_str(&results[2]).unwrap();
    assert_eq!(capped["results"].as_array().unwrap().len(), 2, "{capped}");
    assert!(
        results[3].contains("limit of 3 tool calls"),
        "{}",
        results[3]
    );
}
