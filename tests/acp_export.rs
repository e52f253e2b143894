//! `/export` over ACP: the session's chat written under `.bb7/exports/` as `bb7 export`
//! writes it (Markdown as `bb7 show` renders it, or JSON for `bb7 import`), redacted
//! by default, announced in `available_commands_update`, never sent to the model.

mod acp_support;
mod common;

use std::path::PathBuf;

use acp_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

/// A key in OpenRouter's format, planted in the chat.
const KEY: &str = "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The file an `/export` answer links: the project path in `[…](file://…)`.
fn exported(project: &std::path::Path, answer: &str) -> PathBuf {
    let rel = answer
        .split_once("to [")
        .and_then(|(_, r)| r.split_once(']'))
        .map(|(rel, _)| rel)
        .unwrap_or_else(|| panic!("no file in {answer:?}"));
    assert!(rel.starts_with(".bb7/exports/"), "{answer}");
    project.join(rel)
}

#[test]
fn export_writes_the_chat_redacted_and_is_announced() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "Noted, the key is set.", vec![]));
    let ed = Editor::new(false);
    let mut files = Vec::new();
    let mut commands: Vec<Value> = Vec::new();
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![say(&format!(
                "My .env has OPENROUTER_API_KEY={KEY}; is that right?"
            ))],
        )
        .await?;
        let announced = || {
            ed.seen
                .lock()
                .unwrap()
                .updates
                .iter()
                .any(|n| n["update"]["sessionUpdate"] == "available_commands_update")
        };
        until(announced).await;
        commands.extend(
            ed.seen
                .lock()
                .unwrap()
                .updates
                .iter()
                .filter(|n| n["update"]["sessionUpdate"] == "available_commands_update")
                .flat_map(|n| n["update"]["availableCommands"].as_array().unwrap().clone()),
        );
        for (args, answer_starts) in [
            ("", "Exported this chat as Markdown to ["),
            ("json no-redact", "Exported this chat as JSON"),
            ("json", "Exported this chat as JSON"),
        ] {
            ed.clear();
            let r = prompt(&cx, &sid, vec![say(&format!("/export {args}"))]).await?;
            assert_eq!(stop(&r), "end_turn");
            let answer = ed.text(&sid, "agent_message_chunk");
            assert!(answer.starts_with(answer_starts), "{args}: {answer}");
            files.push((answer.clone(), exported(&env.project, &answer)));
        }
        ed.clear();
        prompt(&cx, &sid, vec![say("/export pdf")]).await?;
        let answer = ed.text(&sid, "agent_message_chunk");
        assert!(
            answer.starts_with("Not exported: unknown argument pdf"),
            "{answer}"
        );
        Ok(())
    }))
    .unwrap();
    assert_eq!(fake.chat_bodies().len(), 1, "no /export reached the model");
    assert!(
        commands.iter().any(|c| c["name"] == "export"),
        "{commands:?}"
    );

    // Markdown, redacted by default.
    let (answer, md) = &files[0];
    assert!(answer.contains("redacted 1 likely secret(s)"), "{answer}");
    assert!(answer.contains("](file:///"), "a link: {answer}");
    let text = std::fs::read_to_string(md).unwrap();
    assert!(
        text.contains("## You") && text.contains("## Assistant"),
        "{text}"
    );
    assert!(text.contains("Noted, the key is set."), "{text}");
    assert!(text.contains("[REDACTED:openrouter_key]"), "{text}");
    assert!(!text.contains(KEY), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(md).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "private, as bb7's state");
    }

    // JSON as asked: the secret kept, a document `bb7 import` reads.
    let (answer, raw) = &files[1];
    assert!(answer.contains("not redacted"), "{answer}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(raw).unwrap()).unwrap();
    assert_eq!(doc["bb7_export"], 1);
    assert!(doc["chat"]["messages"].to_string().contains(KEY));
    // JSON redacted by default over ACP.
    let redacted = std::fs::read_to_string(&files[2].1).unwrap();
    assert!(!redacted.contains(KEY));
    assert!(redacted.contains("[REDACTED:openrouter_key]"));
    assert_ne!(files[1].1, files[0].1);
}
