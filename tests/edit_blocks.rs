//! Edits as SEARCH/REPLACE blocks in the answer text (config `edit_format`): the real
//! binary over stdio against the fake model, from the request bb7 sends to the file
//! the user applies.

mod common;

use common::fake_model::*;
use common::{Env, fake_env};
use serde_json::{Value, json};

const SOURCE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";

const ANSWER: &str = "I change the value.\n\nsrc/main.rs\n```rust\n<<<<<<< SEARCH\n    let x = 1;\n=======\n    let x = 2;\n>>>>>>> REPLACE\n```\n\nThat is all.\n";

/// A streamed answer cut into pieces of `size` characters, ending normally.
fn answer(text: &str, size: usize) -> Vec<Step> {
    let chars: Vec<char> = text.chars().collect();
    let mut steps = vec![Step::Comment, role()];
    steps.extend(
        chars
            .chunks(size)
            .map(|c| common::fake_model::text(&c.iter().collect::<String>())),
    );
    steps.extend([finish("stop"), usage(100, 20, 0.001), done()]);
    steps
}

fn chunks(stream: &[Value]) -> String {
    stream
        .iter()
        .filter(|m| m["type"] == "chunk")
        .filter_map(|m| m["content"].as_str())
        .collect()
}

fn system_prompt(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap_or("")
}

#[test]
fn blocks_format_sends_no_tools_and_lands_the_block_as_a_change() {
    let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    fake.push_sse(answer(ANSWER, 5));
    let stream = b.turn_stream("Make x two.");

    let body = &fake.chat_bodies()[0];
    assert!(body.get("tools").is_none(), "{body}");
    assert!(system_prompt(body).contains("<<<<<<< SEARCH"));

    // The chat shows the prose; the block is one change, announced before the end.
    let shown = chunks(&stream);
    assert_eq!(shown, "I change the value.\n\n\nThat is all.\n");
    let announced = stream
        .iter()
        .position(|m| m["type"] == "tool_call")
        .expect("the block is announced");
    assert_eq!(stream[announced]["name"], "edit_file");
    assert_eq!(stream[announced]["status"], "proposed");
    assert_eq!(stream[announced]["summary"], "Edit src/main.rs");
    // Announced as soon as the block ended, before the prose after it streamed.
    let after = stream
        .iter()
        .position(|m| m["type"] == "chunk" && m["content"].as_str().unwrap_or("").contains("That"))
        .unwrap();
    assert!(announced < after, "{stream:?}");
    let done = stream.last().unwrap();
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["output_files"], json!(["src/main.rs"]));
    assert_eq!(
        done["changes"][0]["description"],
        "Edit src/main.rs: 1 hunk, +1 \u{2212}1 (was 4 lines, now 4)"
    );
    assert_eq!(
        env.output(&chat, "src/main.rs").unwrap(),
        SOURCE.replace("x = 1", "x = 2")
    );

    let saved = env.chat_json(&chat);
    let text = common::last_assistant(&saved).to_string();
    assert!(text.contains("That is all."), "{text}");
    assert!(!text.contains("SEARCH"), "{text}");
    assert!(text.contains("AssistantWriteFile"), "{text}");

    b.ok(json!({"action": "apply_file", "path": "src/main.rs"}));
    assert_eq!(env.read("src/main.rs"), SOURCE.replace("x = 1", "x = 2"));
}

#[test]
fn a_block_cut_off_by_the_end_of_the_answer_writes_nothing() {
    let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    let whole = "src/other.rs\n<<<<<<< SEARCH\n=======\nfn a() {}\n>>>>>>> REPLACE\n";
    let cut = "src/main.rs\n```rust\n<<<<<<< SEARCH\n    let x = 1;\n=======\n    let x = 2;\n";
    fake.push_sse(answer(&format!("{whole}{cut}"), 7));
    let end = b.turn("Make x two.");
    assert_eq!(end["type"], "diff_error", "{end}");
    let errors = end["errors"].to_string();
    assert!(errors.contains("cut off"), "{errors}");
    assert!(env.output(&chat, "src/main.rs").is_none());
    assert!(env.output(&chat, "src/other.rs").is_none());
}

