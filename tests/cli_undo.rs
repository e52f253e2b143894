//! One apply, one checkpoint: an answer that changed several files, applied at once
//! (`bb7 apply`, `/apply`, `apply_file` per file, review of several files), is one
//! checkpoint carrying its turn; `bb7 rollback --last` and `/undo` undo it whole, and
//! a second undo undoes the apply before it, never the first undo.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

fn edit(path: &str, old: &str, new: &str) -> (&'static str, serde_json::Value) {
    (
        "edit_file",
        json!({"path": path, "edits": [{"old_string": old, "new_string": new}]}),
    )
}

#[test]
fn a_multi_file_apply_is_undone_whole_and_a_second_undo_goes_one_further() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN), ("g.txt", TEN)]);
    fake.push_sse(response(
        "",
        "Both.",
        vec![
            edit("f.txt", "l2\n", "TWO\n"),
            edit("g.txt", "l3\n", "THREE\n"),
        ],
    ));
    ok(&env, &["ask", "change both"]);
    ok(&env, &["apply"]);
    let after_one = (TEN.replace("l2\n", "TWO\n"), TEN.replace("l3\n", "THREE\n"));
    assert_eq!((env.read("f.txt"), env.read("g.txt")), after_one);
    let rows = stdout(&ok(&env, &["checkpoints"]));
    assert_eq!(rows.lines().count(), 1, "one checkpoint: {rows}");
    assert!(rows.contains("f.txt") && rows.contains("g.txt"), "{rows}");

    fake.push_sse(response(
        "",
        "Again.",
        vec![edit("f.txt", "l5\n", "FIVE\n")],
    ));
    ok(&env, &["ask", "one more"]);
    ok(&env, &["apply"]);
    assert_eq!(env.read("f.txt"), after_one.0.replace("l5\n", "FIVE\n"));

    // The first undo undoes the second apply only.
    ok(&env, &["rollback", "--last"]);
    assert_eq!((env.read("f.txt"), env.read("g.txt")), after_one);
    // The second undoes the first apply, both files.
    ok(&env, &["rollback", "--last"]);
    assert_eq!(
        (env.read("f.txt"), env.read("g.txt")),
        (TEN.into(), TEN.into())
    );
    // Nothing is ever re-applied.
    let err = fails(&env, &["rollback", "--last"]);
    assert!(err.contains("nothing to undo"), "{err}");
    assert_eq!(
        (env.read("f.txt"), env.read("g.txt")),
        (TEN.into(), TEN.into())
    );
}

#[test]
fn applies_of_one_turn_file_by_file_or_by_review_share_a_checkpoint() {
    let (env, fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    env.write("g.txt", TEN);
    env.write("h.txt", TEN);
    let (mut b, id) = env.with_chat();
    for p in ["f.txt", "g.txt", "h.txt"] {
        b.ok(json!({"action": "context_add", "path": p, "content": TEN}));
    }
    fake.push_sse(response(
        "",
        "Three.",
        vec![
            edit("f.txt", "l2\n", "TWO\n"),
            edit("g.txt", "l3\n", "THREE\n"),
            edit("h.txt", "l4\n", "FOUR\n"),
        ],
    ));
    b.turn("change three");
    let a = b.ok(json!({"action": "apply_file", "path": "f.txt"}));
    let cp = a["checkpoint_id"].as_str().unwrap().to_owned();
    let r = b.ok(json!({"action": "review_get", "path": "g.txt"}));
    let hash = r["files"][0]["disk_hash"].clone();
    let r = b.ok(
        json!({"action": "review_apply", "path": "g.txt", "accept": "all",
                        "expected_disk_hash": hash}),
    );
    assert_eq!(r["checkpoint_id"], cp.as_str(), "{r}");
    let a = b.ok(json!({"action": "apply_file", "path": "h.txt"}));
    assert_eq!(a["checkpoint_id"], cp.as_str());
    let list = b.ok(json!({"action": "checkpoint_list", "chat_id": id}));
    let cps = list["checkpoints"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{list}");
    assert_eq!(cps[0]["files"].as_array().unwrap().len(), 3, "{list}");
    assert!(cps[0]["turn_id"].as_str().is_some(), "{list}");
    // The chat names the checkpoint its apply made.
    let chat = env.chat_json(&id).to_string();
    assert!(chat.contains(&cp), "{chat}");

    // A hard rollback of it restores all three files; it names what it undid.
    let r = b.ok(json!({"action": "checkpoint_rollback", "checkpoint_id": cp, "mode": "hard_all"}));
    for p in ["f.txt", "g.txt", "h.txt"] {
        assert_eq!(env.read(p), TEN, "{p}: {r}");
    }
    let list = b.ok(json!({"action": "checkpoint_list", "chat_id": id}));
    assert_eq!(list["checkpoints"][1]["rolls_back"], cp.as_str(), "{list}");
}

#[test]
fn undo_in_bb7_chat_undoes_the_whole_apply_then_the_one_before() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN), ("g.txt", TEN)]);
    fake.push_sse(response(
        "",
        "First.",
        vec![edit("g.txt", "l9\n", "NINE\n")],
    ));
    fake.push_sse(response(
        "",
        "Both.",
        vec![
            edit("f.txt", "l2\n", "TWO\n"),
            edit("g.txt", "l3\n", "THREE\n"),
        ],
    ));
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("first\r");
    t.expect("First.");
    t.expect("bb7> ");
    t.type_keys("/apply\r");
    t.expect("applied g.txt");
    t.expect("bb7> ");
    t.type_keys("both\r");
    t.expect("Both.");
    t.expect("bb7> ");
    t.type_keys("/apply\r");
    t.expect("applied g.txt");
    t.expect("bb7> ");
    t.type_keys("/undo\r");
    t.expect("restored g.txt");
    t.expect("bb7> ");
    assert_eq!(env.read("f.txt"), TEN);
    assert_eq!(env.read("g.txt"), TEN.replace("l9\n", "NINE\n"));
    t.type_keys("/undo\r");
    t.expect("restored g.txt");
    t.expect("bb7> ");
    assert_eq!(env.read("g.txt"), TEN);
    t.type_keys("/undo\r");
    t.expect("nothing to undo");
    t.expect("bb7> ");
    assert_eq!(
        (env.read("f.txt"), env.read("g.txt")),
        (TEN.into(), TEN.into())
    );
    t.type_keys("/quit\r");
    t.wait();
}
