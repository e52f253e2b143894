//! Undo after a partial rollback: once `rollback --scoped` reversed one hunk of an
//! apply, `rollback --last` (and `/undo`) undo the rest of that apply, never skip it
//! for the apply before, nor say "nothing to undo" while a hunk is still applied.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn rollback_last_after_a_scoped_rollback_undoes_the_rest_of_that_apply() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN), ("g.txt", TEN)]);
    // An earlier apply, of g.txt: the one a skipping undo would wrongly take.
    fake.push_sse(response(
        "",
        "One change.",
        vec![(
            "edit_file",
            json!({"path": "g.txt", "edits": [{"old_string": "l5\n", "new_string": "FIVE\n"}]}),
        )],
    ));
    ok(&env, &["ask", "change g"]);
    ok(&env, &["apply"]);
    let g_after = TEN.replace("l5\n", "FIVE\n");
    assert_eq!(env.read("g.txt"), g_after);

    two_hunks(&fake);
    ok(&env, &["ask", "change two lines"]);
    let ids = hunk_ids(&stdout(&ok(&env, &["review"])));
    assert_eq!(ids.len(), 2, "{ids:?}");
    ok(&env, &["review", "--all"]);
    let cp = checkpoint_ids(&env).pop().unwrap();
    ok(&env, &["rollback", &cp, "--scoped", &ids[0]]);
    assert_eq!(env.read("f.txt"), TEN.replace("l9\n", "NINE\n"));

    // The half-undone apply is the one to undo: its second hunk goes, g.txt stays.
    ok(&env, &["rollback", "--last"]);
    assert_eq!(env.read("f.txt"), TEN, "the rest of the apply undone");
    assert_eq!(env.read("g.txt"), g_after, "the apply before it untouched");
    // Then the apply before it.
    ok(&env, &["rollback", "--last"]);
    assert_eq!(env.read("g.txt"), TEN);
    let err = fails(&env, &["rollback", "--last"]);
    assert!(err.contains("nothing to undo"), "{err}");
}
