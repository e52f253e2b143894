//! The reference BB-7 plugin drives bb7 as its backend: for each behaviour it relies
//! on, the exact messages and shapes a reference client sees over stdio
//! (docs/PROTOCOL.md, "Facts about the reference implementation"). Session and
//! chat behaviour here; turns in `compat_turns.rs`; a reference-written `.bb7/` in
//! `compat_fixture.rs`.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

fn has_file_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| {
        t.iter().any(|d| {
            matches!(
                d["function"]["name"].as_str(),
                Some("write_file" | "edit_file")
            )
        })
    })
}

// ----- point 1: init without .bb7, global-only mode, global chats -------------------

#[test]
fn init_without_state_directory_is_an_error_and_empty_root_is_global_only() {
    let (env, fake) = fake_env(json!({}));
    let notes = env.project.join("notes.md");
    std::fs::write(&notes, "# Notes\n").unwrap();
    let mut b = env.spawn();
    let e = b.err(json!({"action": "init", "project_root": env.project}));
    assert_eq!(e["message"], "Not initialized. Run :BB7Init");
    assert_eq!(e["code"], "not_initialized");
    // The plugin retries with an empty root and clears its own.
    let r = b.ok(json!({"action": "init", "project_root": ""}));
    assert_eq!(r["global_only"], true);
    assert_eq!(r["default_model"], "fake/model");
    // An absent root is the same.
    assert_eq!(b.ok(json!({"action": "init"}))["global_only"], true);

    b.ok(json!({"action": "chat_new"}));
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["global"], true);
    assert_eq!(chat["instructions_info"]["project_exists"], false);
    assert!(chat["instructions_info"].get("project_error").is_none());

    // :BB7Add /abs/dir/notes.md stores an external, read-only file.
    b.ok(json!({"action": "context_add", "path": notes, "content": "# Notes"}));
    let files = b.ok(json!({"action": "context_list"}))["files"].clone();
    assert_eq!(files[0]["path"], notes.to_str().unwrap());
    assert_eq!(files[0]["external"], true);
    assert_eq!(files[0]["readonly"], true);
    // A relative path (the reference plugin keeps them when it has no root) names a
    // file under the editor's working directory, also external and read-only.
    let todo = env.project.join("todo.md");
    std::fs::write(&todo, "- [ ] x\n").unwrap();
    b.ok(json!({"action": "context_add", "path": "todo.md", "content": "- [ ] x"}));
    let files = b.ok(json!({"action": "context_list"}))["files"].clone();
    assert_eq!(files[1]["path"], todo.to_str().unwrap());
    assert_eq!(files[1]["external"], true);
    assert_eq!(files[1]["readonly"], true);
    let e = b.err(json!({"action": "context_add", "path": "todo.md", "content": "x"}));
    assert!(
        e["message"].as_str().unwrap().contains("already exists"),
        "{e}"
    );

    // The model gets no file tools and no project instructions.
    fake.push_sse(response("", "Noted.", vec![]));
    assert_eq!(b.turn("Summarise")["type"], "done");
    let body = fake.chat_bodies().pop().unwrap();
    assert!(!has_file_tools(&body), "{}", body["tools"]);
    assert!(!env.project.join(".bb7").exists());
}

#[test]
fn global_chats_in_a_project_get_no_file_tools_and_no_project_instructions() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _) = env.with_chat();
    std::fs::write(
        env.project.join(".bb7/instructions"),
        "Project rule: use tabs.\n",
    )
    .unwrap();
    b.ok(json!({"action": "chat_new", "global": true}));
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["global"], true);
    assert_eq!(chat["instructions_info"]["project_exists"], false);
    fake.push_sse(response("", "Fine.", vec![]));
    assert_eq!(b.turn("Hello")["type"], "done");
    let body = fake.chat_bodies().pop().unwrap();
    assert!(!has_file_tools(&body));
    assert!(!system_prompt(&body).contains("use tabs"));

    // The project chat still gets both.
    b.ok(json!({"action": "chat_new"}));
    fake.push_sse(response("", "Fine.", vec![]));
    assert_eq!(b.turn("Hello")["type"], "done");
    let body = fake.chat_bodies().pop().unwrap();
    assert!(has_file_tools(&body));
    assert!(system_prompt(&body).contains("use tabs"));
}

// ----- point 2: error texts the plugin matches --------------------------------------

