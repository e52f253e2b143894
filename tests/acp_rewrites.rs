//! `/undo` after applies through a client whose `fs/write_text_file` rewrites the text
//! it writes (CRLF as LF, the final newline dropped, a line break appended on every
//! write): the rewrite is the client's, not an edit of the user's, so `/undo` rolls
//! back instead of refusing "changed since the checkpoint".

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use serde_json::json;

fn crlf_as_lf(s: &str) -> String {
    s.replace("\r\n", "\n")
}

fn drops_final_newline(s: &str) -> String {
    s.strip_suffix('\n').unwrap_or(s).to_owned()
}

fn appends_a_line_break(s: &str) -> String {
    format!("{s}\n")
}

/// With a.txt holding `before` and a client writing through `rewrite`, the model's
/// `outputs` are applied one prompt each, then `/undo` runs once per apply: each
/// answers "Rolled back", and a.txt ends as the client writes `before`.
fn applies_then_undoes(
    before: &str,
    outputs: &[&str],
    rewrite: fn(&str) -> String,
) -> Vec<(String, String)> {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", before);
    for out in outputs {
        writes(&fake, "a.txt", out);
    }
    let ed = Editor::new(true);
    ed.script(|s| s.write_rewrite = Some(rewrite));
    let a = env.project.join("a.txt");
    let mut seen = Vec::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        for (i, _) in outputs.iter().enumerate() {
            let mut blocks = vec![say("Change it")];
            if i == 0 {
                blocks.insert(0, link(&file_uri(&a), "a.txt"));
            }
            prompt(&cx, &sid, blocks).await?;
            let calls = of_kind(&ed, &sid, "tool_call_update");
            assert_eq!(
                calls.last().map(|c| c["status"].clone()),
                Some(json!("completed")),
                "apply {i}: {calls:?}"
            );
            seen.push(("apply".to_owned(), env.read("a.txt")));
        }
        for _ in outputs {
            ed.clear();
            prompt(&cx, &sid, vec![say("/undo")]).await?;
            seen.push((ed.text(&sid, "agent_message_chunk"), env.read("a.txt")));
        }
        Ok(())
    }))
    .unwrap();
    seen
}

#[test]
fn undo_rolls_back_through_a_client_that_writes_crlf_as_lf() {
    let seen = applies_then_undoes("one\r\ntwo\r\n", &["ONE\ntwo\n"], crlf_as_lf);
    assert_eq!(seen[0].1, "ONE\ntwo\n", "the client's write: {seen:?}");
    assert_eq!(seen[1].0, "Rolled back: restored a.txt", "{seen:?}");
    assert_eq!(seen[1].1, "one\ntwo\n", "as the client writes it: {seen:?}");
}

#[test]
fn undo_rolls_back_through_a_client_that_drops_the_final_newline() {
    let seen = applies_then_undoes("one\ntwo\n", &["ONE\ntwo\n"], drops_final_newline);
    assert_eq!(seen[0].1, "ONE\ntwo", "the client's write: {seen:?}");
    assert_eq!(seen[1].0, "Rolled back: restored a.txt", "{seen:?}");
    assert_eq!(seen[1].1, "one\ntwo", "{seen:?}");
}

#[test]
fn undo_twice_rolls_back_through_a_client_that_appends_a_line_on_every_write() {
    // Without a final newline the appended line break cannot be written away.
    let seen = applies_then_undoes("one\ntwo", &["ONE\ntwo", "ONE\nTWO"], appends_a_line_break);
    assert_eq!(seen[0].1, "ONE\ntwo\n", "the client's write: {seen:?}");
    assert_eq!(seen[2].0, "Rolled back: restored a.txt", "{seen:?}");
    assert_eq!(seen[3].0, "Rolled back: restored a.txt", "{seen:?}");
    assert!(
        seen[3].1 == "one\ntwo\n" || seen[3].1 == "one\ntwo",
        "the text before the first apply: {seen:?}"
    );
}

#[test]
fn an_edit_of_the_users_after_the_clients_rewrite_still_stops_undo() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "one\ntwo\n");
    writes(&fake, "a.txt", "ONE\ntwo\n");
    let ed = Editor::new(true);
    ed.script(|s| s.write_rewrite = Some(drops_final_newline));
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![link(&file_uri(&a), "a.txt"), say("Change it")],
        )
        .await?;
        env.write("a.txt", "ONE\ntwo (mine)");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        let answer = ed.text(&sid, "agent_message_chunk");
        assert!(answer.starts_with("Not rolled back:"), "{answer}");
        Ok(())
    }))
    .unwrap();
    assert_eq!(
        env.read("a.txt"),
        "ONE\ntwo (mine)",
        "the user's edit stays"
    );
}

#[test]
fn undo_removes_a_new_file_a_client_wrote_without_its_final_newline() {
    let (env, fake) = fake_env(json!({}));
    writes(&fake, "n.txt", "new\n");
    let ed = Editor::new(true);
    ed.script(|s| s.write_rewrite = Some(drops_final_newline));
    let n = env.project.join("n.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("Create n.txt")]).await?;
        assert_eq!(env.read("n.txt"), "new", "the client's write");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(
            ed.text(&sid, "agent_message_chunk"),
            "Rolled back: restored n.txt"
        );
        Ok(())
    }))
    .unwrap();
    assert!(!n.exists(), "the file the apply created is gone");
}
