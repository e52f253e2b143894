//! The reference BB-7 plugin as a client of bb7's model turns: cancel, titles,
//! `usage.csv`, the restored active chat, the model list, the small details of the
//! stream and the chat, and final newlines (docs/PROTOCOL.md, "Facts about the
//! reference implementation").

mod common;

use std::time::Duration;

use common::fake_model::*;
use common::{Env, fake_env, file_id};
use serde_json::{Value, json};

fn messages(env: &Env, id: &str) -> Vec<Value> {
    env.chat_json(id)["messages"].as_array().unwrap().clone()
}

// ----- point 3: cancel ---------------------------------------------------------------

#[test]
fn cancel_ends_the_send_with_the_reference_error_and_keeps_the_partial_answer() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let partial = [text("Partial "), text("answer")];
    fake.push_sse(paused(&partial, Duration::from_secs(10), " never"));
    let rid = b.send(json!({"action": "send", "content": "long question"}));
    b.wait_for_text(&rid, "Partial answer");
    assert_eq!(
        b.ok(json!({"action": "cancel", "target_request_id": rid}))["type"],
        "ok"
    );
    let end = b.reply_to(&rid);
    assert_eq!(end["type"], "error", "{end}");
    assert_eq!(end["message"], "Response aborted by user.");
    assert_eq!(end["code"], "cancelled");
    let msgs = messages(&env, &id);
    let answer = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(answer["parts"][0]["content"], "Partial answer");
    // Nothing else comes for the request.
    assert!(b.recv_timeout(Duration::from_millis(300)).is_none());
}

// ----- point 8: generate_title -------------------------------------------------------

#[test]
fn generate_title_without_title_model_is_refused_and_calls_no_model() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "chat_rename", "id": id, "name": "My name"}));
    let e =
        b.err(json!({"action": "generate_title", "chat_id": id, "content": "Explain lifetimes"}));
    assert_eq!(e["message"], "title_model not configured");
    assert!(b.recv_timeout(Duration::from_millis(300)).is_none());
    assert!(fake.requests().is_empty());
    assert_eq!(env.chat_json(&id)["name"], "My name");
}

// ----- point 9: usage.csv ------------------------------------------------------------

#[test]
fn every_completed_turn_appends_a_usage_line() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _) = env.with_chat();
    fake.push_sse(response("", "One.", vec![]));
    assert_eq!(b.turn("First")["type"], "done");
    // A turn that cost nothing is not logged.
    fake.push_sse(vec![
        role(),
        text("Free."),
        finish("stop"),
        usage(5, 1, 0.0),
        done(),
    ]);
    assert_eq!(b.turn("Second")["type"], "done");
    let csv = std::fs::read_to_string(env.home.join(".bb7/usage.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1, "{csv}");
    let today = chrono::Local::now().format("%Y-%m-%d").to_string();
    assert!(lines[0].starts_with(&today), "{csv}");
    let fields: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(fields.len(), 7, "{csv}");
    assert_eq!(fields[0].len(), "2006-01-02T15:04:05".len());
    assert_eq!(fields[1], env.project.to_str().unwrap());
    assert_eq!(&fields[2..], ["fake/model", "100", "20", "3", "0.001500"]);
}

// ----- point 10: chat_active after a restart -----------------------------------------

#[test]
fn the_active_chat_is_restored_after_a_restart_global_ones_too() {
    let env = Env::new();
    let (mut b, _) = env.with_chat();
    let g = b.ok(json!({"action": "chat_new", "global": true}))["id"].clone();
    b.ok(json!({"action": "shutdown"}));
    assert!(b.close().success());

    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let a = b.ok(json!({"action": "chat_active"}));
    assert_eq!(a["type"], "chat_active");
    assert_eq!(a["id"], g);
    assert_eq!(a["global"], true);
    assert_eq!(b.ok(json!({"action": "chat_get"}))["id"], g);

    // Back to a project chat: that one is restored next time.
    let p = b.ok(json!({"action": "chat_new"}))["id"].clone();
    b.ok(json!({"action": "shutdown"}));
    assert!(b.close().success());
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let a = b.ok(json!({"action": "chat_active"}));
    assert_eq!(a["id"], p);
    assert_eq!(a["global"], false);
}

#[test]
fn global_only_mode_restores_its_active_chat_too() {
    let env = Env::new();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": ""}));
    let g = b.ok(json!({"action": "chat_new"}))["id"].clone();
    b.ok(json!({"action": "shutdown"}));
    assert!(b.close().success());
    let mut b = env.spawn();
    b.err(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "init", "project_root": ""}));
    let a = b.ok(json!({"action": "chat_active"}));
    assert_eq!(a["id"], g);
    assert_eq!(a["global"], true);
}

