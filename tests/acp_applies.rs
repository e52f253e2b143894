//! `bb7 acp` applies that keep the user's bytes and history whatever the client does:
//! `/undo` walks back one apply at a time, a refused undo says so, a client whose write
//! adds a line still gets exactly the text, a cancelled or conflicted change does not
//! ride into the next proposal, tool-call ids never repeat, and a write over an
//! existing file shows and applies exactly what it replaces.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

const A: &str = "alpha\nbeta\ngamma\ndelta\n";
const B: &str = "one\ntwo\n";

/// The model edits `path`, replacing `old` by `new`.
fn edits(fake: &FakeModel, path: &str, old: &str, new: &str) {
    fake.push_sse(response(
        "",
        "Done.",
        vec![(
            "edit_file",
            json!({"path": path, "edits": [{"old_string": old, "new_string": new}]}),
        )],
    ));
}

/// The agent's text answers since the editor's last `clear`.
fn answer(ed: &Editor, sid: &str) -> String {
    ed.text(sid, "agent_message_chunk")
}

/// A project with a.txt and b.txt.
fn project() -> (common::Env, FakeModel) {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    env.write("b.txt", B);
    (env, fake)
}

#[test]
fn undo_twice_undoes_the_last_apply_then_the_one_before() {
    let (env, fake) = project();
    writes(&fake, "a.txt", "ALPHA\nbeta\ngamma\ndelta\n");
    writes(&fake, "b.txt", "ONE\ntwo\n");
    let ed = Editor::new(false);
    let (a, b) = (env.project.join("a.txt"), env.project.join("b.txt"));
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![link(&file_uri(&a), "a.txt"), link(&file_uri(&b), "b.txt")],
        )
        .await?;
        prompt(&cx, &sid, vec![say("Uppercase alpha")]).await?;
        prompt(&cx, &sid, vec![say("Uppercase one")]).await?;
        assert_eq!(env.read("a.txt"), "ALPHA\nbeta\ngamma\ndelta\n");
        assert_eq!(env.read("b.txt"), "ONE\ntwo\n");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(answer(&ed, &sid), "Rolled back: restored b.txt");
        assert_eq!(env.read("b.txt"), B);
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(answer(&ed, &sid), "Rolled back: restored a.txt");
        assert_eq!(env.read("a.txt"), A);
        assert_eq!(env.read("b.txt"), B, "the first undo is not re-applied");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert!(answer(&ed, &sid).starts_with("Nothing to undo"));
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), A);
    assert_eq!(env.read("b.txt"), B);
}

#[test]
fn a_refused_undo_does_not_say_rolled_back() {
    let (env, fake) = project();
    writes(&fake, "a.txt", "ALPHA\nbeta\ngamma\ndelta\n");
    let ed = Editor::new(false);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![link(&file_uri(&a), "a.txt"), say("Uppercase alpha")],
        )
        .await?;
        env.write("a.txt", "ALPHA (mine)\nbeta\ngamma\ndelta\n");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        let said = answer(&ed, &sid);
        assert!(
            said.starts_with("Not rolled back") && said.contains("a.txt"),
            "{said}"
        );
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), "ALPHA (mine)\nbeta\ngamma\ndelta\n");
}

#[test]
fn a_client_write_that_adds_a_line_still_leaves_exactly_the_text_and_undo_works() {
    let (env, fake) = project();
    let prompts: Vec<Value> = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/acp-clients/codecompanion-19.22.0-undo.jsonl"),
    )
    .unwrap()
    .lines()
    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    .filter(|l| l["dir"] == "client->agent" && l["msg"]["method"] == "session/prompt")
    .map(|l| l["msg"]["params"]["prompt"].clone())
    .collect();
    // codecompanion types `\undo` and sends it as `/undo`.
    assert!(
        prompts.iter().any(|p| p[0]["text"] == "/undo"),
        "{prompts:?}"
    );
    writes(&fake, "a.txt", "alpha\nBETA\ngamma\ndelta\n");
    let ed = Editor::new(true);
    ed.script(|s| s.write_to_disk_adding_a_line = true);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![link(&file_uri(&a), "a.txt"), say("Uppercase beta")],
        )
        .await?;
        assert_eq!(
            env.read("a.txt"),
            "alpha\nBETA\ngamma\ndelta\n",
            "no added line"
        );
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(answer(&ed, &sid), "Rolled back: restored a.txt");
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), A);
}

