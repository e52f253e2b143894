//! File modes on apply (docs/PROTOCOL.md, "Review, apply and rollback"): a file the
//! apply creates gets the mode the umask gives (0644 under umask 022), as an editor's
//! new file would; an existing file keeps its mode.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::{Bb7, Env};
use serde_json::json;

/// bb7 started under `umask`, in a new chat.
fn under_umask(env: &Env, umask: &str) -> (Bb7, String) {
    let script = format!("umask {umask} && exec \"$0\"");
    let mut b = Bb7::spawn_via(&["sh", "-c", &script], &env.home, &env.project, &[]);
    let id = env.init_chat(&mut b);
    (b, id)
}

fn mode(env: &Env, rel: &str) -> u32 {
    std::fs::metadata(env.project.join(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_file_created_by_apply_gets_the_mode_of_the_umask() {
    for (umask, want) in [("022", 0o644), ("027", 0o640)] {
        let env = Env::new();
        let (mut b, id) = under_umask(&env, umask);
        env.plant_output(&id, "src/new.rs", "fn new() {}\n");
        b.ok(json!({"action": "apply_file", "path": "src/new.rs"}));
        assert_eq!(env.read("src/new.rs"), "fn new() {}\n");
        assert_eq!(
            mode(&env, "src/new.rs"),
            want,
            "umask {umask}: {:o}",
            mode(&env, "src/new.rs")
        );
        assert_eq!(b.close().code(), Some(0));
    }
}

#[test]
fn an_existing_file_keeps_its_mode_through_apply_and_review_apply() {
    let env = Env::new();
    let (mut b, id) = under_umask(&env, "022");
    for (rel, m) in [("run.sh", 0o755), ("secret.txt", 0o600)] {
        env.write(rel, "one\ntwo\n");
        std::fs::set_permissions(env.project.join(rel), std::fs::Permissions::from_mode(m))
            .unwrap();
        env.add(&mut b, rel, "one\ntwo\n");
        env.plant_output(&id, rel, "one\nTWO\n");
    }
    b.ok(json!({"action": "apply_file", "path": "run.sh"}));
    assert_eq!(env.read("run.sh"), "one\nTWO\n");
    assert_eq!(mode(&env, "run.sh"), 0o755);
    let r = b.ok(json!({"action": "review_get", "path": "secret.txt"}));
    let hash = r["files"][0]["disk_hash"].clone();
    b.ok(json!({"action": "review_apply", "path": "secret.txt", "accept": "all", "reject": [], "expected_disk_hash": hash}));
    assert_eq!(env.read("secret.txt"), "one\nTWO\n");
    assert_eq!(mode(&env, "secret.txt"), 0o600);
    assert_eq!(b.close().code(), Some(0));
}
