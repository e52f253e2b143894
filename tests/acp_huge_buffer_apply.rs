//! An apply over `bb7 acp` into a buffer too large to send (its `fs/read_text_file`
//! answer is a line over the 64 MiB line limit) is refused by name — the file, the
//! limit — instead of taking the disk's text for the editor's, which would drop the
//! user's unsaved edits (docs/PROTOCOL.md, "bb7 acp"). The session goes on.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_model::*;
use common::{Env, fake_env};
use serde_json::json;

/// 70 MB of text: over the 64 MiB line limit however it is escaped.
fn huge() -> String {
    "abcdefghi\n".repeat(7_000_000)
}

/// A project holding a.txt, with the model's next answer an edit of its first line:
/// the environment, the fake model (kept alive) and a.txt's path.
fn alpha_edit() -> (Env, FakeModel, std::path::PathBuf) {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "alpha\nbeta\n");
    let a = env.project.join("a.txt");
    fake.push_sse(response(
        "",
        "Done.",
        vec![(
            "edit_file",
            json!({"path": "a.txt", "edits": [{"old_string": "alpha", "new_string": "ALPHA"}]}),
        )],
    ));
    (env, fake, a)
}

#[test]
fn an_apply_into_a_buffer_over_the_line_limit_is_refused_by_name() {
    let (env, _fake, a) = alpha_edit();
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![link(&file_uri(&a), "a.txt")]).await?;
        // The user's unsaved buffer has grown past what one line may carry.
        ed.buffer(&a, &huge());
        ed.clear();
        let _ = prompt(&cx, &sid, vec![say("Uppercase alpha")]).await;
        let seen = format!("{:?}", ed.updates(&sid));
        assert!(
            seen.contains("editor's text of a.txt could not be read")
                && seen.contains("64 MiB line limit"),
            "the refusal does not name the file and the limit: {}",
            &seen[..seen.len().min(4000)]
        );
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), "alpha\nbeta\n", "the disk was written");
}

/// `/undo` of an apply whose buffer has since grown over the line limit is refused by
/// name, not rolled back on disk past the user's unsaved edits.
#[test]
fn undo_with_a_buffer_over_the_line_limit_is_refused_by_name() {
    let (env, _fake, a) = alpha_edit();
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![link(&file_uri(&a), "a.txt")]).await?;
        prompt(&cx, &sid, vec![say("Uppercase alpha")]).await?;
        ed.buffer(&a, &huge());
        let e = prompt(&cx, &sid, vec![say("/undo")])
            .await
            .expect_err("the undo is refused");
        let msg = e.to_string();
        assert!(
            msg.contains("Not undone: the editor's text of a.txt could not be read")
                && msg.contains("64 MiB line limit"),
            "{msg}"
        );
        Ok(())
    }))
    .unwrap();
}
