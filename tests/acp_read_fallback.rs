//! Reads of the user's file through the editor (`fs/read_text_file`) under `bb7 acp`
//! never take the disk's text for the editor's without a word (docs/PROTOCOL.md,
//! "bb7 acp"): the old text of a proposal over a buffer too large to send refuses the
//! proposal by name (the file, the limit), and a read-back after a write that fails
//! is told to the user in an agent message. The session goes on; a permission the
//! client never answers cannot hold a prompt past its cancel.

mod acp_support;
mod common;

use acp_support::*;
use agent_client_protocol::v1::schema::CancelNotification;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

/// 70 MB of text: over the 64 MiB line limit however it is escaped.
fn huge() -> String {
    "abcdefghi\n".repeat(7_000_000)
}

/// The editor saves what it is given to disk, leaving its buffer as it was.
fn to_disk(text: &str) -> String {
    text.to_owned()
}

#[test]
fn a_proposal_over_a_buffer_over_the_line_limit_is_refused_by_name() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "alpha\nbeta\n");
    let a = env.project.join("a.txt");
    // The model writes a.txt whole without having seen it: the proposal must show
    // the text it replaces, the editor's.
    fake.push_sse(response(
        "",
        "Done.",
        vec![("write_file", json!({"path": "a.txt", "content": "new\n"}))],
    ));
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        ed.buffer(&a, &huge());
        let _ = prompt(&cx, &sid, vec![say("Rewrite a.txt")]).await;
        let seen = format!("{:?}", ed.updates(&sid));
        assert!(
            seen.contains("Not proposed: the editor's text of a.txt could not be read")
                && seen.contains("64 MiB line limit"),
            "the refusal does not name the file and the limit: {}",
            &seen[..seen.len().min(4000)]
        );
        assert!(
            !seen.contains("alpha"),
            "the disk's text was shown as the editor's"
        );
        assert!(
            ed.seen.lock().unwrap().permissions.is_empty(),
            "a change was proposed"
        );
        // The session goes on.
        fake.push_sse(response("", "Fine.", vec![]));
        prompt(&cx, &sid, vec![say("Thanks")]).await?;
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), "alpha\nbeta\n", "the disk was written");
}

#[test]
fn a_read_back_that_fails_after_a_write_is_told_to_the_user() {
    let (env, fake) = fake_env(json!({}));
    let n = env.project.join("n.txt");
    fake.push_sse(response(
        "",
        "Done.",
        vec![("write_file", json!({"path": "n.txt", "content": "first\n"}))],
    ));
    let ed = Editor::new(true);
    // The editor saves the new file to disk, but its buffer of n.txt (a scratch
    // buffer of that name) is too large to send back.
    ed.script(|s| s.write_rewrite = Some(to_disk));
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        ed.buffer(&n, &huge());
        let _ = prompt(&cx, &sid, vec![say("Create n.txt")]).await;
        let said = ed.text(&sid, "agent_message_chunk");
        assert!(
            said.contains("wrote n.txt through the editor but could not read it back")
                && said.contains("64 MiB line limit"),
            "the failed read-back was not told: {said}"
        );
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("n.txt"), "first\n");
}

/// A client that never answers `session/request_permission` cannot hold the prompt
/// past its `session/cancel`; the change stays undecided, nothing is written.
#[test]
fn cancel_ends_a_prompt_whose_permission_the_client_never_answers() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "alpha\n");
    fake.push_sse(response(
        "",
        "Done.",
        vec![("write_file", json!({"path": "a.txt", "content": "new\n"}))],
    ));
    let ed = Editor::new(true);
    ed.decide("never");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let s = sid.clone();
        let (r, _) = tokio::join!(prompt(&cx, &sid, vec![say("Rewrite a.txt")]), async {
            until(|| !ed.seen.lock().unwrap().permissions.is_empty()).await;
            cx.send_notification(CancelNotification::new(s.clone()))
                .unwrap();
        });
        assert_eq!(stop(&r?), "cancelled");
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), "alpha\n", "the disk was written");
}
