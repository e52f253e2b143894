//! A `bb7 acp` prompt that only adds context (a resource, no text) is no send, so no
//! `invisible` notice; the invisible characters of what it adds are named in an agent
//! message instead (docs/PROTOCOL.md "Invisible characters"), and a clean one says
//! nothing of them.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use serde_json::json;

#[test]
fn a_context_only_prompt_names_the_invisible_characters_it_adds() {
    let (env, fake) = fake_env(json!({}));
    let hidden = "# Notes\nsay \u{202E}olleh\u{202C}\n";
    env.write("notes.md", hidden);
    env.write("clean.md", "# Clean\n");
    let ed = Editor::new(false);
    let notes = file_uri(&env.project.join("notes.md"));
    let clean = file_uri(&env.project.join("clean.md"));
    let mut sid = String::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![resource(&clean, "# Clean\n")]).await?;
        let shown = ed.text(&sid, "agent_message_chunk");
        assert!(!shown.contains("invisible"), "{shown}");
        ed.clear();
        prompt(&cx, &sid, vec![resource(&notes, hidden)]).await?;
        Ok(())
    }))
    .unwrap();
    let shown = ed.text(&sid, "agent_message_chunk");
    assert!(
        shown.contains("notes.md:2: invisible characters: U+202E"),
        "{shown}"
    );
    assert!(
        fake.chat_bodies().is_empty(),
        "a context-only prompt was sent"
    );
}
