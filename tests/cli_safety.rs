//! The command line keeps the user's work: `apply` merges into edited files and stops at
//! conflicts, `status` marks files changed on disk, `add` and `ask --refresh` renew
//! snapshots, and `ask` warns before sending an old one.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

fn model_edits(fake: &FakeModel, path: &str, old: &str, new: &str) {
    fake.push_sse(response(
        "",
        "Done.",
        vec![(
            "edit_file",
            json!({"path": path, "edits": [{"old_string": old, "new_string": new}]}),
        )],
    ));
}

#[test]
fn apply_keeps_a_saved_edit_elsewhere_and_status_marks_it() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    model_edits(&fake, "f.txt", "l2\n", "MODEL\n");
    ok(&env, &["ask", "change line 2"]);
    // The user edits line 9 and saves before applying.
    env.write("f.txt", &TEN.replace("l9\n", "USER\n"));
    let o = ok(&env, &["status"]);
    assert_eq!(stdout(&o), "~M  f.txt\n");
    // The legend is in `bb7 status --help`, not repeated on every status.
    assert_eq!(stderr(&o), "");

    // needs server: apply_file three-way merge (snapshot -> output onto the disk file)
    ok(&env, &["apply"]);
    assert_eq!(
        env.read("f.txt"),
        TEN.replace("l2\n", "MODEL\n").replace("l9\n", "USER\n")
    );
}

#[test]
fn status_says_when_the_file_already_holds_the_models_change() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    model_edits(&fake, "f.txt", "l2\n", "MODEL\n");
    ok(&env, &["ask", "change line 2"]);
    // The user typed the same change by hand.
    env.write("f.txt", &TEN.replace("l2\n", "MODEL\n"));
    assert_eq!(
        stdout(&ok(&env, &["status"])),
        "~M  f.txt  (already on disk)\n"
    );
    // Applying it changes nothing more and is no conflict.
    ok(&env, &["apply"]);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "MODEL\n"));
}

#[test]
fn apply_stops_at_a_conflict_unless_forced() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    model_edits(&fake, "f.txt", "l3\n", "MODEL\n");
    ok(&env, &["ask", "change line 3"]);
    let mine = TEN.replace("l3\n", "MINE\n");
    env.write("f.txt", &mine);

    // needs server: apply_file answers code "conflict" naming the lines, file untouched
    let o = bb7(&env, &["apply"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    // One message per conflict, and it is the last line (what an editor shows).
    assert_eq!(err.matches("conflict: f.txt").count(), 1, "{err}");
    assert!(err.lines().last().unwrap_or("").contains("line 3"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(env.read("f.txt"), mine);
    let err = fails(&env, &["apply", "f.txt"]);
    assert!(err.contains("conflict"), "{err}");
    assert_eq!(env.read("f.txt"), mine);

    ok(&env, &["apply", "--force", "f.txt"]);
    assert_eq!(env.read("f.txt"), TEN.replace("l3\n", "MODEL\n"));
}

#[test]
fn changed_files_are_flagged_refreshed_and_warned_about() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "old text\n"), ("b.txt", "bee\n")]);
    assert_eq!(stdout(&ok(&env, &["status"])), "    a.txt\n    b.txt\n");
    env.write("a.txt", "new text\n");
    // A missing final newline alone is not a change.
    env.write("b.txt", "bee");
    assert_eq!(stdout(&ok(&env, &["status"])), "~   a.txt\n    b.txt\n");

    // ask warns before sending the old snapshot.
    fake.push_sse(response("", "ok", vec![]));
    let o = ok(&env, &["ask", "what is in a?"]);
    let err = stderr(&o);
    assert!(err.contains("a.txt changed on disk"), "{err}");
    assert!(err.contains("--refresh"), "{err}");
    assert!(!err.contains("b.txt"), "{err}");
    let body = fake.chat_bodies()[0].to_string();
    assert!(
        body.contains("old text") && !body.contains("new text"),
        "{body}"
    );

    // --refresh re-snapshots first.
    fake.push_sse(response("", "ok", vec![]));
    let o = ok(&env, &["ask", "--refresh", "and now?"]);
    assert!(stderr(&o).contains("refreshed a.txt"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("changed on disk"), "{}", stderr(&o));
    assert!(fake.chat_bodies()[1].to_string().contains("new text"));
    assert_eq!(stdout(&ok(&env, &["status"])), "    a.txt\n    b.txt\n");

    // add of a file already in context refreshes it instead of failing.
    env.write("a.txt", "third text\n");
    let o = ok(&env, &["add", "a.txt"]);
    assert!(stderr(&o).contains("refreshed a.txt"), "{}", stderr(&o));
    assert_eq!(stdout(&ok(&env, &["status"])), "    a.txt\n    b.txt\n");
    fake.push_sse(response("", "ok", vec![]));
    let o = ok(&env, &["ask", "and now?"]);
    assert!(!stderr(&o).contains("changed on disk"), "{}", stderr(&o));
    assert!(fake.chat_bodies()[2].to_string().contains("third text"));
}

#[test]
fn empty_results_say_so() {
    let (env, _fake) = fake_env(json!({}));
    ok(&env, &["init"]);
    ok(&env, &["new"]);
    for (args, says) in [
        (&["status"][..], "no files in context"),
        (&["diff"][..], "no pending changes"),
        (&["review"][..], "no pending changes"),
        (&["checkpoints"][..], "no checkpoints"),
        (&["show"][..], "no messages"),
        (&["show", "--last"][..], "no answer"),
    ] {
        let o = ok(&env, args);
        if args != ["show"] {
            assert_eq!(stdout(&o), "", "{args:?}");
        }
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let o = ok(&env, &["apply"]);
    assert!(stderr(&o).contains("nothing to apply"), "{}", stderr(&o));
}

#[test]
fn adding_the_same_section_again_refreshes_it() {
    let (env, fake) = fake_env(json!({}));
    env.write("n.txt", "one\ntwo\nthree\n");
    ok(&env, &["init"]);
    ok(&env, &["add", "n.txt:2:3"]);
    env.write("n.txt", "one\nTWO-NEW\nthree\n");
    let o = ok(&env, &["add", "n.txt:2:3"]);
    assert!(stderr(&o).contains("refreshed n.txt:2-3"), "{}", stderr(&o));
    assert_eq!(stdout(&ok(&env, &["status"])), "S   n.txt:2-3\n");
    fake.push_sse(response("", "ok", vec![]));
    ok(&env, &["ask", "read it"]);
    let body = fake.chat_bodies()[0].to_string();
    assert!(
        body.contains("TWO-NEW") && !body.contains("\\ntwo\\n"),
        "{body}"
    );
}
