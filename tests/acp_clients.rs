//! `bb7 acp` with what real editor clients send: the prompts codecompanion.nvim
//! 19.22.0 and avante.nvim built (tests/fixtures/acp-clients/, replayed as recorded,
//! paths moved into the test's project) and their file calls' quirks. Context in every
//! client's form, slash commands only from typed text, applies that keep the user's
//! bytes.

mod acp_support;
mod common;

use std::path::Path;

use acp_support::*;
use agent_client_protocol::v1::schema::ContentBlock;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

/// The file as the recorded sessions found it.
const A: &str = "alpha\nbeta\ngamma\ndelta\n";

/// The `session/prompt` blocks a client sent in recording `file`, in order, with the
/// recorded project path replaced by `project`.
fn recorded_prompts(file: &str, project: &Path) -> Vec<Vec<ContentBlock>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/acp-clients")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["dir"] == "client->agent" && l["msg"]["method"] == "session/prompt")
        .map(|l| {
            let raw = l["msg"]["params"]["prompt"]
                .to_string()
                .replace("/home/user/project", project.to_str().unwrap());
            serde_json::from_str(&raw).unwrap()
        })
        .collect()
}

/// The typed text of the last user message of a model request: inside bb7's message
/// fence, after its "Files in context" line.
fn last_user(body: &Value) -> String {
    let raw = last_user_raw(body);
    let inner = match raw.rfind("<message role=\"user\"") {
        Some(i) => {
            let rest = &raw[i..];
            let start = rest.find(">\n").map(|j| j + 2).unwrap_or(0);
            let end = rest.rfind("\n</message").unwrap_or(rest.len());
            rest[start..end].to_owned()
        }
        None => raw,
    };
    match inner.strip_prefix("Files in context:") {
        Some(rest) => rest
            .split_once("\n\n")
            .map(|(_, t)| t)
            .unwrap_or("")
            .to_owned(),
        None => inner,
    }
}

/// The whole text of the last user message of a model request.
fn last_user_raw(body: &Value) -> String {
    let m = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[test]
fn codecompanions_shared_file_is_context_the_model_may_edit() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    let prompts = recorded_prompts("codecompanion-19.22.0-session.jsonl", &env.project);
    // "Sharing the following file as context: …/a.txt" + "What is in file …?"
    let shared = prompts[1].clone();
    fake.push_sse(response("", "Four lines.", vec![]));
    writes(&fake, "a.txt", "alpha\nBETA\ngamma\ndelta\n");
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, shared).await?;
        let first = &ed.updates(&sid)[1];
        assert_eq!(first["sessionUpdate"], "agent_message_chunk", "{first}");
        assert_eq!(first["content"]["text"], "Context: a.txt (new)\n\n");
        prompt(&cx, &sid, vec![say("Uppercase beta in a.txt")]).await?;
        let calls = of_kind(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 1, "a proposal, not a failed edit: {calls:?}");
        assert_eq!(calls[0]["content"][0]["oldText"], A);
        Ok(())
    }))
    .unwrap();
    let bodies = fake.chat_bodies();
    let sent = prompt_text(&bodies[0]);
    assert!(sent.contains("gamma"), "the file reached the model");
    let asked = last_user(&bodies[0]);
    assert!(
        !asked.contains("Sharing the following file"),
        "the context line is no message: {asked}"
    );
    assert!(asked.contains("What is in file"), "{asked}");
    let writes = ed.seen.lock().unwrap().writes.clone();
    assert_eq!(
        writes,
        vec![(
            env.project.join("a.txt"),
            "alpha\nBETA\ngamma\ndelta\n".to_owned()
        )]
    );
}

#[test]
fn codecompanions_attachment_of_a_changed_buffer_snapshots_the_file_again() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    let prompts = recorded_prompts("codecompanion-19.22.0-session.jsonl", &env.project);
    // `<attachment filepath=…/a.txt buffer_number="1">…diff…</attachment>` + the ask.
    let attachment = prompts[4].clone();
    fake.push_sse(response("", "Seen.", vec![]));
    let ed = Editor::new(true);
    ed.buffer(
        &env.project.join("a.txt"),
        "alpha\nbeta\ngamma\ndelta (unsaved)\n",
    );
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, attachment).await?;
        assert!(
            ed.text(&sid, "agent_message_chunk")
                .starts_with("Context: a.txt (new)\n\n")
        );
        Ok(())
    }))
    .unwrap();
    let body = fake.chat_bodies().pop().unwrap();
    assert!(
        prompt_text(&body).contains("delta (unsaved)"),
        "the buffer's text"
    );
    let asked = last_user(&body);
    assert!(!asked.contains("<attachment"), "{asked}");
    assert_eq!(asked.trim(), "Uppercase beta in a.txt");
}