#[test]
fn a_cancelled_change_is_dropped_from_the_next_proposal() {
    let (env, fake) = project();
    edits(&fake, "a.txt", "alpha", "ALPHA");
    edits(&fake, "a.txt", "delta", "DELTA");
    let ed = Editor::new(false);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![link(&file_uri(&a), "a.txt")]).await?;
        ed.decide("cancel");
        let r = prompt(&cx, &sid, vec![say("Uppercase alpha")]).await?;
        assert_eq!(stop(&r), "cancelled");
        ed.clear();
        ed.decide("allow_always");
        prompt(&cx, &sid, vec![say("Uppercase delta")]).await?;
        let calls = of_kind(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(
            calls[0]["content"][0]["newText"], "alpha\nbeta\ngamma\nDELTA\n",
            "only the change asked now"
        );
        Ok(())
    }))
    .unwrap();
    assert_eq!(
        env.read("a.txt"),
        "alpha\nbeta\ngamma\nDELTA\n",
        "the cancelled change is never written"
    );
}

#[test]
fn a_conflicted_change_is_dropped_from_the_next_proposal() {
    let (env, fake) = project();
    edits(&fake, "a.txt", "alpha", "ALPHA");
    edits(&fake, "a.txt", "delta", "DELTA");
    let ed = Editor::new(true);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![resource(&file_uri(&a), A)]).await?;
        // Unsaved edits on the line the model changes: a conflict.
        ed.buffer(&a, "alpha (mine)\nbeta\ngamma\ndelta\n");
        prompt(&cx, &sid, vec![say("Uppercase alpha")]).await?;
        let done = of_kind(&ed, &sid, "tool_call_update");
        let note = done.last().unwrap()["content"][0]["content"]["text"].to_string();
        assert!(note.contains("Not applied"), "{note}");
        ed.clear();
        prompt(&cx, &sid, vec![say("Uppercase delta")]).await?;
        let calls = of_kind(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(
            calls[0]["content"][0]["newText"],
            "alpha\nbeta\ngamma\nDELTA\n"
        );
        Ok(())
    }))
    .unwrap();
    let writes = ed.seen.lock().unwrap().writes.clone();
    assert_eq!(
        writes,
        vec![(a, "alpha (mine)\nbeta\ngamma\nDELTA\n".to_owned())],
        "the user's line stays, the conflicted change is not written"
    );
}

#[test]
fn tool_call_ids_never_repeat_in_a_session() {
    let (env, fake) = project();
    writes(&fake, "a.txt", "ALPHA\nbeta\ngamma\ndelta\n");
    writes(&fake, "a.txt", "ALPHA\nbeta\ngamma\ndelta\n");
    let ed = Editor::new(false);
    ed.decide("reject");
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![link(&file_uri(&a), "a.txt"), say("Uppercase alpha")],
        )
        .await?;
        prompt(&cx, &sid, vec![say("Uppercase alpha, please")]).await?;
        let calls = of_kind(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_ne!(calls[0]["toolCallId"], calls[1]["toolCallId"]);
        Ok(())
    }))
    .unwrap();
}

#[test]
fn a_write_over_an_existing_file_shows_its_text_and_applies_exactly_that() {
    let (env, fake) = project();
    writes(&fake, "b.txt", "three\n");
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Replace b.txt")]).await?;
        let calls = of_kind(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0]["content"][0]["oldText"], B, "what it replaces");
        let done = of_kind(&ed, &sid, "tool_call_update");
        assert_eq!(done.last().unwrap()["status"], "completed", "{done:?}");
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("b.txt"), "three\n");
}

#[test]
fn through_the_editor_a_write_over_an_existing_file_replaces_exactly_the_text_shown() {
    let (env, fake) = project();
    writes(&fake, "b.txt", "three\n");
    let ed = Editor::new(true);
    let b = env.project.join("b.txt");
    // An unsaved buffer: that is the text the write replaces, and the one shown.
    ed.buffer(&b, "one\ntwo (unsaved)\n");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Replace b.txt")]).await?;
        let calls = of_kind(&ed, &sid, "tool_call");
        assert_eq!(calls[0]["content"][0]["oldText"], "one\ntwo (unsaved)\n");
        let done = of_kind(&ed, &sid, "tool_call_update");
        assert_eq!(done.last().unwrap()["status"], "completed", "{done:?}");
        Ok(())
    }))
    .unwrap();
    let writes = ed.seen.lock().unwrap().writes.clone();
    assert_eq!(writes, vec![(b, "three\n".to_owned())]);
}

#[test]
fn undo_reaches_an_editor_whose_buffer_took_the_apply_unsaved() {
    let (env, fake) = project();
    writes(&fake, "a.txt", "ALPHA\nbeta\ngamma\ndelta\n");
    let ed = Editor::new(true);
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![resource(&file_uri(&a), A), say("Uppercase alpha")],
        )
        .await?;
        assert_eq!(env.read("a.txt"), A, "the buffer took it, the disk did not");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(answer(&ed, &sid), "Rolled back: restored a.txt");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert!(answer(&ed, &sid).starts_with("Nothing to undo"));
        Ok(())
    }))
    .unwrap();
    let buffer = ed.script.lock().unwrap().buffers.get(&a).cloned();
    assert_eq!(buffer.as_deref(), Some(A), "the buffer has its text back");
    assert_eq!(env.read("a.txt"), A);
}
