//! `bb7 acp` sessions over time: cancel keeps the partial answer, a loaded session
//! replays its chat after a restart, two sessions prompt at once.

mod acp_support;
mod common;

use std::time::Duration;

use acp_support::*;
use agent_client_protocol::v1::schema::{CancelNotification, LoadSessionRequest};
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn cancel_stops_the_stream_and_keeps_the_partial_answer() {
    let (env, fake) = fake_env(json!({}));
    // The stall outlasts any test: only the cancel ends this stream.
    fake.push_sse(paused(&[text("partial ")], Duration::from_secs(60), "rest"));
    let ed = Editor::new(false);
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        let s = sid.clone();
        let (r, _) = tokio::join!(prompt(&cx, &sid, vec![say("Tell me")]), async {
            until(|| ed.text(&s, "agent_message_chunk").contains("partial")).await;
            cx.send_notification(CancelNotification::new(s.clone()))
                .unwrap();
        });
        assert_eq!(stop(&r?), "cancelled");
        Ok(())
    }))
    .unwrap();
    let history = env.history(&sid);
    assert!(
        history
            .iter()
            .any(|(role, t)| role == "assistant" && t.contains("partial")),
        "{history:?}"
    );
    assert!(!history.iter().any(|(_, t)| t.contains("rest")));
}

#[test]
fn a_session_loads_after_a_restart_with_its_history_replayed() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "one\n");
    fake.push_sse(response(
        "Hmm.",
        "Hi there.",
        vec![("write_file", json!({"path": "a.txt", "content": "ONE\n"}))],
    ));
    fake.push_sse(response("", "Again.", vec![]));
    let ed = Editor::new(false);
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        let uri = file_uri(&env.project.join("a.txt"));
        prompt(&cx, &sid, vec![say("Hello"), link(&uri, "a.txt")]).await?;
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), "ONE\n");
    // A new process: nothing of the first is left but the chat.
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        cx.send_request(LoadSessionRequest::new(sid.clone(), env.project.clone()))
            .block_task()
            .await?;
        // The replay came before the answer.
        assert_eq!(ed.text(&sid, "user_message_chunk"), "Hello");
        assert_eq!(ed.text(&sid, "agent_thought_chunk"), "Hmm.");
        assert_eq!(ed.text(&sid, "agent_message_chunk"), "Hi there.");
        let calls: Vec<_> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "edit")
            .collect();
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(
            calls[0]["status"], "completed",
            "applied before the restart"
        );
        let kinds = ed.kinds(&sid);
        let user = kinds
            .iter()
            .position(|k| k == "user_message_chunk")
            .unwrap();
        let agent = kinds
            .iter()
            .position(|k| k == "agent_message_chunk")
            .unwrap();
        assert!(user < agent);
        ed.clear();
        let r = prompt(&cx, &sid, vec![say("And now?")]).await?;
        assert_eq!(stop(&r), "end_turn");
        assert_eq!(ed.text(&sid, "agent_message_chunk"), "Again.");
        let e = cx
            .send_request(LoadSessionRequest::new("no-such-chat", env.project.clone()))
            .block_task()
            .await
            .expect_err("unknown session");
        assert!(i32::from(e.code) != 0);
        Ok(())
    }))
    .unwrap();
    let sent = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(
        sent.contains("Hello") && sent.contains("Hi there."),
        "the history went along"
    );
}

