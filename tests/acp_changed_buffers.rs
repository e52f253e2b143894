//! codecompanion.nvim's note for a shared buffer changed since it was shared,
//! `<attachment filepath=… buffer_number=…>The file … has been modified. Here are the
//! changes: ````diff …````</attachment>` (tests/fixtures/acp-clients/, replayed as
//! recorded): its diff is applied to bb7's snapshot of the file, so the model reads the
//! user's unsaved buffer although the client's `fs/read_text_file` reads the disk; a
//! diff that applies nowhere is refused by name before anything reaches the model.

mod acp_support;
mod common;

use std::path::Path;

use acp_support::*;
use agent_client_protocol::v1::schema::ContentBlock;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

/// The file as the recorded session found it.
const A: &str = "alpha\nbeta\ngamma\ndelta\n";

/// The `session/prompt` blocks codecompanion sent in the recorded session, in order,
/// with the recorded project path replaced by `project`.
fn recorded(project: &Path) -> Vec<Vec<ContentBlock>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/acp-clients/codecompanion-19.22.0-session.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
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

/// The recorded prompt whose first block starts with `start` (the `n`th such).
fn find(prompts: &[Vec<ContentBlock>], start: &str, n: usize) -> Vec<ContentBlock> {
    prompts
        .iter()
        .filter(|p| {
            serde_json::to_value(&p[0]).unwrap()["text"]
                .as_str()
                .is_some_and(|t| t.starts_with(start))
        })
        .nth(n)
        .unwrap_or_else(|| panic!("no recorded prompt {n} starting {start:?}"))
        .clone()
}

/// The text of the model's last request.
fn sent_file(fake: &FakeModel) -> String {
    prompt_text(&fake.chat_bodies().pop().expect("a model request"))
}

#[test]
fn the_recorded_diffs_follow_the_unsaved_buffer_though_the_client_reads_the_disk() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    let prompts = recorded(&env.project);
    let shared = find(&prompts, "Sharing the following file as context:", 0);
    let first = find(&prompts, "<attachment", 0);
    let second = find(&prompts, "<attachment", 1);
    let third = find(&prompts, "<attachment", 2);
    for answer in ["Four lines.", "Seen one.", "Seen two.", "Seen three."] {
        fake.push_sse(response("", answer, vec![]));
    }
    // codecompanion's read is the disk's, never the buffer's (no buffer is scripted).
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, shared).await?;
        ed.clear();
        let r = prompt(&cx, &sid, first).await?;
        assert_eq!(stop(&r), "end_turn");
        assert_eq!(
            ed.text(&sid, "agent_message_chunk"),
            "Context: a.txt (updated)\n\nSeen one."
        );
        Ok(())
    }))
    .unwrap();
    // `delta` → `delta (unsaved)`: in the buffer only, never on disk.
    let sent = sent_file(&fake);
    assert!(sent.contains("gamma\ndelta (unsaved)\n"), "{sent}");
    assert_eq!(
        std::fs::read_to_string(env.project.join("a.txt")).unwrap(),
        A
    );
    // The two later notes, each made from the buffer as the note before left it.
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = load_latest(&cx, &env.project).await?;
        prompt(&cx, &sid, second).await?;
        prompt(&cx, &sid, third).await?;
        Ok(())
    }))
    .unwrap();
    let sent = sent_file(&fake);
    assert!(
        sent.contains("alpha\nBETA\ngamma-mine\ndelta\n"),
        "the third note on the second on the first: {sent}"
    );
}

#[test]
fn a_diff_that_applies_nowhere_is_refused_by_name_and_nothing_is_sent() {
    let (env, fake) = fake_env(json!({}));
    // Neither the chat (nothing shared yet) nor the disk holds the text the note's diff
    // was made from.
    env.write("a.txt", "something else entirely\n");
    let prompts = recorded(&env.project);
    let note = find(&prompts, "<attachment", 0);
    fake.push_sse(response("", "Never asked.", vec![]));
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let err = prompt(&cx, &sid, note).await.unwrap_err();
        let e = serde_json::to_value(&err).unwrap();
        assert_eq!(e["code"], -32602, "{e}");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.starts_with("a.txt: "), "{msg}");
        assert!(msg.contains("Save the buffer and share it again"), "{msg}");
        // The session serves on: a plain question works.
        let r = prompt(&cx, &sid, vec![say("Still there?")]).await?;
        assert_eq!(stop(&r), "end_turn");
        Ok(())
    }))
    .unwrap();
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "only the later question reached the model");
    assert!(!prompt_text(&bodies[0]).contains("something else"));
}

#[test]
fn a_saved_buffer_is_taken_as_it_is() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", A);
    let prompts = recorded(&env.project);
    let shared = find(&prompts, "Sharing the following file as context:", 0);
    let note = find(&prompts, "<attachment", 0);
    fake.push_sse(response("", "Four lines.", vec![]));
    fake.push_sse(response("", "Seen.", vec![]));
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, shared).await?;
        // The user saved the buffer before the note was sent, then changed the
        // snapshot's base away from it: the disk holds the note's result.
        env.write("a.txt", "alpha\nbeta\ngamma\ndelta (unsaved)\n");
        prompt(&cx, &sid, vec![say("/drop a.txt")]).await?;
        let r = prompt(&cx, &sid, note).await?;
        assert_eq!(stop(&r), "end_turn");
        Ok(())
    }))
    .unwrap();
    let sent = sent_file(&fake);
    assert!(sent.contains("gamma\ndelta (unsaved)\n"), "{sent}");
}