#[test]
fn repeated_adds_say_already_exists_and_absent_things_say_not_found() {
    let env = Env::new();
    env.write("a.rs", "fn a() {}\n");
    let (mut b, _) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "fn a() {}"}));
    let e = b.err(json!({"action": "context_add", "path": "a.rs", "content": "fn a() {}"}));
    assert_eq!(e["message"], "Context file already exists");
    assert_eq!(e["code"], "conflict");
    let section = json!({"action": "context_add_section", "path": "a.rs", "content": "fn a() {}",
                         "start_line": 1, "end_line": 1});
    b.ok(section.clone());
    let e = b.err(section);
    assert!(
        e["message"].as_str().unwrap().contains("already exists"),
        "{e}"
    );

    let not_found = |e: Value| {
        assert!(e["message"].as_str().unwrap().contains("not found"), "{e}");
        assert_eq!(e["code"], "not_found");
    };
    let e = b.err(json!({"action": "context_remove", "path": "b.rs"}));
    assert_eq!(e["message"], "File not found");
    not_found(e);
    not_found(b.err(
        json!({"action": "context_remove_section", "path": "a.rs", "start_line": 5, "end_line": 6}),
    ));
    let e = b.err(json!({"action": "apply_file", "path": "a.rs"}));
    assert_eq!(e["message"], "File not found");
    not_found(e);
    let e = b.err(json!({"action": "output_delete", "path": "a.rs"}));
    assert_eq!(e["message"], "File not found");
    not_found(e);
    not_found(b.err(json!({"action": "get_output_file", "path": "a.rs"})));
    not_found(b.err(json!({"action": "context_update", "path": "b.rs", "content": ""})));
}

// ----- point 4: search_chats ---------------------------------------------------------

#[test]
fn search_with_an_empty_query_lists_every_chat_and_finds_messages_and_paths() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/parser.rs", "fn parse() {}\n");
    let (mut b, first) = env.with_chat();
    b.ok(json!({"action": "chat_rename", "id": first, "name": "Alpha"}));
    b.ok(json!({"action": "context_add", "path": "src/parser.rs", "content": "fn parse() {}"}));
    fake.push_sse(response("", "The tokenizer is fine.", vec![]));
    assert_eq!(b.turn("Check the lexer")["type"], "done");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = b.ok(json!({"action": "chat_new", "name": "Beta"}))["id"].clone();

    let all = b.ok(json!({"action": "search_chats", "query": ""}));
    assert_eq!(all["type"], "search_results");
    let results = all["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    // Newest first, every one a title match.
    assert_eq!(results[0]["id"], second);
    assert_eq!(results[1]["id"], first.as_str());
    assert!(results.iter().all(|r| r["match_type"] == "title"));
    assert_eq!(results[1]["name"], "Alpha");

    let r = b.ok(json!({"action": "search_chats", "query": "lexer"}))["results"].clone();
    assert_eq!(r[0]["id"], first.as_str());
    assert_eq!(r[0]["match_type"], "content");
    assert!(r[0]["excerpt"].as_str().unwrap().contains("lexer"));
    let r = b.ok(json!({"action": "search_chats", "query": "parser.rs"}))["results"].clone();
    assert_eq!(r.as_array().unwrap().len(), 1);
    assert_eq!(r[0]["match_type"], "content");
    assert!(r[0]["excerpt"].as_str().unwrap().contains("src/parser.rs"));
}

// ----- point 5: project_error --------------------------------------------------------

#[test]
fn project_error_is_omitted_without_an_error_and_an_invalid_include_disables_instructions() {
    let env = Env::new();
    let (mut b, _) = env.with_chat();
    let path = env.project.join(".bb7/instructions");
    std::fs::write(&path, "Be brief.\n").unwrap();
    let info = b.ok(json!({"action": "get_customization_info"}));
    assert_eq!(info["project_instructions"], true);
    assert!(info.get("project_instructions_error").is_none(), "{info}");
    let chat = b.ok(json!({"action": "chat_get"}));
    assert!(chat["instructions_info"].get("project_error").is_none());
    assert_eq!(chat["instructions_info"]["project_exists"], true);

    for bad in ["@include missing.md\n", "@include ../outside.md\n"] {
        std::fs::write(&path, bad).unwrap();
        let info = b.ok(json!({"action": "get_customization_info"}));
        assert_eq!(info["project_instructions"], false, "{bad}");
        let reason = info["project_instructions_error"].as_str().unwrap();
        assert!(reason.contains("line 1"), "{reason}");
        let chat = b.ok(json!({"action": "chat_get"}));
        assert_eq!(chat["instructions_info"]["project_error"], reason);
    }
}

// ----- point 6: fork and edit --------------------------------------------------------

/// A chat with a file added (one event message), then two exchanges. Returns the
/// indexes of the two user messages.
fn two_exchanges(b: &mut Bb7, env: &Env, fake: &FakeModel, id: &str) -> (usize, usize) {
    // The plugin sends buffers without their final newline.
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "fn a() {}\nfn b() {}"}));
    b.ok(json!({"action": "context_add", "path": "b.rs", "content": "one"}));
    fake.push_sse(response("", "First answer.", vec![]));
    assert_eq!(b.turn("First question")["type"], "done");
    fake.push_sse(response("", "Second answer.", vec![]));
    assert_eq!(b.turn("Second question")["type"], "done");
    let msgs = env.chat_json(id)["messages"].as_array().unwrap().clone();
    let users: Vec<usize> = (0..msgs.len())
        .filter(|i| msgs[*i]["role"] == "user")
        .collect();
    (users[0], users[1])
}