// ----- point 11: get_models ----------------------------------------------------------

#[test]
fn get_models_passes_openrouter_fields_through() {
    let (env, fake) = fake_env(json!({}));
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{
            "id": "anthropic/claude-sonnet-4.6", "name": "Claude Sonnet 4.6",
            "created": 1750000000, "description": "A model.", "expiration_date": null,
            "context_length": 200000,
            "top_provider": {"context_length": 200000, "max_completion_tokens": 64000},
            "pricing": {"prompt": "0.000003", "completion": "0.000015",
                        "internal_reasoning": "0.000015", "input_cache_read": "0.0000003",
                        "input_cache_write": "0.00000375"},
            "supported_parameters": ["tools", "reasoning", "max_tokens"]
        }]})
        .to_string(),
    });
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": ""}));
    for refresh in [true, false] {
        let r = b.ok(json!({"action": "get_models", "refresh": refresh}));
        assert_eq!(r["type"], "models");
        let m = &r["models"][0];
        assert_eq!(m["id"], "anthropic/claude-sonnet-4.6");
        assert_eq!(m["name"], "Claude Sonnet 4.6");
        assert_eq!(m["context_length"], 200000);
        assert_eq!(m["max_completion_tokens"], 64000);
        assert_eq!(m["created"], 1750000000);
        assert_eq!(m["description"], "A model.");
        assert_eq!(m["expiration_date"], Value::Null);
        assert_eq!(m["supports_reasoning"], true);
        assert_eq!(m["supports_tools"], true);
        assert_eq!(m["pricing"]["prompt"], "0.000003");
        assert_eq!(m["pricing"]["completion"], "0.000015");
        assert_eq!(m["pricing"]["internal_reasoning"], "0.000015");
        assert_eq!(m["pricing"]["input_cache_read"], "0.0000003");
    }
    // The second answer came from the cache.
    let fetches = fake
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/models"))
        .count();
    assert_eq!(fetches, 1);
}

// ----- point 12: the small ones ------------------------------------------------------

#[test]
fn assistant_messages_carry_usage_duration_and_version_is_the_crate_version() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let v = b.ok(json!({"action": "version"}));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    fake.push_sse(response("", "Answer.", vec![]));
    let done = b.turn("Question");
    assert!(done["duration"].as_f64().is_some());
    let chat = b.ok(json!({"action": "chat_get"}));
    let answer = common::last_assistant(&chat);
    let usage = &answer["usage"];
    assert_eq!(usage["prompt_tokens"], 100);
    assert_eq!(usage["cost"], 0.0015);
    assert!(
        usage["duration"].as_f64().is_some_and(|d| d >= 0.0),
        "{usage}"
    );
    assert_eq!(env.chat_json(&id)["messages"], chat["messages"]);
}

#[test]
fn estimate_text_tokens_needs_texts() {
    let env = Env::new();
    let (mut b, _) = env.with_chat();
    b.err(json!({"action": "estimate_text_tokens", "texts": []}));
    b.err(json!({"action": "estimate_text_tokens"}));
    let r = b.ok(json!({"action": "estimate_text_tokens", "texts": ["hello", ""]}));
    assert_eq!(r["tokens"].as_array().unwrap().len(), 2);
}

#[test]
fn after_a_diff_error_the_answer_stays_last_and_the_next_request_carries_the_retry_context() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.rs", "fn a() {}\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "fn a() {}"}));
    fake.push_sse(response(
        "",
        "Here is the change.",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "a.rs", "old_string": "fn zzz() {}", "new_string": "fn b() {}"}]}),
        )],
    ));
    let end = b.turn("Rename");
    assert_eq!(end["type"], "diff_error", "{end}");
    // The reference's plugin reads the last message after a diff_error: the answer.
    let msgs = messages(&env, &id);
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "assistant");
    let text: String = last["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Here is the change.");
    assert_eq!(
        last["diff_error"]["errors"], end["errors"],
        "the failure stays visible"
    );
    assert!(msgs.iter().all(|m| m["role"] != "system"));
    let got = b.ok(json!({"action": "chat_get"}));
    assert_eq!(
        got["messages"].as_array().unwrap().last().unwrap()["role"],
        "assistant"
    );

    // The next request tells the model what failed, after the history.
    fake.push_sse(response("", "Retried.", vec![]));
    assert_eq!(b.turn("Try again")["type"], "done");
    let body = &fake.chat_bodies()[1];
    let user = body["messages"][1]["content"].as_str().unwrap();
    let retry = user.find("<retry-context").expect("retry context");
    assert!(
        user[retry..].contains("fn zzz() {}") || user[retry..].contains("not found"),
        "{user}"
    );
    assert!(retry > user.find("Here is the change.").unwrap());
    assert!(retry < user.find("Try again").unwrap());
}

