//! Review, checkpoints and rollback from a shell, and the read-only commands
//! `models`, `show` and `log`.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn review_accepts_and_rejects_hunks_by_id() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);

    let listing = stdout(&ok(&env, &["review"]));
    assert!(listing.starts_with("M f.txt\n"), "{listing}");
    assert!(listing.contains("    -l2\n    +TWO\n"), "{listing}");
    let ids = hunk_ids(&listing);
    assert_eq!(ids.len(), 2, "{listing}");
    assert_eq!(stdout(&ok(&env, &["review", "f.txt"])), listing);

    let err = fails(&env, &["review", "--accept", "nope"]);
    assert!(err.contains("no pending hunk nope"), "{err}");
    let o = ok(&env, &["review", "--accept", &ids[0]]);
    assert!(
        stderr(&o).contains(&format!("accepted {}", ids[0])),
        "{}",
        stderr(&o)
    );
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "TWO\n"));
    assert_eq!(hunk_ids(&stdout(&ok(&env, &["review"]))), [ids[1].clone()]);
    ok(&env, &["review", "--reject", &ids[1]]);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "TWO\n"));
    let o = ok(&env, &["review"]);
    assert!(stderr(&o).contains("no pending changes"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");

    // One checkpoint for the accepted hunk: id first, then time, action, file.
    let line = stdout(&ok(&env, &["checkpoints"]));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert!(fields[0].starts_with("cp_"), "{line}");
    assert!(fields[1].contains('T'), "{line}");
    assert_eq!(fields[2], "f.txt", "{line}");
    assert_eq!(fields[3], "(review_apply)", "{line}");
    assert_eq!(line.lines().count(), 1, "{line}");
}

#[test]
fn review_all_then_rollback_whole_or_scoped() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);
    let ids = hunk_ids(&stdout(&ok(&env, &["review"])));
    ok(&env, &["review", "--all"]);
    let both = TEN.replace("l2\n", "TWO\n").replace("l9\n", "NINE\n");
    assert_eq!(env.read("f.txt"), both);

    // Reverse only the first hunk; the second stays.
    let cp = checkpoint_ids(&env).pop().unwrap();
    let o = ok(&env, &["rollback", &cp, "--scoped", &ids[0]]);
    assert!(stderr(&o).contains("restored f.txt"), "{}", stderr(&o));
    assert_eq!(env.read("f.txt"), TEN.replace("l9\n", "NINE\n"));
    assert_eq!(checkpoint_ids(&env).len(), 2);

    // A whole rollback refuses a file whose rolled-back lines changed since, unless
    // forced.
    let mine = TEN.replace("l9\n", "NINE (mine)\n");
    env.write("f.txt", &mine);
    let err = fails(&env, &["rollback", &cp]);
    assert!(err.contains("conflict") && err.contains("f.txt"), "{err}");
    assert!(err.contains("force"), "{err}");
    assert_eq!(env.read("f.txt"), mine);
    ok(&env, &["rollback", &cp, "--force"]);
    assert_eq!(env.read("f.txt"), TEN);
    let err = fails(&env, &["rollback", "cp_0_nothing"]);
    assert!(!err.is_empty());
}

#[test]
fn apply_then_rollback_restores_the_file() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);
    let o = ok(&env, &["apply"]);
    assert!(stderr(&o).contains("(checkpoint cp_"), "{}", stderr(&o));
    let cp = checkpoint_ids(&env).pop().unwrap();
    ok(&env, &["rollback", &cp]);
    assert_eq!(env.read("f.txt"), TEN);
}

