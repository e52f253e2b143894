//! `bb7 acp`: the model's file changes as ACP proposals: diff tool calls, permission,
//! the merge onto an unsaved buffer through `fs/write_text_file`, the disk apply
//! without fs capabilities, reject, conflicts and failed edits.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

const BASE: &str = "one\ntwo\nthree\n";

/// A project holding a.txt (`BASE`), its fake model, and a.txt's absolute path.
fn project_with_a() -> (common::Env, FakeModel, std::path::PathBuf) {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", BASE);
    let abs = env.project.join("a.txt");
    (env, fake, abs)
}

/// The model rewrites line 1 of a.txt.
fn rewrite_line_one(fake: &FakeModel) {
    fake.push_sse(response(
        "",
        "Done.",
        vec![(
            "write_file",
            json!({"path": "a.txt", "content": "ONE\ntwo\nthree\n"}),
        )],
    ));
}

fn tool_calls(ed: &Editor, sid: &str, kind: &str) -> Vec<Value> {
    ed.updates(sid)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

#[test]
fn an_allowed_change_merges_onto_the_unsaved_buffer_through_the_editor() {
    let (env, fake, abs) = project_with_a();
    rewrite_line_one(&fake);
    let ed = Editor::new(true);
    // The user typed on line 3 after sending; the buffer is not saved.
    ed.buffer(&abs, "one\ntwo\nthree (unsaved)\n");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let r = prompt(
            &cx,
            &sid,
            vec![say("Capitalise line one"), resource(&file_uri(&abs), BASE)],
        )
        .await?;
        assert_eq!(stop(&r), "end_turn");
        let calls = tool_calls(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        let call = &calls[0];
        assert_eq!(call["kind"], "edit");
        // The typed client reads an absent status as its default, `pending`
        // (tests/acp_wire.rs checks the line itself).
        assert!(
            call["status"].is_null() || call["status"] == "pending",
            "{call}"
        );
        let diff = &call["content"][0];
        assert_eq!(diff["type"], "diff");
        assert_eq!(diff["path"], abs.to_str().unwrap());
        assert_eq!(diff["oldText"], BASE, "what the model saw");
        assert_eq!(diff["newText"], "ONE\ntwo\nthree\n");
        let perms = ed.seen.lock().unwrap().permissions.clone();
        assert_eq!(perms.len(), 1);
        assert_eq!(perms[0]["toolCall"]["toolCallId"], call["toolCallId"]);
        let kinds: Vec<&str> = perms[0]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
        let done = tool_calls(&ed, &sid, "tool_call_update");
        assert_eq!(done.last().unwrap()["status"], "completed", "{done:?}");
        assert_eq!(done.last().unwrap()["toolCallId"], call["toolCallId"]);
        Ok(())
    }))
    .unwrap();
    let seen = ed.seen.lock().unwrap();
    assert!(seen.reads.contains(&abs), "the buffer was read");
    assert_eq!(
        seen.writes,
        vec![(abs.clone(), "ONE\ntwo\nthree (unsaved)\n".to_owned())],
        "the model's line and the unsaved line, written to the buffer"
    );
    assert_eq!(
        env.read("a.txt"),
        BASE,
        "the disk file is the editor's to save"
    );
    let checkpoints = std::fs::read_dir(env.project.join(".bb7/checkpoints")).unwrap();
    assert_eq!(checkpoints.count(), 1, "the apply recorded a checkpoint");
}

#[test]
fn a_conflict_with_the_buffer_fails_the_call_and_writes_nothing() {
    let (env, fake, abs) = project_with_a();
    rewrite_line_one(&fake);
    let ed = Editor::new(true);
    ed.buffer(&abs, "one (mine)\ntwo\nthree\n");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![say("Edit"), resource(&file_uri(&abs), BASE)],
        )
        .await?;
        let done = tool_calls(&ed, &sid, "tool_call_update");
        let last = done.last().unwrap();
        assert_eq!(last["status"], "failed");
        let note = last["content"][0]["content"]["text"].as_str().unwrap();
        assert!(note.contains("line 1") && note.contains("editor"), "{note}");
        Ok(())
    }))
    .unwrap();
    assert!(ed.seen.lock().unwrap().writes.is_empty());
    assert_eq!(env.read("a.txt"), BASE);
}

#[test]
fn without_fs_capabilities_the_change_merges_on_disk() {
    let (env, fake, abs) = project_with_a();
    rewrite_line_one(&fake);
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Edit"), link(&file_uri(&abs), "a.txt")]).await?;
        Ok(())
    }))
    .unwrap();
    let seen = ed.seen.lock().unwrap();
    assert!(
        seen.reads.is_empty() && seen.writes.is_empty(),
        "no fs requests"
    );
    assert_eq!(env.read("a.txt"), "ONE\ntwo\nthree\n");
}

#[test]
fn a_saved_edit_survives_the_disk_apply() {
    let (env, fake, abs) = project_with_a();
    let ed = Editor::new(false);
    let (env2, fake2) = (&env, fake.clone());
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        // Context first, then the user saves an edit, then the model answers.
        prompt(&cx, &sid, vec![link(&file_uri(&abs), "a.txt")]).await?;
        env2.write("a.txt", "one\ntwo\nthree (saved)\n");
        rewrite_line_one(&fake2);
        prompt(&cx, &sid, vec![say("Edit")]).await?;
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), "ONE\ntwo\nthree (saved)\n");
}