#[test]
fn avantes_repeated_messages_are_sent_once_and_its_read_keeps_the_final_newline() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    let prompts = recorded_prompts("avante-session.jsonl", &env.project);
    fake.push_sse(response("", "Hello.", vec![]));
    writes(&fake, "a.txt", "alpha\nBETA\ngamma\ndelta\n");
    let ed = Editor::new(true);
    ed.script(|s| s.read_drops_final_newline = true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        // [a.txt link, <previous_user_message>Say hello, <system_context>…]
        prompt(&cx, &sid, prompts[0].clone()).await?;
        // [a.txt link, <previous_user_message>Uppercase beta in a.txt, …Say hello, …]
        prompt(&cx, &sid, prompts[2].clone()).await?;
        let said = ed.text(&sid, "agent_message_chunk");
        assert_eq!(
            said.matches("Context: a.txt").count(),
            1,
            "the same file linked again is not listed again: {said}"
        );
        let calls = of_kind(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(
            calls[0]["content"][0]["oldText"], A,
            "the snapshot has the final newline the client's read dropped"
        );
        Ok(())
    }))
    .unwrap();
    let bodies = fake.chat_bodies();
    assert_eq!(last_user(&bodies[0]).trim(), "Say hello");
    assert_eq!(last_user(&bodies[1]).trim(), "Uppercase beta in a.txt");
    let all = prompt_text(&bodies[1]);
    assert!(
        !all.contains("previous_user_message") && !all.contains("system_context"),
        "{all}"
    );
    assert_eq!(
        all.matches("Say hello").count(),
        1,
        "the held message is not sent twice: {all}"
    );
    let writes = ed.seen.lock().unwrap().writes.clone();
    assert_eq!(
        writes,
        vec![(
            env.project.join("a.txt"),
            "alpha\nBETA\ngamma\ndelta\n".to_owned()
        )],
        "the final newline the client's read dropped is kept"
    );
}

#[test]
fn avantes_selection_is_a_section_and_a_file_outside_is_refused_by_name() {
    let (env, fake) = fake_env(json!({}));
    env.write("b.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    fake.push_sse(response("", "A function.", vec![]));
    let ed = Editor::new(true);
    let sel = format!(
        "<selected_code>\n<path>{}</path>\n<snippet>fn b() {{}}\nfn c() {{}}</snippet>\n</selected_code>",
        env.project.join("b.rs").display()
    );
    let outside = env.home.join("secret.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say(&sel), say("Explain")]).await?;
        assert!(
            ed.text(&sid, "agent_message_chunk")
                .starts_with("Context: b.rs:2\u{2013}3\n\n"),
            "{}",
            ed.text(&sid, "agent_message_chunk")
        );
        let e = prompt(
            &cx,
            &sid,
            vec![
                say(&format!(
                    "Sharing the following file as context: {}",
                    outside.display()
                )),
                say("Read it"),
            ],
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("secret.txt") && e.message.contains("outside"));
        Ok(())
    }))
    .unwrap();
    let body = fake.chat_bodies().pop().unwrap();
    assert!(prompt_text(&body).contains("fn b() {}\nfn c() {}"));
    assert_eq!(last_user(&body).trim(), "Explain");
    assert_eq!(
        fake.chat_bodies().len(),
        1,
        "the refused prompt asked nothing"
    );
}

