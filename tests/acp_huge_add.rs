//! `/add` of a buffer too large to send over `bb7 acp` (docs/PROTOCOL.md, "bb7 acp"): a
//! 70 MB buffer, which the editor's `fs/read_text_file` answer carries on a line over
//! the 64 MiB line limit, is refused at once by name, the disk's text is never taken
//! for it, and the session goes on; a 70 MB file on disk (a client without `fs`) is
//! refused the same way.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use serde_json::json;

/// 70 MB of text: over the 64 MiB line limit however it is escaped.
fn huge() -> String {
    "abcdefghi\n".repeat(7_000_000)
}

#[test]
fn adding_a_70_mb_buffer_is_refused_by_name_and_the_session_goes_on() {
    let (env, _fake) = fake_env(json!({}));
    env.write("big.txt", "small on disk\n");
    env.write("a.txt", "a\n");
    let ed = Editor::new(true);
    ed.buffer(&env.project.join("big.txt"), &huge());
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        let refused = prompt(&cx, &sid, vec![say("/add big.txt")]).await;
        let e = refused.expect_err("a 70 MB buffer is not added");
        let msg = e.to_string();
        assert!(
            msg.contains("big.txt is too large to add") && msg.contains("64 MiB line limit"),
            "{msg}"
        );
        prompt(&cx, &sid, vec![say("/add a.txt")]).await?;
        assert!(ed.text(&sid, "agent_message_chunk").contains("a.txt"));
        Ok(())
    }))
    .unwrap();
    let listed = env.chat_json(&sid)["context_files"].to_string();
    assert!(listed.contains("a.txt"), "{listed}");
    assert!(
        !listed.contains("big.txt"),
        "the disk's text was taken: {listed}"
    );
}

#[test]
fn adding_a_70_mb_file_from_disk_is_refused_by_name() {
    let (env, _fake) = fake_env(json!({}));
    env.write("big.txt", &huge());
    env.write("a.txt", "a\n");
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let e = prompt(&cx, &sid, vec![say("/add big.txt")])
            .await
            .expect_err("a 70 MB file is not added");
        let msg = e.to_string();
        assert!(
            msg.contains("big.txt") && msg.contains("too large"),
            "{msg}"
        );
        prompt(&cx, &sid, vec![say("/add a.txt")]).await?;
        assert!(ed.text(&sid, "agent_message_chunk").contains("a.txt"));
        Ok(())
    }))
    .unwrap();
}
