//! The command line names the real cause of a failure: the server's own error, a chat
//! held by another process (with the way out), rollbacks that merge like apply, and
//! exit statuses that tell a conflict from a failure.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_model::*;
use common::{Env, fake_env};
use serde_json::json;

fn checkpoint_rows(env: &Env) -> Vec<Vec<String>> {
    stdout(&ok(env, &["checkpoints"]))
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

#[test]
fn without_an_api_key_ask_says_so() {
    let env = Env::new();
    env.write("f.txt", TEN);
    ok(&env, &["init"]);
    let o = run_in(&env, &env.project, &["ask", "hello"], "");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("No API key"), "{err}");
    assert!(err.contains("OPENROUTER_API_KEY"), "{err}");
    assert!(!err.contains("malformed"), "{err}");
}

#[test]
fn a_chat_held_elsewhere_is_named_never_replaced() {
    let (env, _fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    env.write("g.txt", TEN);
    // A process that answers no holder socket holds the project's active chat.
    let (mut editor, id) = env.with_chat();
    editor.ok(json!({"action": "context_add", "path": "f.txt", "content": TEN}));
    editor.close();
    let mut holder = hold_without_socket(&env, &id);
    let chats_before = std::fs::read_dir(env.project.join(".bb7/chats"))
        .unwrap()
        .count();
    for args in [&["add", "g.txt"][..], &["ask", "hi"], &["apply"]] {
        let o = bb7(&env, args);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&id), "{args:?}: {err}");
        assert!(err.contains("PID"), "{args:?}: {err}");
        assert!(err.contains("bb7 unlock"), "{args:?}: {err}");
        assert!(err.contains("--take-over"), "{args:?}: {err}");
        assert!(!err.contains("no active chat"), "{args:?}: {err}");
    }
    let chats_after = std::fs::read_dir(env.project.join(".bb7/chats"))
        .unwrap()
        .count();
    assert_eq!(chats_before, chats_after, "no new chat was started");

    // Taking it over continues the same conversation.
    let o = ok(&env, &["status", "--take-over"]);
    assert!(stdout(&o).contains("f.txt"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(&format!("took chat {id} over")),
        "{}",
        stderr(&o)
    );
    let _ = holder.kill();
    let _ = holder.wait();

    // Held again; `bb7 unlock --force` takes it over for later commands.
    let mut holder = hold_without_socket(&env, &id);
    assert_eq!(bb7(&env, &["add", "g.txt"]).status.code(), Some(4));
    let o = ok(&env, &["unlock", "--force"]);
    assert!(
        stderr(&o).contains(&format!("took chat {id} over")),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&ok(&env, &["status"])).contains("f.txt"));
    let _ = holder.kill();
    let _ = holder.wait();
}

#[test]
fn unlock_refuses_while_the_holder_runs_and_takes_a_dead_ones_chat() {
    let (env, _fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    let (mut editor, id) = env.with_chat();
    editor.ok(json!({"action": "context_add", "path": "f.txt", "content": TEN}));
    let lock = env.chat_dir(&id).join("lock");
    let holder = std::fs::read_to_string(&lock).unwrap();
    assert!(!holder.trim().is_empty());

    // The editor runs: its lock stays, and the refusal names it and what --force risks.
    let o = bb7(&env, &["unlock"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&format!("PID {}", holder.trim())), "{err}");
    assert!(err.contains(&id), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert!(err.contains("refuses its next save"), "{err}");
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), holder);
    // Beside it, a command is served by the editor itself (its holder socket).
    assert!(stdout(&ok(&env, &["status"])).contains("f.txt"));
    // The editor still owns the chat.
    editor.ok(json!({"action": "save_draft", "draft": "still mine"}));
    assert_eq!(env.chat_json(&id)["draft"], "still mine");

    // Once the holder is gone, plain `unlock` takes the chat.
    editor.kill();
    let o = ok(&env, &["unlock"]);
    assert!(stderr(&o).contains(&id), "{}", stderr(&o));
    assert!(stdout(&ok(&env, &["status"])).contains("f.txt"));
}