#[test]
fn fork_takes_only_user_messages_copies_what_is_before_and_warns_in_a_system_message() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.rs", "fn a() {}\nfn b() {}\n");
    env.write("b.rs", "one\n");
    let (mut b, id) = env.with_chat();
    let (_, second) = two_exchanges(&mut b, &env, &fake, &id);
    // An assistant message or a context event cannot be forked.
    let e = b.err(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": second + 1}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("not a user message"),
        "{e}"
    );
    b.err(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": 0}));

    // Only b.rs really changed; a.rs merely has its final newline on disk.
    env.write("b.rs", "two\n");
    let f = b.ok(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": second}));
    assert_eq!(f["type"], "fork_result");
    assert_eq!(f["fork_message_content"], "Second question");
    let warnings = f["context_warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["path"], "b.rs");
    assert_eq!(warnings[0]["issue"], "modified");
    assert_eq!(
        warnings[0]["original_version"],
        common::file_id("b.rs", "one")
    );

    let source = env.chat_json(&id)["messages"].as_array().unwrap().clone();
    let fork = b.ok(json!({"action": "chat_get"}));
    assert_eq!(fork["id"], f["new_chat_id"]);
    assert_eq!(fork["draft"], "Second question");
    let msgs = fork["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), second + 1);
    for i in 0..second {
        assert_eq!(msgs[i]["parts"], source[i]["parts"], "message {i}");
    }
    let warning = &msgs[second];
    assert_eq!(warning["role"], "system");
    assert_eq!(warning["parts"][0]["type"], "context_event");
    assert_eq!(warning["parts"][0]["action"], "ForkWarningModified");
    assert_eq!(warning["parts"][0]["path"], "b.rs");
}

#[test]
fn edit_truncates_before_a_user_message_and_warns_about_deleted_files() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.rs", "fn a() {}\nfn b() {}\n");
    env.write("b.rs", "one\n");
    let (mut b, id) = env.with_chat();
    let (first, second) = two_exchanges(&mut b, &env, &fake, &id);
    b.err(
        json!({"action": "chat_edit", "chat_id": id, "message_index": first + 1, "content": "x"}),
    );
    b.err(json!({"action": "chat_edit", "chat_id": id, "message_index": 99, "content": "x"}));
    assert_eq!(
        env.chat_json(&id)["messages"].as_array().unwrap().len(),
        second + 2,
        "a refused edit changes nothing"
    );
    std::fs::remove_file(env.project.join("b.rs")).unwrap();
    let r = b.ok(json!({"action": "chat_edit", "chat_id": id, "message_index": first, "content": "Better question"}));
    assert_eq!(r["type"], "ok");
    let w = r["context_warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0]["issue"], "deleted");
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["draft"], "Better question");
    let msgs = chat["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), first + 1);
    assert_eq!(msgs[first]["role"], "system");
    assert_eq!(msgs[first]["parts"][0]["action"], "ForkWarningDeleted");
    let files = chat["context_files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0]["path"], "a.rs");
}

#[test]
fn edit_with_an_empty_content_keeps_the_message_text_as_the_draft() {
    // The reference plugin's <C-e> sends the message's `content`, which bb7's messages
    // (text in parts) do not have, so it sends "".
    let (env, fake) = fake_env(json!({}));
    env.write("a.rs", "fn a() {}\nfn b() {}\n");
    env.write("b.rs", "one\n");
    let (mut b, id) = env.with_chat();
    let (_, second) = two_exchanges(&mut b, &env, &fake, &id);
    b.ok(json!({"action": "chat_edit", "chat_id": id, "message_index": second, "content": ""}));
    assert_eq!(
        b.ok(json!({"action": "chat_get"}))["draft"],
        "Second question"
    );
}

// ----- point 7: chat_new_with_context ------------------------------------------------

#[test]
fn new_chat_with_context_rereads_full_files_and_copies_sections() {
    let env = Env::new();
    env.write("a.rs", "old\n");
    env.write("s.rs", "1\n2\n3\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "old"}));
    b.ok(
        json!({"action": "context_add_section", "path": "s.rs", "content": "2",
                "start_line": 2, "end_line": 2}),
    );
    env.write("a.rs", "new\n");
    env.write("s.rs", "1\nchanged\n3\n");
    let r = b.ok(json!({"action": "chat_new_with_context", "source_chat_id": id}));
    assert_eq!(r["type"], "ok");
    assert_ne!(r["id"], id.as_str());
    let f = b.ok(json!({"action": "get_context_file", "path": "a.rs"}));
    assert_eq!(f["content"], "new\n");
    let s =
        b.ok(json!({"action": "get_context_file", "path": "s.rs", "start_line": 2, "end_line": 2}));
    assert_eq!(s["content"], "2");
    let list = b.ok(json!({"action": "context_list"}))["files"].clone();
    assert_eq!(list[0]["version"], common::file_id("a.rs", "new\n"));
    assert_eq!(list[1]["readonly"], true);
}

#[test]
fn pins_the_reference_plugin_wrote_are_read() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    let other = b.ok(json!({"action": "chat_new"}))["id"].clone();
    std::fs::write(
        env.project.join(".bb7/pinned_chats.json"),
        json!({"chats": [id]}).to_string(),
    )
    .unwrap();
    let list = b.ok(json!({"action": "chat_list"}))["chats"].clone();
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["pinned"], true);
    assert_eq!(list[1]["id"], other);
    assert_eq!(list[1]["pinned"], false);
}