#[test]
fn an_empty_search_part_creates_a_file_but_never_replaces_one() {
    let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    fake.push_sse(answer(
        "src/new.rs\n```rust\n<<<<<<< SEARCH\n=======\npub fn new() {}\n>>>>>>> REPLACE\n```\n",
        9,
    ));
    let end = b.turn("Add a file.");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["changes"][0]["type"], "write");
    assert_eq!(
        env.output(&chat, "src/new.rs").unwrap(),
        "pub fn new() {}\n"
    );

    fake.push_sse(answer(
        "src/main.rs\n```rust\n<<<<<<< SEARCH\n=======\nfn main() {}\n>>>>>>> REPLACE\n```\n",
        9,
    ));
    let end = b.turn("Rewrite main.");
    assert_eq!(end["type"], "diff_error", "{end}");
    assert_eq!(end["tool_calls"][0]["code"], "invalid_edit");
    assert!(env.output(&chat, "src/main.rs").is_none());
}

#[test]
fn a_failed_block_reports_like_a_failed_tool_call() {
    let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
    let (mut b, _chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    fake.push_sse(answer(
        "src/main.rs\n<<<<<<< SEARCH\n    let y = 1;\n=======\n    let y = 2;\n>>>>>>> REPLACE\n",
        11,
    ));
    let end = b.turn("Make y two.");
    assert_eq!(end["type"], "diff_error", "{end}");
    let call = &end["tool_calls"][0];
    assert_eq!(call["tool"], "edit_file");
    assert_eq!(call["code"], "not_found");
    assert_eq!(call["args"]["old_string"], "    let y = 1;\n");
    assert!(
        call["suggestions"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
}

/// A server without tool support: any request with `tools` is refused with HTTP 400.
fn tools_refusing_server(env: &Env, fake: &FakeModel) {
    let _ = env;
    fake.set_fallback(Box::new(|req| {
        if !req.path.ends_with("/chat/completions") {
            return None;
        }
        if req.body.get("tools").is_some() {
            return Some(http_error(400, "tools not supported"));
        }
        Some(Reply::Sse(answer(ANSWER, 4)))
    }));
}

#[test]
fn auto_falls_back_to_blocks_when_the_server_refuses_tools_and_remembers_it() {
    let (env, fake) = fake_env(json!({"api_key": null, "default_model": "local/model"}));
    tools_refusing_server(&env, &fake);
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    let stream = b.turn_stream("Make x two.");
    let end = stream.last().unwrap();
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(
        env.output(&chat, "src/main.rs").unwrap(),
        SOURCE.replace("x = 1", "x = 2")
    );
    assert!(!chunks(&stream).contains("SEARCH"));
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0].get("tools").is_some());
    assert!(bodies[1].get("tools").is_none());
    assert!(system_prompt(&bodies[1]).contains("<<<<<<< SEARCH"));
    assert!(!system_prompt(&bodies[0]).contains("<<<<<<< SEARCH"));
    drop(b);

    // Remembered for the model, also in a new process: no refused request first.
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    env.add(&mut b, "src/main.rs", SOURCE);
    let end = b.turn("Make x two.");
    assert_eq!(end["type"], "done", "{end}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[2].get("tools").is_none());
}

#[test]
fn the_blocks_retry_keeps_the_cache_breakpoints() {
    // A model that caches only at breakpoints, with a system text long enough to mark.
    let (env, fake) = fake_env(json!({"default_model": "anthropic/claude-sonnet-4.5"}));
    tools_refusing_server(&env, &fake);
    let rules: String = (0..300)
        .map(|i| format!("Rule {i}: keep functions short.\n"))
        .collect();
    let (mut b, _chat) = env.with_chat();
    env.write(".bb7/instructions", &rules);
    env.add(&mut b, "src/main.rs", SOURCE);
    assert_eq!(b.turn("Make x two.")["type"], "done");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    let system = |body: &Value| body["messages"][0]["content"].clone();
    let parts = system(&bodies[1]);
    let last = parts.as_array().and_then(|p| p.last()).cloned();
    let last = last.expect("the retry's system message is plain text, without a breakpoint");
    assert!(last["text"].as_str().unwrap().contains("<<<<<<< SEARCH"));
    assert!(last["text"].as_str().unwrap().contains("Rule 299"));
    assert_eq!(
        last["cache_control"],
        system(&bodies[0])[0]["cache_control"]
    );
    assert_eq!(last["cache_control"]["type"], "ephemeral");
    assert_eq!(breakpoints(&bodies[1]), breakpoints(&bodies[0]));
    assert_eq!(bodies[1]["messages"][1], bodies[0]["messages"][1]);
}

#[test]
fn explicit_tools_format_does_not_fall_back() {
    let (env, fake) = fake_env(json!({"edit_format": "tools"}));
    tools_refusing_server(&env, &fake);
    let (mut b, _chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    let end = b.turn("Make x two.");
    assert_eq!(end["type"], "error", "{end}");
    assert_eq!(fake.chat_bodies().len(), 1);
}

#[test]
fn auto_sends_blocks_to_a_model_listed_without_tool_support() {
    let (env, fake) = fake_env(json!({}));
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [
            {"id": "fake/model", "name": "Fake", "supported_parameters": ["temperature"]},
            {"id": "other/model", "name": "Other", "supported_parameters": ["tools"]}
        ]})
        .to_string(),
    });
    let (mut b, chat) = env.with_chat();
    b.ok(json!({"action": "get_models"}));
    env.add(&mut b, "src/main.rs", SOURCE);
    fake.push_sse(answer(ANSWER, 6));
    let end = b.turn("Make x two.");
    assert_eq!(end["type"], "done", "{end}");
    assert!(fake.chat_bodies()[0].get("tools").is_none());
    assert!(env.output(&chat, "src/main.rs").is_some());

    // A model the list says supports tools gets them.
    fake.push_sse(response("", "Nothing to change.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "Hi", "model": "other/model"}));
    let end = b.stream(&rid).pop().unwrap();
    assert_eq!(end["type"], "done", "{end}");
    assert!(fake.chat_bodies()[1].get("tools").is_some());
}

#[test]
fn a_model_entry_overrides_the_edit_format() {
    let (env, fake) = fake_env(json!({"edit_format": "tools",
                                      "model_edit_formats": {"fake/model": "blocks"}}));
    let (mut b, _chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    fake.push_sse(answer(ANSWER, 6));
    let end = b.turn("Make x two.");
    assert_eq!(end["type"], "done", "{end}");
    assert!(fake.chat_bodies()[0].get("tools").is_none());
}

#[test]
fn a_chat_setting_overrides_the_config() {
    let (env, fake) = fake_env(json!({"edit_format": "tools"}));
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    b.ok(json!({"action": "save_chat_settings", "edit_format": "blocks"}));
    assert_eq!(env.chat_json(&chat)["edit_format"], "blocks");
    assert_eq!(b.ok(json!({"action": "chat_get"}))["edit_format"], "blocks");
    fake.push_sse(answer(ANSWER, 6));
    let end = b.turn("Make x two.");
    assert_eq!(end["type"], "done", "{end}");
    assert!(fake.chat_bodies()[0].get("tools").is_none());

    let err = b.err(json!({"action": "save_chat_settings", "edit_format": "diffs"}));
    assert!(
        err["message"].as_str().unwrap().contains("edit_format"),
        "{err}"
    );
}

/// The README's recipe for a local server without tool support, as written there.
#[test]
fn the_local_server_recipe_of_the_readme() {
    let env = Env::new();
    let fake = FakeModel::start();
    env.write_config(json!({
        "base_url": fake.url,
        "default_model": "qwen2.5-coder:7b",
        "edit_format": "blocks"
    }));
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "src/main.rs", SOURCE);
    fake.push_sse(answer(ANSWER, 3));
    let end = b.turn("Make x two.");
    assert_eq!(end["type"], "done", "{end}");
    assert!(env.output(&chat, "src/main.rs").is_some());
    let request = fake
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert_eq!(request.authorization, None);
    assert_eq!(request.body["model"], "qwen2.5-coder:7b");
    assert!(request.body.get("tools").is_none());
}

#[test]
fn a_block_whose_path_cannot_be_read_is_refused_not_sent_to_another_file() {
    let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
    let (mut b, chat) = env.with_chat();
    env.add(&mut b, "notes.md", "# Notes\nalpha\n");
    env.add(&mut b, "docs/meeting notes.md", "# Meeting\nalpha\n");
    fake.push_sse(answer(
        "notes.md\n```markdown\n<<<<<<< SEARCH\n# Notes\n=======\n# All notes\n>>>>>>> REPLACE\n```\n\ndocs/meeting notes.md\n```markdown\n<<<<<<< SEARCH\nalpha\n=======\nbeta\n>>>>>>> REPLACE\n```\n",
        7,
    ));
    let end = b.turn("Rename and change alpha.");
    assert_eq!(end["type"], "diff_error", "{end}");
    let refused: Vec<&Value> = end["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "failed")
        .collect();
    assert_eq!(refused.len(), 1, "{end}");
    let why = refused[0]["error"].as_str().unwrap();
    assert!(why.contains("docs/meeting notes.md"), "{why}");
    assert!(env.output(&chat, "notes.md").is_none());

    // Named in backticks, the path with a space is read and the edit lands there.
    fake.push_sse(answer(
        "`docs/meeting notes.md`\n```markdown\n<<<<<<< SEARCH\nalpha\n=======\nbeta\n>>>>>>> REPLACE\n```\n",
        7,
    ));
    let end = b.turn("Again, quoted.");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(
        env.output(&chat, "docs/meeting notes.md").unwrap(),
        "# Meeting\nbeta\n"
    );
}

#[test]
fn an_answer_past_the_block_cap_is_refused_and_a_ping_is_answered_while_it_is_planned() {
    let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
    let (mut b, _chat) = env.with_chat();
    let source: String = (0..3000).map(|i| format!("let v{i} = {i};\n")).collect();
    env.add(&mut b, "src/a.rs", &source);
    let blocks: String = (0..3000)
        .map(|i| {
            format!(
                "src/a.rs\n```rust\n<<<<<<< SEARCH\nlet v{i} = {i};\n=======\nlet v{i} = {};\n>>>>>>> REPLACE\n```\n\n",
                i + 1
            )
        })
        .collect();
    fake.push_sse(response("", &blocks, Vec::new()));
    let rid = b.send(json!({"action": "send", "content": "Bump every value."}));
    // Once the stream has announced every block, the turn is being planned: a ping
    // sent now is answered before the turn ends (planning is off the request loop).
    let mut announced = 0;
    while announced < 200 {
        let m = b.reply_to(&rid);
        assert!(
            matches!(m["type"].as_str(), Some("tool_call" | "chunk")),
            "{}",
            m["type"]
        );
        if m["type"] == "tool_call" {
            announced += 1;
        }
    }
    let ping = b.send(json!({"action": "ping"}));
    let mut order = Vec::new();
    let end = loop {
        let m = b.recv().expect("bb7 answers");
        if m["request_id"] == ping.as_str() {
            order.push("ping");
        } else if m["request_id"] == rid.as_str()
            && matches!(m["type"].as_str(), Some("done" | "diff_error" | "error"))
        {
            order.push("end");
            break m;
        }
    };
    assert_eq!(order, ["ping", "end"]);
    assert_eq!(end["type"], "diff_error", "{}", end["type"]);
    let calls = end["tool_calls"].as_array().unwrap();
    let failed: Vec<&Value> = calls.iter().filter(|c| c["status"] == "failed").collect();
    // One refusal stands for the 2,800 blocks past the cap; the 200 before it matched.
    assert_eq!((calls.len(), failed.len()), (201, 1));
    assert!(
        failed[0]["error"]
            .as_str()
            .unwrap()
            .contains("more than 200"),
        "{}",
        failed[0]
    );
}
