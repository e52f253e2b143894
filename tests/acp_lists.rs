//! `bb7 acp`'s `session/list` and reload as a user meets them after a restart: a chat
//! opened and left empty is not listed, `updatedAt` is the last activity, and a reload
//! keeps consecutive user messages apart.

mod acp_support;
mod common;

use acp_support::*;
use agent_client_protocol::v1::schema::{ListSessionsRequest, LoadSessionRequest};
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

#[test]
fn an_empty_chat_is_not_listed_and_updated_at_is_the_last_activity() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "Hi.", vec![]));
    let ed = Editor::new(false);
    let mut used = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        used = new_session(&cx, &env.project).await?;
        // The editor opens another chat window and closes it without a word.
        new_session(&cx, &env.project).await?;
        prompt(&cx, &used, vec![say("Hello")]).await?;
        Ok(())
    }))
    .unwrap();
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let list = cx
            .send_request(ListSessionsRequest::new().cwd(env.project.clone()))
            .block_task()
            .await?;
        let list = serde_json::to_value(&list).unwrap();
        let sessions = list["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "{list}");
        assert_eq!(sessions[0]["sessionId"], used.as_str());
        let chat = env.chat_json(&used);
        let last = chat["messages"].as_array().unwrap().last().unwrap()["timestamp"].clone();
        assert_eq!(sessions[0]["updatedAt"], last, "{list}");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn a_reload_keeps_consecutive_user_messages_apart() {
    let (env, fake) = fake_env(json!({}));
    fake.push(http_error(402, "Insufficient credits on this key"));
    fake.push_sse(response("", "Second answer.", vec![]));
    let ed = Editor::new(false);
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        assert!(prompt(&cx, &sid, vec![say("First")]).await.is_err());
        prompt(&cx, &sid, vec![say("Second")]).await?;
        Ok(())
    }))
    .unwrap();
    let history = env.history(&sid);
    let users: Vec<&String> = history
        .iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(users.len(), 2, "{history:?}");
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        cx.send_request(LoadSessionRequest::new(sid.clone(), env.project.clone()))
            .block_task()
            .await?;
        let kinds = ed.kinds(&sid);
        let texts: Vec<Value> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "user_message_chunk")
            .map(|u| u["content"]["text"].clone())
            .collect();
        assert_eq!(texts, [json!("First"), json!("\n\nSecond")], "{kinds:?}");
        // Each message its own messageId, so a client that reads it keeps them apart.
        let ids: Vec<Value> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "user_message_chunk")
            .map(|u| u["messageId"].clone())
            .collect();
        assert!(ids[0].is_string() && ids[0] != ids[1], "{ids:?}");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn close_lets_an_empty_chat_go_resume_reopens_without_replay_and_delete_deletes() {
    use agent_client_protocol::v1::schema::{
        CloseSessionRequest, DeleteSessionRequest, ResumeSessionRequest,
    };
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "Hi.", vec![]));
    fake.push_sse(response("", "Again.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, init| {
        let caps = serde_json::to_value(&init).unwrap()["agentCapabilities"]["sessionCapabilities"]
            .clone();
        assert!(
            caps["close"].is_object() && caps["resume"].is_object() && caps["delete"].is_object(),
            "{caps}"
        );
        let empty = new_session(&cx, &env.project).await?;
        let used = new_session(&cx, &env.project).await?;
        prompt(&cx, &used, vec![say("Hello")]).await?;
        cx.send_request(CloseSessionRequest::new(empty.clone()))
            .block_task()
            .await?;
        assert!(!env.chat_dir(&empty).exists(), "the empty chat is gone");
        cx.send_request(CloseSessionRequest::new(used.clone()))
            .block_task()
            .await?;
        assert!(env.chat_dir(&used).is_dir(), "a chat with messages stays");
        assert!(prompt(&cx, &used, vec![say("Still?")]).await.is_err());
        ed.clear();
        cx.send_request(ResumeSessionRequest::new(used.clone(), env.project.clone()))
            .block_task()
            .await?;
        assert!(
            !ed.kinds(&used).iter().any(|k| k == "user_message_chunk"),
            "resume replays nothing"
        );
        prompt(&cx, &used, vec![say("Again")]).await?;
        cx.send_request(DeleteSessionRequest::new(used.clone()))
            .block_task()
            .await?;
        assert!(!env.chat_dir(&used).exists(), "deleted");
        let e = cx
            .send_request(DeleteSessionRequest::new(used.clone()))
            .block_task()
            .await
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32002, "{e:?}");
        Ok(())
    }))
    .unwrap();
}