#[test]
fn chat_move_to_global_is_refused_with_pending_output_and_makes_files_read_only() {
    let env = Env::new();
    env.write("a.rs", "fn a() {}\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "fn a() {}\n"}));
    env.plant_output(&id, "a.rs", "fn b() {}\n");
    let e = b.err(json!({"action": "chat_move", "id": id, "to": "global"}));
    assert_eq!(
        e["message"],
        "chat has pending file modifications \u{2014} apply or reject changes before moving"
    );
    assert!(env.chat_dir(&id).join("chat.json").is_file());
    b.ok(json!({"action": "output_delete", "path": "a.rs"}));
    b.ok(json!({"action": "chat_move", "id": id, "to": "global"}));
    let list = b.ok(json!({"action": "context_list"}))["files"].clone();
    assert_eq!(list[0]["readonly"], true);
    let stored =
        std::fs::read_to_string(env.home.join(".bb7/chats").join(&id).join("chat.json")).unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["context_files"][0]["readonly"], true);
}

// ----- point 13: final newlines ------------------------------------------------------

#[test]
fn taking_every_hunk_by_hand_is_a_full_merge_despite_the_missing_final_newline() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.rs", "fn a() {}\nfn b() {}\n");
    let (mut b, _) = env.with_chat();
    // Plugin-style context: the buffer's lines joined, no final newline.
    let content = "fn a() {}\nfn b() {}";
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": content}));
    fake.push_sse(response(
        "",
        "Renamed.",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "a.rs", "file_id": file_id("a.rs", content),
                              "old_string": "fn b() {}", "new_string": "fn c() {}"}]}),
        )],
    ));
    let end = b.turn("Rename b");
    assert_eq!(end["type"], "done", "{end}");
    let out = b.ok(json!({"action": "get_output_file", "path": "a.rs"}))["content"].clone();
    // The user takes every hunk in Vim's diff mode and writes the buffer.
    let merged = format!("{}\n", out.as_str().unwrap().trim_end_matches('\n'));
    env.write("a.rs", &merged);
    let r = b.ok(json!({"action": "diff_local_done", "path": "a.rs"}));
    assert_eq!(r["outcome"], "full");
    let statuses = b.ok(json!({"action": "get_file_statuses"}))["files"].clone();
    assert_eq!(statuses[0]["status"], "");
    assert_eq!(statuses[0]["has_output"], false);
}

#[test]
fn applying_an_edit_to_plugin_style_context_keeps_the_final_newline() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.rs", "fn a() {}\nfn b() {}\n");
    env.write("w.rs", "one\r\ntwo\r\n");
    let (mut b, _) = env.with_chat();
    let content = "fn a() {}\nfn b() {}";
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": content}));
    b.ok(json!({"action": "context_add", "path": "w.rs", "content": "one\ntwo"}));
    fake.push_sse(response(
        "",
        "Renamed.",
        vec![
            (
                "edit_file",
                json!({"edits": [{"path": "a.rs", "old_string": "fn b() {}", "new_string": "fn c() {}"}]}),
            ),
            (
                "edit_file",
                json!({"edits": [{"path": "w.rs", "old_string": "one", "new_string": "uno"}]}),
            ),
        ],
    ));
    let end = b.turn("Rename b");
    assert_eq!(end["type"], "done", "{end}");
    // The reference plugin writes `content` again: into a loaded buffer as lines (which
    // its `fileformat` writes back as CRLF), else to the file as it is. So `content`
    // has the disk file's final newline, and LF line ends as buffers hold them.
    let r = b.ok(json!({"action": "apply_file", "path": "a.rs"}));
    assert_eq!(env.read("a.rs"), "fn a() {}\nfn c() {}\n");
    assert_eq!(r["content"], "fn a() {}\nfn c() {}\n");
    let r = b.ok(json!({"action": "apply_file", "path": "w.rs"}));
    assert_eq!(env.read("w.rs"), "uno\r\ntwo\r\n");
    assert_eq!(r["content"], "uno\ntwo\n");
}

// ----- system notes as the reference plugin draws them --------------------------------

