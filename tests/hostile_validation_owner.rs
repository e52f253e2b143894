//! The validation command belongs to its turn and to its bb7: cancelling one planning
//! turn kills that turn's check only, another turn's keeps running; and a bb7 killed
//! with SIGKILL (no handler runs) takes its checks with it — the runner watches a
//! pipe only that bb7 holds (README, "Local, remote and hybrid").
//!
//! Each check writes its shell's PID and the PID of a child that left its process
//! group (`setsid`) into a directory `hybrid_validate_writable` opens, then sleeps.

mod common;

use common::fake_model::FakeModel;
use common::validation::{SRC, hybrid_project, running};
use common::{Bb7, Env};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes `{out}/check-$$` holding the command's PID and its escapee's, then sleeps.
fn command(out: &Path) -> String {
    let out = out.display();
    format!(
        "setsid sleep 3000 </dev/null >/dev/null 2>&1 & \
         echo \"$$ $!\" > {out}/tmp.$$; mv {out}/tmp.$$ {out}/check-$$; sleep 3000"
    )
}

/// A hybrid_auto project whose local model answers `turns` times with a write (so each
/// turn is planned and checked); bb7 started, one chat open with `src/main.rs`.
fn setup(turns: usize) -> (Env, FakeModel, FakeModel, PathBuf, Bb7) {
    let (env, local, remote, out) = hybrid_project(command, turns);
    env.write("src/main.rs", SRC);
    let mut b = Bb7::spawn(&env.home, &env.project, &[("BB7_DEBUG", "0")]);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    b.ok(json!({"action": "context_add", "path": "src/main.rs", "content": SRC}));
    (env, local, remote, out, b)
}

/// The PIDs (command, escapee) of the first `n` checks that wrote theirs (polls
/// counted: a hang guard only).
fn checks(out: &Path, n: usize) -> Vec<(i32, i32)> {
    for _ in 0..6000 {
        let found: Vec<(i32, i32)> = std::fs::read_dir(out)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("check-"))
            .filter_map(|e| {
                let text = std::fs::read_to_string(e.path()).ok()?;
                let mut it = text.split_whitespace().map(|p| p.parse::<i32>().ok());
                Some((it.next()??, it.next()??))
            })
            .collect();
        if found.len() >= n {
            return found;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{n} validation commands never started");
}

/// Waits (counted polls, a hang guard) until neither of `pids` runs.
fn assert_gone(pids: (i32, i32), what: &str) {
    let mut polls = 0;
    while (running(pids.0) || running(pids.1)) && polls < 12000 {
        polls += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !running(pids.0) && !running(pids.1),
        "{what}: the check {pids:?} still runs"
    );
}

#[test]
fn cancelling_one_planning_turn_kills_only_its_own_check() {
    let (_env, _local, _remote, out, mut b) = setup(2);
    let first = b.ok(json!({"action": "chat_get"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    b.ok(json!({"action": "chat_new"}));
    b.ok(json!({"action": "context_add", "path": "src/main.rs", "content": SRC}));
    // Two turns at once, in two chats: both reach their check.
    let a = b.send(json!({"action": "send", "content": "change it", "chat_id": first}));
    let _ = checks(&out, 1);
    let other = b.send(json!({"action": "send", "content": "change it too"}));
    let both = checks(&out, 2);
    assert_eq!(both.len(), 2, "{both:?}");

    assert_eq!(
        b.ok(json!({"action": "cancel", "target_request_id": a}))["type"],
        "ok"
    );
    // `ok` comes after the kill: one check is gone, the other still runs.
    let mut polls = 0;
    while both.iter().all(|&(c, _)| running(c)) && polls < 12000 {
        polls += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    let (gone, kept): (Vec<&(i32, i32)>, Vec<_>) = both.iter().partition(|&&(c, _)| !running(c));
    assert_eq!(gone.len(), 1, "the cancel killed {gone:?}");
    assert_gone(*gone[0], "the cancelled turn's check");
    assert!(
        running(kept[0].0) && running(kept[0].1),
        "the other turn's check {:?} was killed by this cancel",
        kept[0]
    );
    let end = b.stream(&a).pop().unwrap();
    assert!(
        matches!(end["type"].as_str(), Some("done" | "error")),
        "{end}"
    );

    // Its own cancel ends it.
    b.ok(json!({"action": "cancel", "target_request_id": other}));
    assert_gone(*kept[0], "the second cancel");
    let end = b.stream(&other).pop().unwrap();
    assert!(
        matches!(end["type"].as_str(), Some("done" | "error")),
        "{end}"
    );
}

#[test]
fn a_sigkilled_bb7_takes_its_check_with_it() {
    let (_env, _local, _remote, out, mut b) = setup(1);
    b.send(json!({"action": "send", "content": "change it"}));
    let check = checks(&out, 1)[0];
    assert!(running(check.0) && running(check.1), "{check:?}");
    // SIGKILL: bb7 runs no code of its own after it.
    b.kill();
    assert_gone(check, "after bb7 was SIGKILLed");
}