#[test]
fn rollback_keeps_later_edits_elsewhere_and_refuses_overlaps() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);
    ok(&env, &["apply"]);
    let rows = checkpoint_rows(&env);
    let cp = rows[0][0].clone();

    // An edit of another line after the apply survives a whole rollback.
    let later = TEN.replace("l2\n", "TWO\n").replace("l9\n", "NINE\n");
    env.write("f.txt", &later.replace("l5\n", "mine\n"));
    let o = ok(&env, &["rollback", &cp]);
    assert!(stderr(&o).contains("restored f.txt"), "{}", stderr(&o));
    assert_eq!(env.read("f.txt"), TEN.replace("l5\n", "mine\n"));

    // An edit of a rolled-back line is one conflict, exit status 3, file untouched.
    let cp2 = checkpoint_rows(&env).last().unwrap()[0].clone();
    let edited = later.replace("NINE\n", "NINE (mine)\n");
    ok(&env, &["rollback", &cp2]);
    env.write("f.txt", &edited);
    let o = bb7(&env, &["rollback", &cp]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("conflict").count(), 1, "{err}");
    assert!(err.contains("f.txt") && err.contains("line"), "{err}");
    assert_eq!(env.read("f.txt"), edited);
    // --force lets the rollback win on those lines.
    ok(&env, &["rollback", &cp, "--force"]);
    assert_eq!(env.read("f.txt"), TEN);
}

#[test]
fn checkpoints_list_hunk_ids_and_an_unknown_one_is_an_error() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);
    ok(&env, &["apply"]);
    let row = checkpoint_rows(&env).remove(0);
    let (cp, hunks) = (row[0].clone(), row[4..].to_vec());
    assert_eq!(row[2], "f.txt", "{row:?}");
    assert_eq!(hunks.len(), 2, "{row:?}");
    let o = bb7(&env, &["rollback", &cp, "--scoped", "h_nonesuch"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("h_nonesuch"), "{}", stderr(&o));
    assert_eq!(
        env.read("f.txt"),
        TEN.replace("l2\n", "TWO\n").replace("l9\n", "NINE\n")
    );
    ok(&env, &["rollback", &cp, "--scoped", &hunks[1]]);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "TWO\n"));
}

#[test]
fn after_rolling_back_a_new_file_the_hint_is_remove() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    fake.push_sse(response(
        "",
        "Created.",
        vec![(
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
        )],
    ));
    ok(&env, &["ask", "make a file"]);
    ok(&env, &["apply"]);
    assert_eq!(env.read("new.txt"), "fresh\n");
    ok(&env, &["add", "new.txt"]);
    let cp = checkpoint_rows(&env)[0][0].clone();
    let o = ok(&env, &["rollback", &cp]);
    assert!(stderr(&o).contains("deleted new.txt"), "{}", stderr(&o));
    assert!(!env.project.join("new.txt").exists());
    fake.push_sse(response("", "Fine.", vec![]));
    let o = ok(&env, &["ask", "and now?"]);
    let err = stderr(&o);
    assert!(err.contains("new.txt no longer exists"), "{err}");
    assert!(err.contains("bb7 remove new.txt"), "{err}");
    assert!(!err.contains("bb7 add new.txt"), "{err}");
}

#[test]
fn apply_with_nothing_pending_is_not_a_failure() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    let o = ok(&env, &["apply"]);
    assert!(stderr(&o).contains("nothing to apply"), "{}", stderr(&o));
}

#[test]
fn add_readonly_on_a_file_in_context_makes_it_read_only_unless_output_is_pending() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN), ("g.txt", TEN)]);
    let o = ok(&env, &["add", "--readonly", "f.txt"]);
    assert!(stderr(&o).contains("now read-only"), "{}", stderr(&o));
    // The model's edit of it is refused, and nothing is pending for it.
    fake.push_sse(response(
        "",
        "Tried.",
        vec![(
            "edit_file",
            json!({"path": "f.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
        )],
    ));
    let _ = bb7(&env, &["ask", "change f"]);
    assert!(!stdout(&ok(&env, &["status"])).contains("M f.txt"));
    let o = bb7(&env, &["apply"]);
    assert!(stderr(&o).contains("nothing to apply"), "{}", stderr(&o));
    assert_eq!(env.read("f.txt"), TEN);

    // With the model's output pending the change is refused, with the reason.
    fake.push_sse(response(
        "",
        "Changed g.",
        vec![(
            "edit_file",
            json!({"path": "g.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
        )],
    ));
    ok(&env, &["ask", "change g"]);
    let err = fails(&env, &["add", "--readonly", "g.txt"]);
    assert!(err.contains("cannot make g.txt read-only"), "{err}");
    assert!(err.contains("pending output"), "{err}");
}
