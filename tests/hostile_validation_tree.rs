//! No process the validation command starts outlives its check, not even one that left
//! the command's process group with `setsid`: it is gone when the check ends, when the
//! turn is cancelled and when bb7 exits (README, "Local, remote and hybrid").
//!
//! The escapee writes its PID into a directory the user's `hybrid_validate_writable`
//! opens, then, six seconds later, a marker; the command waits for the PID before it
//! goes on, so the escapee is running when the check would end without it. (Six, not
//! two: on a loaded machine bb7 may take seconds to end the check and its tree, and a
//! marker written before that is no fault of bb7.)

mod common;

use common::fake_model::FakeModel;
use common::validation::{SRC, hybrid_project, running};
use common::{Bb7, Env};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The escapee, then a wait for its PID file; `rest` follows.
fn command(out: &Path, rest: &str) -> String {
    let out = out.display();
    format!(
        "setsid sh -c 'echo $$ > {out}/pid.tmp; mv {out}/pid.tmp {out}/pid; sleep 6; touch {out}/marker' \
         </dev/null >/dev/null 2>&1 & \
         while [ ! -s {out}/pid ]; do sleep 0.05; done; {rest}"
    )
}

fn setup(rest: &str) -> (Env, FakeModel, FakeModel, PathBuf, Bb7) {
    let (env, local, remote, out) = hybrid_project(|out| command(out, rest), 1);
    let mut b = Bb7::spawn(&env.home, &env.project, &[("BB7_DEBUG", "0")]);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    env.add(&mut b, "src/main.rs", SRC);
    (env, local, remote, out, b)
}

/// The escapee's PID, once it wrote it (polls counted: a hang guard only).
fn escapee(out: &Path) -> i32 {
    for _ in 0..3000 {
        if let Some(pid) = std::fs::read_to_string(out.join("pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the validation command never started its escapee");
}

/// The escapee is gone and, past the time it would have written it, its marker was
/// never written.
fn assert_gone(out: &Path, pid: i32) {
    // A hang guard of 12000 polls, not a speed bound.
    let mut polls = 0;
    while running(pid) && polls < 12000 {
        polls += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!running(pid), "the setsid child {pid} outlived the check");
    std::thread::sleep(Duration::from_secs(7));
    assert!(
        !out.join("marker").exists(),
        "the setsid child wrote its marker"
    );
}

#[test]
fn a_setsid_child_ends_with_the_check() {
    let (_env, _l, _r, out, mut b) = setup("exit 0");
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["provider"], "local", "the check passed: {end}");
    assert_gone(&out, escapee(&out));
}

#[test]
fn a_setsid_child_ends_when_the_turn_is_cancelled() {
    let (_env, _l, _r, out, mut b) = setup("sleep 3000");
    let rid = b.send(json!({"action": "send", "content": "change it"}));
    let pid = escapee(&out);
    assert_eq!(
        b.ok(json!({"action": "cancel", "target_request_id": rid}))["type"],
        "ok"
    );
    assert_gone(&out, pid);
    let end = b.stream(&rid).pop().unwrap();
    assert!(
        matches!(end["type"].as_str(), Some("done" | "error")),
        "{end}"
    );
}

#[test]
fn a_setsid_child_ends_when_bb7_exits() {
    let (_env, _l, _r, out, mut b) = setup("sleep 3000");
    b.send(json!({"action": "send", "content": "change it"}));
    let pid = escapee(&out);
    assert!(b.close().success());
    assert_gone(&out, pid);
}