/// System notes bb7 writes (a cancelled or failed turn, `add_system_message`) carry
/// their text both as the reference's data has it (a `text` part) and as the top-level
/// `content` its plugin draws, in `chat.json` and in `chat_get`; fork warnings keep their
/// `context_event` parts.
#[test]
fn system_notes_carry_content_and_parts_and_fork_warnings_stay_parts() {
    let (env, fake) = fake_env(json!({"retry_backoff_ms": 1}));
    env.write("a.rs", "fn a() {}\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "fn a() {}"}));
    fake.push_sse(paused(
        &[text("Partial")],
        Duration::from_secs(10),
        " never",
    ));
    let rid = b.send(json!({"action": "send", "content": "first"}));
    b.wait_for_text(&rid, "Partial");
    b.ok(json!({"action": "cancel", "target_request_id": rid}));
    assert_eq!(b.reply_to(&rid)["code"], "cancelled");
    for _ in 0..4 {
        fake.push(http_error(500, "upstream exploded"));
    }
    assert_eq!(b.turn("second")["code"], "api");
    b.ok(json!({"action": "add_system_message", "message": "File changes failed to apply."}));

    let chat = b.ok(json!({"action": "chat_get"}));
    let notes: Vec<&Value> = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .collect();
    assert_eq!(notes.len(), 3, "{chat}");
    let texts: Vec<&str> = notes
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts[0], "Response aborted by user.");
    assert!(texts[1].contains("upstream exploded"), "{}", texts[1]);
    assert_eq!(texts[2], "File changes failed to apply.");
    for m in &notes {
        assert_eq!(m["parts"][0]["type"], "text", "{m}");
        assert_eq!(m["parts"][0]["content"], m["content"], "{m}");
        assert_eq!(m["parts"].as_array().unwrap().len(), 1, "{m}");
    }
    let stored: Value =
        serde_json::from_str(&env.read(&format!(".bb7/chats/{id}/chat.json"))).unwrap();
    let stored_notes: Vec<&Value> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .collect();
    assert_eq!(stored_notes.len(), 3, "{stored}");
    for m in &stored_notes {
        assert_eq!(m["parts"][0]["content"], m["content"], "{m}");
    }

    // A fork warning is a system message of context events, drawn from its parts.
    env.write("a.rs", "fn a() { changed }\n");
    let listed = |c: &Value| c["messages"].as_array().unwrap().clone();
    let first_user = listed(&chat)
        .iter()
        .position(|m| m["role"] == "user")
        .unwrap();
    let fork =
        b.ok(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": first_user}));
    b.ok(json!({"action": "chat_select", "id": fork["new_chat_id"]}));
    let forked = b.ok(json!({"action": "chat_get"}));
    let warning = listed(&forked)
        .into_iter()
        .find(|m| m["role"] == "system")
        .unwrap();
    assert_eq!(
        warning["parts"][0]["action"], "ForkWarningModified",
        "{warning}"
    );
    assert!(warning.get("content").is_none(), "{warning}");
}

/// The reference plugin hands any reply without `request_id` (but `title_updated`) to
/// its oldest waiting request, so a failed title (asked for, or generated after a
/// chat's first answer) is reported with the request that started it, never bare.
#[test]
fn a_failed_title_sends_nothing_a_client_could_take_for_another_reply() {
    let (env, fake) = fake_env(json!({"title_model": "fake/titler"}));
    let (mut b, id) = env.with_chat();
    // After the first answer of a chat with a default name (the fake answers title
    // requests nothing was queued for with HTTP 404).
    fake.push_sse(response("", "Sure.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "Please refactor the parser"}));
    assert_eq!(b.stream(&rid).pop().unwrap()["type"], "done");
    // Asked for with generate_title.
    let gid = b.send(json!({"action": "generate_title", "chat_id": id, "content": "whatever"}));
    assert_eq!(b.reply_to(&gid)["type"], "ok");
    // Both title requests reached the model and failed; the next reply on the wire is
    // the answer to the next request (the reference plugin hands any message it does
    // not wait for to its oldest waiting request).
    // A hang guard, not a speed bound: 6000 polls of 20 ms.
    let mut polls = 0;
    while fake
        .requests()
        .iter()
        .filter(|r| r.body["model"] == "fake/titler")
        .count()
        < 2
    {
        polls += 1;
        assert!(polls < 6000, "the titles were not asked for");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The title made locally from the first question comes as `title_updated` (which
    // the reference plugin handles apart) from the background, so it may come before
    // the next reply or after: every message before that reply is one of those.
    let next = b.send(json!({"action": "chat_get"}));
    let mut local: Vec<Value> = b.backlog.drain(..).collect();
    let m = loop {
        let m = b.recv().expect("a reply");
        if m["request_id"] == next.as_str() {
            break m;
        }
        local.push(m);
    };
    assert!(
        local
            .iter()
            .all(|m| m["type"] == "title_updated" && m.get("request_id").is_none()),
        "{local:?}"
    );
    assert_eq!(m["type"], "chat", "{m}");
    assert!(b.backlog.is_empty(), "{:?}", b.backlog);
    assert_eq!(
        env.chat_json(&id)["name"],
        "Refactor the parser",
        "the chat keeps its local title"
    );
}

// ----- the context block: read-only files first ---------------------------------------

/// Within the cache-first context block read-only files come before writable ones
/// (each group by path), and the order stays as first shown when a file's mode
/// changes later, so the next request still starts with the previous one.
#[test]
fn the_context_block_shows_read_only_files_first_and_keeps_its_order() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    env.write("a.rs", "fn a() {}\n");
    env.write("z.md", "# Zed notes\n");
    env.write("m.txt", "middle\n");
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "fn a() {}\n"}));
    b.ok(json!({"action": "context_add", "path": "z.md", "content": "# Zed notes\n", "readonly": true}));
    b.ok(json!({"action": "context_add", "path": "m.txt", "content": "middle\n"}));
    fake.push_sse(response("", "One.", vec![]));
    assert_eq!(b.turn("first")["type"], "done");
    b.ok(json!({"action": "context_set_readonly", "path": "m.txt", "readonly": true}));
    fake.push_sse(response("", "Two.", vec![]));
    assert_eq!(b.turn("second")["type"], "done");
    let bodies = fake.chat_bodies();
    let first = prompt_text(&bodies[0]);
    let at = |text: &str, needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle} not in {text}"))
    };
    let (z, a, m) = (
        at(&first, "path=\"z.md\""),
        at(&first, "path=\"a.rs\""),
        at(&first, "path=\"m.txt\""),
    );
    assert!(
        z < a && a < m,
        "read-only z.md, then a.rs and m.txt: {first}"
    );
    let second = prompt_text(&bodies[1]);
    let context_end = at(&first, "</context>");
    assert_eq!(
        &second[..context_end],
        &first[..context_end],
        "the context block is the same on the next request"
    );
}

