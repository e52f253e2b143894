//! What went wrong with a chat's context journal when the chat was read — skipped
//! whole (here a directory planted in its place) or its replay stopped early (a line
//! that is not a record) — is told when the chat opens, once: in `chat_select`'s
//! `state_warnings`, in `init`'s `config_warnings` for the chat `init` restores, on the
//! CLI's stderr and as an ACP agent message on `session/load`; the next send then does
//! not repeat it (docs/PROTOCOL.md, `chat_select` and "Notices of a send").

mod acp_support;
mod common;

use common::fake_model::*;
use common::reopen::{chat_with_journal, forget_active, plant_bad_second_line};
use common::{Bb7, fake_env};
use serde_json::{Value, json};

fn journal_notices(stream: &[Value]) -> usize {
    stream
        .iter()
        .filter(|m| {
            m["type"] == "notice" && m["kind"].as_str().unwrap_or("").starts_with("journal_")
        })
        .count()
}

/// A send on `b`: how many journal notices its stream carried.
fn send_notices(b: &mut Bb7, fake: &FakeModel) -> usize {
    fake.push_sse(response("", "An answer.", vec![]));
    let stream = b.turn_stream("and now?");
    assert_eq!(stream.last().unwrap()["type"], "done", "{stream:?}");
    journal_notices(&stream)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_skipped_journal_is_told_by_chat_select_once_and_not_by_the_send() {
    let (env, fake) = fake_env(json!({}));
    let (chat, journal) = chat_with_journal(&env);
    std::fs::remove_file(&journal).unwrap();
    std::fs::create_dir(&journal).unwrap();
    forget_active(&env);

    let mut b = env.spawn();
    let init = b.ok(json!({"action": "init", "project_root": env.project}));
    assert!(strings(&init["config_warnings"]).is_empty(), "{init}");
    let selected = b.ok(json!({"action": "chat_select", "id": chat}));
    let warnings = strings(&selected["state_warnings"]);
    assert_eq!(warnings.len(), 1, "{selected}");
    let name = journal.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        warnings[0].contains(&name) && warnings[0].contains("add those files again"),
        "{warnings:?}"
    );
    assert_eq!(send_notices(&mut b, &fake), 0, "told twice");
}

#[test]
fn a_replay_stopped_at_a_bad_line_is_told_with_the_line_and_what_was_kept() {
    let (env, fake) = fake_env(json!({}));
    let (chat, journal) = chat_with_journal(&env);
    plant_bad_second_line(&journal);
    forget_active(&env);

    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let selected = b.ok(json!({"action": "chat_select", "id": chat}));
    let warnings = strings(&selected["state_warnings"]);
    assert_eq!(warnings.len(), 1, "{selected}");
    let name = journal.file_name().unwrap().to_string_lossy().into_owned();
    let w = &warnings[0];
    assert!(
        w.contains(&name) && w.contains("line 2") && w.contains("the 1 context add before it"),
        "{w}"
    );
    let files = b.ok(json!({"action": "context_list"}));
    assert_eq!(common::paths_of(&files["files"]), ["a.txt", "b.txt"]);
    assert_eq!(send_notices(&mut b, &fake), 0, "told twice");
}

/// The chat `init` restores (the project's active one) is read by `init`: its
/// `config_warnings` tell it, and neither `chat_select` of it nor the send again.
#[test]
fn the_restored_chat_is_told_by_init() {
    let (env, fake) = fake_env(json!({}));
    let (chat, journal) = chat_with_journal(&env);
    plant_bad_second_line(&journal);

    let mut b = env.spawn();
    let init = b.ok(json!({"action": "init", "project_root": env.project}));
    let warnings = strings(&init["config_warnings"]);
    assert!(warnings.iter().any(|w| w.contains("line 2")), "{init}");
    let selected = b.ok(json!({"action": "chat_select", "id": chat}));
    assert!(selected.get("state_warnings").is_none(), "{selected}");
    assert_eq!(send_notices(&mut b, &fake), 0, "told twice");
}

/// The CLI prints it on stderr when it opens the chat.
#[test]
fn the_cli_prints_it_when_it_opens_the_chat() {
    let (env, _fake) = fake_env(json!({}));
    let (chat, journal) = chat_with_journal(&env);
    plant_bad_second_line(&journal);
    forget_active(&env);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args(["--chat", &chat, "status"])
        .current_dir(&env.project)
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("was read only up to line 2").count(),
        1,
        "{err}"
    );
    assert!(err.contains("bb7: The chat's context journal"), "{err}");
}

/// `session/load` of the chat tells it as an agent message after the history.
#[test]
fn acp_session_load_tells_it_as_an_agent_message() {
    use acp_support::*;
    let (env, _fake) = fake_env(json!({}));
    let (_chat, journal) = chat_with_journal(&env);
    plant_bad_second_line(&journal);
    forget_active(&env);
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = load_latest(&cx, &env.project).await?;
        until(|| ed.text(&sid, "agent_message_chunk").contains("line 2")).await;
        let text = ed.text(&sid, "agent_message_chunk");
        assert_eq!(
            text.matches("(bb7: The chat's context journal").count(),
            1,
            "{text}"
        );
        Ok(())
    }))
    .unwrap();
}