#[test]
fn a_rejected_change_writes_nothing_and_the_model_hears_of_it() {
    let (env, fake, abs) = project_with_a();
    rewrite_line_one(&fake);
    fake.push_sse(response("", "Understood.", vec![]));
    let ed = Editor::new(true);
    ed.decide("reject");
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![say("Edit"), resource(&file_uri(&abs), BASE)],
        )
        .await?;
        let done = tool_calls(&ed, &sid, "tool_call_update");
        assert_eq!(done.last().unwrap()["status"], "failed");
        prompt(&cx, &sid, vec![say("Why not?")]).await?;
        Ok(())
    }))
    .unwrap();
    assert!(ed.seen.lock().unwrap().writes.is_empty());
    assert_eq!(env.read("a.txt"), BASE);
    assert!(env.output(&sid, "a.txt").is_none(), "the output is gone");
    let chat = env.chat_json(&sid).to_string();
    assert!(chat.contains("UserRejectOutput"), "{chat}");
    let next = prompt_text(fake.chat_bodies().last().unwrap());
    assert!(
        next.contains("UserRejectOutput") || next.contains("reject"),
        "{next}"
    );
}

#[test]
fn allow_always_applies_the_rest_unasked_and_new_files_go_to_the_editor() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response(
        "",
        "Two files.",
        vec![
            (
                "write_file",
                json!({"path": "n1.txt", "content": "first\n"}),
            ),
            (
                "write_file",
                json!({"path": "n2.txt", "content": "second\n"}),
            ),
        ],
    ));
    let ed = Editor::new(true);
    ed.decide("allow_always");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Write two files")]).await?;
        let calls = tool_calls(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 2);
        assert!(
            calls[0]["content"][0]
                .get("oldText")
                .is_none_or(Value::is_null)
        );
        let done = tool_calls(&ed, &sid, "tool_call_update");
        assert!(done.iter().all(|u| u["status"] == "completed"), "{done:?}");
        Ok(())
    }))
    .unwrap();
    let seen = ed.seen.lock().unwrap();
    assert_eq!(seen.permissions.len(), 1);
    // The client writes files: the new files go to the editor, not to disk.
    assert_eq!(
        seen.writes,
        vec![
            (env.project.join("n1.txt"), "first\n".to_owned()),
            (env.project.join("n2.txt"), "second\n".to_owned()),
        ]
    );
    // A new file has nothing to merge: the only reads check what the editor wrote.
    assert_eq!(
        seen.reads,
        vec![env.project.join("n1.txt"), env.project.join("n2.txt")]
    );
    assert!(!env.project.join("n1.txt").exists() && !env.project.join("n2.txt").exists());
    let checkpoints = std::fs::read_dir(env.project.join(".bb7/checkpoints")).unwrap();
    assert_eq!(
        checkpoints.count(),
        1,
        "the applies recorded the turn's checkpoint"
    );
}

#[test]
fn without_fs_capabilities_a_new_file_is_written_on_disk() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response(
        "",
        "One file.",
        vec![(
            "write_file",
            json!({"path": "n1.txt", "content": "first\n"}),
        )],
    ));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Write a file")]).await?;
        let done = tool_calls(&ed, &sid, "tool_call_update");
        assert_eq!(done.last().unwrap()["status"], "completed", "{done:?}");
        Ok(())
    }))
    .unwrap();
    assert!(ed.seen.lock().unwrap().writes.is_empty());
    assert_eq!(env.read("n1.txt"), "first\n");
}

#[test]
fn an_edit_that_cannot_apply_is_a_failed_tool_call() {
    let (env, fake, abs) = project_with_a();
    fake.push_sse(response(
        "",
        "Edited.",
        vec![(
            "edit_file",
            json!({"path": "a.txt", "file_id": "nope", "old_string": "four", "new_string": "4"}),
        )],
    ));
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let r = prompt(
            &cx,
            &sid,
            vec![say("Edit"), resource(&file_uri(&abs), BASE)],
        )
        .await?;
        assert_eq!(stop(&r), "end_turn");
        let calls = tool_calls(&ed, &sid, "tool_call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0]["status"], "failed");
        assert_eq!(calls[0]["kind"], "edit");
        assert!(calls[0]["content"][0]["content"]["text"].as_str().is_some());
        Ok(())
    }))
    .unwrap();
    assert!(ed.seen.lock().unwrap().permissions.is_empty());
    assert_eq!(env.read("a.txt"), BASE);
}

/// The stdio action behind the editor merge: `apply_file` with `editor_content`.
#[test]
fn apply_file_with_editor_content_merges_onto_it_and_writes_nothing() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.txt", BASE);
    env.plant_output(&id, "a.txt", "ONE\ntwo\nthree\n");
    let r = b.ok(json!({"action": "apply_file", "path": "a.txt",
                        "editor_content": "one\r\ntwo\r\nthree (unsaved)\r\n"}));
    assert_eq!(
        r["content"], "ONE\r\ntwo\r\nthree (unsaved)\r\n",
        "the editor's line endings"
    );
    assert!(r["checkpoint_id"].as_str().is_some());
    assert_eq!(env.read("a.txt"), BASE, "nothing written");
    let e = b.err(
        json!({"action": "apply_file_as", "path": "a.txt", "destination": "b.txt",
                         "editor_content": "x"}),
    );
    assert!(
        e["message"].as_str().unwrap().contains("editor_content"),
        "{e}"
    );
}