/// A fork names its parent chat and the message it was forked at, in `chat.json` and
/// in `chat_get`; a chat that is not a fork names none.
#[test]
fn a_fork_names_its_parent_chat() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    fake.push_sse(response("", "One.", vec![]));
    assert_eq!(b.turn("first")["type"], "done");
    let chat = b.ok(json!({"action": "chat_get"}));
    assert!(chat.get("forked_from").is_none(), "{chat}");
    let fork = b.ok(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": 0}));
    let new_id = fork["new_chat_id"].as_str().unwrap().to_owned();
    let forked = b.ok(json!({"action": "chat_get"}));
    assert_eq!(forked["id"], new_id.as_str());
    assert_eq!(
        forked["forked_from"],
        json!({"chat_id": id, "message_index": 0})
    );
    b.ok(json!({"action": "shutdown"}));
    assert_eq!(
        env.chat_json(&new_id)["forked_from"],
        json!({"chat_id": id, "message_index": 0})
    );
}

/// A system note the reference wrote (its text as parts only) is sent with its
/// `content` as well, and keeps both in `chat.json` from the next save on.
#[test]
fn a_reference_system_note_gets_its_content() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "shutdown"}));
    b.close();
    let path = env.chat_dir(&id).join("chat.json");
    let mut chat: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    chat["messages"] = json!([{"role": "system", "timestamp": "2026-01-01T00:00:00Z",
        "parts": [{"type": "text", "content": "Written by the reference."}]}]);
    std::fs::write(&path, chat.to_string()).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    let got = b.ok(json!({"action": "chat_get"}));
    let note = &got["messages"][0];
    assert_eq!(note["content"], "Written by the reference.", "{got}");
    assert_eq!(note["parts"][0]["content"], "Written by the reference.");
    b.ok(json!({"action": "save_draft", "draft": "x"}));
    b.ok(json!({"action": "shutdown"}));
    let stored = env.chat_json(&id);
    assert_eq!(
        stored["messages"][0]["content"],
        "Written by the reference."
    );
    assert_eq!(stored["messages"][0]["parts"][0]["type"], "text");
}