#[test]
fn models_show_and_log() {
    let (env, fake) = fake_env(json!({}));
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [
            {"id": "vendor/big", "name": "Big", "context_length": 200000,
             "pricing": {"prompt": "0.000003", "completion": "0.000015"}},
            {"id": "vendor/free", "context_length": 8192,
             "pricing": {"prompt": "0", "completion": "0"}}]})
        .to_string(),
    });
    ok(&env, &["init"]);
    let models = stdout(&ok(&env, &["models"]));
    assert_eq!(
        models,
        "vendor/big   200000  $3.00  $15.00\nvendor/free  8192    $0.00  $0.00\n"
    );
    assert_eq!(stdout(&ok(&env, &["models", "--refresh"])), models);
    assert_eq!(
        fake.requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count(),
        2,
        "--refresh fetches again"
    );

    env.write("a.txt", "a\n");
    ok(&env, &["add", "a.txt"]);
    fake.push_sse(response("", "First answer.", vec![]));
    ok(&env, &["ask", "first question"]);
    fake.push_sse(response("", "Second answer.", vec![]));
    ok(&env, &["ask", "second question"]);
    let md = stdout(&ok(&env, &["show"]));
    assert!(md.starts_with("# "), "{md}");
    for want in [
        "## You\n\nfirst question\n",
        "## Assistant\n\nFirst answer.\n",
        "## You\n\nsecond question\n",
        "## Assistant\n\nSecond answer.\n",
        "a.txt",
    ] {
        assert!(md.contains(want), "{want:?} missing in {md}");
    }
    assert_eq!(stdout(&ok(&env, &["show", "--last"])), "Second answer.\n");

    let second = stdout(&ok(&env, &["new", "other"])).trim().to_owned();
    let log = stdout(&ok(&env, &["log"]));
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(
        lines[0].starts_with(&second) && lines[0].contains("$0.0000"),
        "{log}"
    );
    // Two answers at $0.0015 each.
    assert!(lines[1].contains("$0.0030  2  "), "{log}");
}

#[test]
fn a_hunk_that_overlaps_your_edits_is_taken_with_take() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);
    let mine = TEN.replace("l2\n", "mine\n").replace("l6\n", "six\n");
    env.write("f.txt", &mine);
    let listing = stdout(&ok(&env, &["review"]));
    let ids: Vec<String> = listing
        .split_whitespace()
        .filter(|w| w.starts_with("h_"))
        .map(str::to_owned)
        .collect();
    assert_eq!(ids.len(), 2, "{listing}");
    let o = bb7(&env, &["review", "--accept", &ids[0]]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("bb7 review --take"), "{}", stderr(&o));
    assert_eq!(env.read("f.txt"), mine);
    ok(&env, &["review", "--take", &ids[0]]);
    // The model's line 2 replaced the user's; the user's other edit stays.
    assert_eq!(
        env.read("f.txt"),
        TEN.replace("l2\n", "TWO\n").replace("l6\n", "six\n")
    );
}

/// `bb7 review` beside a model output over bb7's read limit: the other file's hunks
/// are listed, the unreadable one is named on stderr with how to discard it, and
/// `bb7 reject` does.
#[test]
fn review_lists_the_other_files_beside_an_unreadable_output() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);
    let id = stdout(&ok(&env, &["chats"]))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned();
    env.plant_output(&id, "huge.txt", "");
    std::fs::File::options()
        .write(true)
        .open(env.chat_dir(&id).join("output/huge.txt"))
        .unwrap()
        .set_len(65 << 20)
        .unwrap();

    let o = ok(&env, &["review"]);
    assert!(stdout(&o).starts_with("M f.txt\n"), "{}", stdout(&o));
    assert_eq!(hunk_ids(&stdout(&o)).len(), 2, "{}", stdout(&o));
    assert!(!stdout(&o).contains("huge.txt"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("output of huge.txt cannot be read")
            && stderr(&o).contains("bb7 reject huge.txt"),
        "{}",
        stderr(&o)
    );
    ok(&env, &["reject", "huge.txt"]);
    assert!(!env.chat_dir(&id).join("output/huge.txt").exists());
    let o = ok(&env, &["review"]);
    assert!(!stderr(&o).contains("huge.txt"), "{}", stderr(&o));
}