#[test]
fn zed_mentions_are_sections_or_refused_never_fake_files() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    fake.push_sse(response("", "Seen.", vec![]));
    let ed = Editor::new(false);
    let a = env.project.join("src/a.rs");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let symbol = format!("{}?symbol=b#L2:2", file_uri(&a));
        let column = format!("{}?column=3", file_uri(&a));
        prompt(
            &cx,
            &sid,
            vec![link(&symbol, "b"), link(&column, "a.rs"), say("Explain b")],
        )
        .await?;
        assert!(
            ed.text(&sid, "agent_message_chunk")
                .starts_with("Context: src/a.rs:2, src/a.rs (new)\n\n"),
            "{}",
            ed.text(&sid, "agent_message_chunk")
        );
        let dir = file_uri(&env.project.join("src"));
        let e = prompt(&cx, &sid, vec![link(&dir, "src"), say("All of it")])
            .await
            .unwrap_err();
        assert!(e.message.contains("src is a directory"), "{}", e.message);
        Ok(())
    }))
    .unwrap();
    assert!(!env.project.join("src/a.rs?symbol=b").exists());
    let ctx = std::fs::read_to_string(env.project.join(".bb7/context.json")).unwrap_or_default();
    assert!(
        !ctx.contains("?symbol") && !ctx.contains("?column"),
        "{ctx}"
    );
}

#[test]
fn slash_commands_come_only_from_typed_text_and_blocks_are_separated() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    fake.push_sse(response("", "It is a list.", vec![]));
    let ed = Editor::new(true);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        // A link named like a command is context, and the typed text goes to the model.
        prompt(
            &cx,
            &sid,
            vec![link(&file_uri(&a), "/undo"), say("What is this?")],
        )
        .await?;
        // The client's context block first, the typed command last: a command.
        prompt(
            &cx,
            &sid,
            vec![
                say(&format!(
                    "Sharing the following file as context: {}",
                    a.display()
                )),
                say("/tokens"),
            ],
        )
        .await?;
        assert!(
            ed.text(&sid, "agent_message_chunk")
                .contains("The next request sends about"),
            "{}",
            ed.text(&sid, "agent_message_chunk")
        );
        Ok(())
    }))
    .unwrap();
    assert_eq!(fake.chat_bodies().len(), 1, "the command asked no model");
    let asked = last_user(&fake.chat_bodies()[0]);
    assert_eq!(asked.trim(), "What is this?");
    let (env2, fake2) = fake_env(json!({}));
    fake2.push_sse(response("", "Ok.", vec![]));
    let ed2 = Editor::new(false);
    rt().block_on(run(&env2.home, &env2.project, &ed2, async |cx, _| {
        let sid = new_session(&cx, &env2.project).await?;
        prompt(&cx, &sid, vec![say("Count slowly"), say("Still there?")]).await?;
        Ok(())
    }))
    .unwrap();
    let asked = last_user(&fake2.chat_bodies()[0]);
    assert_eq!(asked.trim(), "Count slowly\n\nStill there?", "not glued");
}

#[test]
fn an_apply_keeps_the_final_newline_a_clients_read_drops() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    writes(&fake, "a.txt", "alpha\nbeta\ngamma\nDELTA\n");
    let ed = Editor::new(true);
    ed.script(|s| s.read_drops_final_newline = true);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![resource(&file_uri(&a), A), say("Uppercase delta")],
        )
        .await?;
        let done = of_kind(&ed, &sid, "tool_call_update");
        assert_eq!(done.last().unwrap()["status"], "completed", "{done:?}");
        Ok(())
    }))
    .unwrap();
    let writes = ed.seen.lock().unwrap().writes.clone();
    assert_eq!(writes, vec![(a, "alpha\nbeta\ngamma\nDELTA\n".to_owned())]);
}

/// avante's prompt: its repeated messages, newest first, and its note.
fn avante(messages: &[&str]) -> Vec<ContentBlock> {
    let mut blocks: Vec<ContentBlock> = messages
        .iter()
        .map(|m| {
            say(&format!(
                "<previous_user_message>{m}</previous_user_message>"
            ))
        })
        .collect();
    blocks.push(say(&format!(
        "<system_context>Continuing from previous session with {} recent user messages</system_context>",
        messages.len()
    )));
    blocks
}

#[test]
fn an_avante_command_runs_once_though_avante_repeats_it() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "Hello.", vec![]));
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, avante(&["/tokens"])).await?;
        assert!(
            ed.text(&sid, "agent_message_chunk")
                .starts_with("The next request sends about")
        );
        ed.clear();
        prompt(&cx, &sid, avante(&["Say hello", "/tokens"])).await?;
        assert_eq!(ed.text(&sid, "agent_message_chunk"), "Hello.");
        Ok(())
    }))
    .unwrap();
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1);
    let all = prompt_text(&bodies[0]);
    assert!(!all.contains("/tokens"), "{all}");
    assert_eq!(last_user(&bodies[0]).trim(), "Say hello");
}
