//! `bb7 acp`: a `session/prompt` sent while another prompt of the session runs is
//! queued, not refused: it starts when the running one ends and is answered in turn,
//! with the answer before it in the history; a `session/cancel` meanwhile cancels the
//! running prompt and the queued one, which never reaches the model. The fake model
//! pauses in the middle of the first answer: room for the second prompt to arrive
//! while it runs (the test waits for the first answer's first words before sending
//! it), no assertion counts time.

mod acp_support;
mod common;

use std::time::Duration;

use acp_support::*;
use agent_client_protocol::v1::schema::CancelNotification;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

fn slow(first: &str, last: &str, pause: u64) -> Vec<Step> {
    vec![
        role(),
        text(first),
        Step::Sleep(Duration::from_secs(pause)),
        text(last),
        finish("stop"),
        done(),
    ]
}

#[test]
fn a_prompt_sent_while_one_runs_is_answered_after_it() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(slow("First part. ", "First end.", 3));
    fake.push_sse(response("", "Second answer.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let (first, second) = tokio::join!(prompt(&cx, &sid, vec![say("first question")]), async {
            until(|| ed.text(&sid, "agent_message_chunk").contains("First part.")).await;
            prompt(&cx, &sid, vec![say("second question")]).await
        });
        assert_eq!(stop(&first?), "end_turn");
        assert_eq!(stop(&second?), "end_turn");
        assert_eq!(
            ed.text(&sid, "agent_message_chunk"),
            "First part. First end.Second answer."
        );
        Ok(())
    }))
    .unwrap();
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    let second = prompt_text(&bodies[1]);
    assert!(second.contains("First end."), "{second}");
    assert!(second.contains("second question"), "{second}");
}

#[test]
fn cancel_stops_the_running_prompt_and_the_queued_one() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(slow("Long part. ", "Never shown.", 30));
    fake.push_sse(response("", "After.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let (first, second) = tokio::join!(prompt(&cx, &sid, vec![say("first")]), async {
            until(|| ed.text(&sid, "agent_message_chunk").contains("Long part.")).await;
            let queued = prompt(&cx, &sid, vec![say("queued")]);
            let (r, ()) = tokio::join!(queued, async {
                // The queued prompt is on its way before the cancel (requests and
                // notifications reach bb7 in the order sent).
                tokio::task::yield_now().await;
                cx.send_notification(CancelNotification::new(sid.clone()))
                    .unwrap();
            });
            r
        });
        assert_eq!(stop(&first?), "cancelled");
        assert_eq!(stop(&second?), "cancelled");
        // The session goes on: the next prompt is answered.
        let r = prompt(&cx, &sid, vec![say("after")]).await?;
        assert_eq!(stop(&r), "end_turn");
        Ok(())
    }))
    .unwrap();
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "the queued prompt reached the model");
    assert!(!prompt_text(&bodies[1]).contains("queued"));
}
