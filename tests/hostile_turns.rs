//! Hostile ground in a turn's background work, through the real binary: closing bb7
//! while a huge edit is planned, cancelling a turn whose retrieval read is slow, and a
//! bug inside planning (invariants 2 and 15 in docs/ARCHITECTURE.md).

mod common;

use std::time::{Duration, Instant};

use common::fake_model::*;
use common::{Bb7, Env, assert_a_turn_writes, assert_answer_then_note, fake_env};
use serde_json::json;

/// Waits until the fake model has written `n` data events of its answers (a hang
/// guard of 6000 polls, not a speed bound: a loaded machine may take long).
fn wait_until_sent(fake: &FakeModel, n: usize) {
    let mut polls = 0;
    while fake.sent_at().len() < n {
        polls += 1;
        assert!(polls < 6000, "the fake model never sent its answer");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn closing_bb7_while_a_huge_edit_is_planned_keeps_the_answer() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.txt", "fn main() {\n    println!(\"hi\");\n}\n");
    // Three calls whose edit matches nothing, each one line of 20 MB: planning them
    // takes seconds.
    let huge = "x".repeat(20 << 20);
    let mut steps = vec![role(), text("I tried a big edit.")];
    for i in 0..3 {
        let edit = json!({"old_string": format!("{huge}{i}"), "new_string": "y"});
        let args = json!({"path": "a.txt", "edits": [edit]});
        steps.extend(tool_call(i, "edit_file", args, 40));
    }
    steps.extend([finish("tool_calls"), done()]);
    let events = steps.len();
    fake.push_sse(steps);
    let rid = b.send(json!({"action": "send", "content": "edit"}));
    b.wait_for_text(&rid, "I tried a big edit.");
    // The whole answer is sent; bb7 reads its end and starts planning.
    wait_until_sent(&fake, events);
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    b.send(json!({"action": "shutdown"}));
    // bb7 stops waiting for the plan after a grace of 1 s (an editor kills its job about
    // 2 s after stopping it) and exits by itself with the answer saved; how soon depends
    // on the machine's load, so the test waits for the exit rather than killing at 2 s.
    let status = common::wait_with_timeout(&mut b.child);
    eprintln!("bb7 exited after {:?}", t.elapsed());
    assert_eq!(status.code(), Some(0));
    assert_answer_then_note(&env.history(&id), "I tried a big edit.", "interrupted");
    assert_eq!(env.output(&id, "a.txt"), None);
}

#[test]
fn a_bug_while_planning_costs_that_turn_only_and_keeps_its_answer() {
    if !cfg!(debug_assertions) {
        eprintln!("note: the planning hook exists in debug builds only; skipped");
        return;
    }
    let (env, fake) = fake_env(json!({}));
    let mut b = Bb7::spawn(
        &env.home,
        &env.project,
        &[("BB7_TEST_PANIC_PLANNING", "PANIC-IN-PLANNING")],
    );
    let id = env.init_chat(&mut b);
    env.add(&mut b, "a.txt", "a\n");
    fake.push_sse(response(
        "",
        "Here is the change.",
        vec![(
            "write_file",
            json!({"path": "a.txt", "content": "PANIC-IN-PLANNING\n"}),
        )],
    ));
    let end = b.turn("change a");
    assert_eq!(end["type"], "error", "{end}");
    assert_eq!(end["code"], "internal", "{end}");
    assert_eq!(env.output(&id, "a.txt"), None);
    assert_answer_then_note(&env.history(&id), "Here is the change.", "Internal error");
    // bb7 keeps serving, and the chat is free for the next turn.
    b.ok(json!({"action": "ping"}));
    assert_a_turn_writes(&mut b, &fake, &env, &id);
    assert_eq!(b.close().code(), Some(0));
}

/// User and system CPU time of process `pid` so far (`/proc/PID/stat`, fields 14 and
/// 15, in clock ticks of 1/100 s on Linux).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u64> = rest
        .split(' ')
        .skip(11)
        .take(2)
        .map(|f| f.parse().unwrap())
        .collect();
    Duration::from_millis((fields[0] + fields[1]) * 10)
}

/// A project whose search reads gigabytes: one file of nearly 1 MB (the search's limit
/// per file) under `links` names, as hard links, so it costs a megabyte of disk.
fn slow_to_search(env: &Env, links: usize) {
    let line = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod\n";
    let text = line.repeat(1_000_000 / line.len());
    env.write("big/f0.txt", &text);
    let first = env.project.join("big/f0.txt");
    for i in 1..links {
        std::fs::hard_link(&first, env.project.join(format!("big/f{i}.txt"))).unwrap();
    }
}

#[test]
fn cancel_ends_a_turn_whose_retrieval_read_is_slow() {
    let (env, fake) = fake_env(json!({}));
    slow_to_search(&env, 3000);
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "save_chat_settings", "tools": "auto"}));
    let mut steps = vec![role(), text("Let me look.")];
    steps.extend(tool_call(
        0,
        "search_project",
        json!({"query": "needle"}),
        1,
    ));
    steps.extend([finish("tool_calls"), done()]);
    fake.push_sse(steps);
    let rid = b.send(json!({"action": "send", "content": "find the needle"}));
    loop {
        let m = b.reply_to(&rid);
        assert_ne!(
            m["type"], "done",
            "the read ended before the test could cancel it"
        );
        if m["type"] == "tool_call" && m["status"] == "requested" {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    b.ok(json!({"action": "ping"}));
    b.ok(json!({"action": "cancel", "target_request_id": rid}));
    let end = b.stream(&rid).pop().unwrap();
    eprintln!("cancel ended the turn in {:?}", t.elapsed());
    assert_eq!(end["code"], "cancelled", "{end}");
    // The search stops with the turn: bb7 is idle, not still reading gigabytes.
    let before = cpu_time(b.child.id());
    std::thread::sleep(Duration::from_millis(1500));
    let busy = cpu_time(b.child.id()) - before;
    assert!(
        busy < Duration::from_millis(300),
        "bb7 used {busy:?} of CPU in the 1.5 s after the cancel"
    );
    let h = env.history(&id);
    assert!(h.iter().any(|(_, t)| t.contains("Let me look.")), "{h:?}");
    // One model call: the read's result never went back to the model.
    assert_eq!(fake.chat_bodies().len(), 1);
    assert_eq!(b.close().code(), Some(0));
}