#[test]
fn two_sessions_prompt_at_once() {
    let (env, fake) = fake_env(json!({}));
    // The first request to arrive stalls until it is cancelled; the second answers.
    fake.push_sse(paused(&[text("slow ")], Duration::from_secs(60), "answer"));
    fake.push_sse(response("", "quick answer", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let a = new_session(&cx, &env.project).await?;
        let b = new_session(&cx, &env.project).await?;
        assert_ne!(a, b);
        let (ra, rb) = tokio::join!(prompt(&cx, &a, vec![say("first")]), async {
            until(|| ed.text(&a, "agent_message_chunk") == "slow ").await;
            // Session b answers while session a is still streaming.
            let r = prompt(&cx, &b, vec![say("second")]).await;
            cx.send_notification(CancelNotification::new(a.clone()))
                .unwrap();
            r
        });
        assert_eq!(stop(&rb?), "end_turn");
        assert_eq!(stop(&ra?), "cancelled");
        assert_eq!(ed.text(&a, "agent_message_chunk"), "slow ");
        assert_eq!(ed.text(&b, "agent_message_chunk"), "quick answer");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn in_ask_mode_each_read_asks_for_permission() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/lib.rs", "pub fn a() {}\n");
    reads_then_answers(&fake, "src/lib.rs", None, "It defines a.");
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        set_tools(&cx, &sid, "ask").await?;
        let r = prompt(&cx, &sid, vec![say("What is in lib.rs?")]).await?;
        assert_eq!(stop(&r), "end_turn");
        let perms = ed.seen.lock().unwrap().permissions.clone();
        assert_eq!(perms.len(), 1, "{perms:?}");
        assert_eq!(perms[0]["toolCall"]["kind"], "read");
        let steps: Vec<_> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "read")
            .collect();
        assert_eq!(steps.len(), 1, "{steps:?}");
        assert_eq!(steps[0]["toolCallId"], perms[0]["toolCall"]["toolCallId"]);
        let ended: Vec<_> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "tool_call_update")
            .collect();
        assert_eq!(ended.len(), 1, "{ended:?}");
        assert_eq!(ended[0]["toolCallId"], steps[0]["toolCallId"]);
        assert_eq!(ended[0]["status"], "completed");
        assert_eq!(ed.text(&sid, "agent_message_chunk"), "It defines a.");
        Ok(())
    }))
    .unwrap();
    let bodies = fake.chat_bodies();
    assert!(
        bodies[1].to_string().contains("pub fn a() {}"),
        "the read ran"
    );
}

#[test]
fn slash_commands_add_drop_tokens_and_undo() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "one\n");
    fake.push_sse(response(
        "",
        "Done.",
        vec![("write_file", json!({"path": "a.txt", "content": "ONE\n"}))],
    ));
    let ed = Editor::new(false);
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("/add a.txt")]).await?;
        assert!(ed.text(&sid, "agent_message_chunk").contains("a.txt"));
        prompt(&cx, &sid, vec![say("/tokens")]).await?;
        assert!(ed.text(&sid, "agent_message_chunk").contains("tokens"));
        prompt(&cx, &sid, vec![say("Shout")]).await?;
        assert_eq!(env.read("a.txt"), "ONE\n");
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(env.read("a.txt"), "one\n", "rolled back");
        prompt(&cx, &sid, vec![say("/drop a.txt")]).await?;
        Ok(())
    }))
    .unwrap();
    assert_eq!(fake.chat_bodies().len(), 1, "only Shout went to the model");
    assert!(
        env.chat_json(&sid)["context_files"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_title_made_for_the_chat_reaches_the_client() {
    let (env, fake) = fake_env(json!({"title_model": "fake/titler"}));
    fake.push_sse(response("", "Sure.", vec![]));
    fake.push_completion("Parser refactor");
    fake.push_sse(response("", "Again.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Please refactor the parser")]).await?;
        let named = || env.chat_json(&sid)["name"] == "Parser refactor";
        until(named).await;
        prompt(&cx, &sid, vec![say("more")]).await?;
        let info: Vec<_> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "session_info_update")
            .collect();
        assert_eq!(info.last().unwrap()["title"], "Parser refactor", "{info:?}");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn a_title_reaches_the_client_when_it_is_made_without_another_prompt() {
    let (env, fake) = fake_env(json!({"title_model": "fake/titler"}));
    fake.push_sse(response("", "Sure.", vec![]));
    fake.push_completion("Parser refactor");
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Please refactor the parser")]).await?;
        // No further prompt: the title is sent when bb7 makes it.
        let titled = || {
            ed.updates(&sid).iter().any(|u| {
                u["sessionUpdate"] == "session_info_update" && u["title"] == "Parser refactor"
            })
        };
        until(titled).await;
        Ok(())
    }))
    .unwrap();
}
