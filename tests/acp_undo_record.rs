//! The record of `/undo`'s rollbacks into an editor's unsaved buffers lives in the
//! chat's checkpoints, not in the process: after `session/load` in a new `bb7 acp`,
//! `/undo` goes on to the apply before the one already undone, never back to it.

mod acp_support;
mod common;

use std::path::Path;

use acp_support::*;
use common::fake_env;
use serde_json::json;

const A: &str = "alpha\nbeta\n";
const B: &str = "one\ntwo\n";

#[test]
fn undo_after_a_restart_goes_on_to_the_apply_before_the_one_undone_in_a_buffer() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    env.write("b.txt", B);
    writes(&fake, "a.txt", "ALPHA\nbeta\n");
    writes(&fake, "b.txt", "ONE\ntwo\n");
    // The editor outlives the agent: its buffers take the applies, never saved.
    let ed = Editor::new(true);
    let (a, b) = (env.project.join("a.txt"), env.project.join("b.txt"));
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![resource(&file_uri(&a), A), say("Change a")]).await?;
        prompt(&cx, &sid, vec![resource(&file_uri(&b), B), say("Change b")]).await?;
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(
            ed.text(&sid, "agent_message_chunk"),
            "Rolled back: restored b.txt"
        );
        Ok(())
    }))
    .unwrap();
    let buffer = |p: &Path| ed.script.lock().unwrap().buffers.get(p).cloned();
    assert_eq!(buffer(&b).as_deref(), Some(B));
    assert_eq!(buffer(&a).as_deref(), Some("ALPHA\nbeta\n"));
    assert_eq!((env.read("a.txt"), env.read("b.txt")), (A.into(), B.into()));
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = load_latest(&cx, &env.project).await?;
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(
            ed.text(&sid, "agent_message_chunk"),
            "Rolled back: restored a.txt",
            "the apply before, not b.txt's again"
        );
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        let answer = ed.text(&sid, "agent_message_chunk");
        assert!(answer.starts_with("Nothing to undo"), "{answer}");
        Ok(())
    }))
    .unwrap();
    assert_eq!(buffer(&a).as_deref(), Some(A));
    assert_eq!(buffer(&b).as_deref(), Some(B));
    assert_eq!((env.read("a.txt"), env.read("b.txt")), (A.into(), B.into()));
}
