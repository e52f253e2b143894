//! Crash consistency (docs/ARCHITECTURE.md, "Durability"): bb7 is killed with SIGKILL
//! at random points of `context_add`, `context_update`, `send` with tool calls and
//! `apply_file`, 200 times; after every kill a new process must open the chat, and
//! every listed context file and every output must read back.

mod common;

use std::time::Duration;

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

const KILLS: usize = 200;
const FILES: usize = 6;

/// A small deterministic generator, so a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn path(i: usize) -> String {
    format!("src/mod{i:02}.py")
}

fn content(i: usize, round: usize) -> String {
    (0..30)
        .map(|l| format!("line {l} of file {i} round {round}\n"))
        .collect()
}

fn open(env: &Env, id: &str) -> Bb7 {
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    b
}

/// Opens the chat in a fresh process and reads back everything it lists.
fn check(env: &Env, id: &str, kill: usize) -> Vec<String> {
    let mut b = open(env, id);
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["id"], id, "after kill {kill}");
    // (get_file_statuses would read the same files but also count tokens, which is
    // slow in debug builds; the review lists every output and reads the snapshots.)
    for f in chat["context_files"].as_array().unwrap() {
        let mut req = json!({"action": "get_context_file", "path": f["path"]});
        if !f["start_line"].is_null() {
            req["start_line"] = f["start_line"].clone();
            req["end_line"] = f["end_line"].clone();
        }
        let r = b.request(req);
        assert_eq!(r["type"], "file_content", "after kill {kill}: {f}: {r}");
    }
    let review = b.ok(json!({"action": "review_get"}));
    let mut outputs = Vec::new();
    for f in review["files"].as_array().unwrap() {
        let p = f["path"].as_str().unwrap();
        let r = b.request(json!({"action": "get_output_file", "path": p}));
        assert_eq!(r["type"], "file_content", "after kill {kill}: {p}: {r}");
        outputs.push(p.to_owned());
    }
    assert_eq!(b.close().code(), Some(0), "after kill {kill}");
    outputs
}

fn model_writes(fake: &FakeModel, round: usize) {
    let calls: Vec<(&str, Value)> = (0..3)
        .map(|k| {
            let i = (round + k) % FILES;
            (
                "write_file",
                json!({"path": path(i), "content": content(i, round + 1000)}),
            )
        })
        .collect();
    fake.push_sse(response("", "done", calls));
}

#[test]
fn sigkill_at_random_points_leaves_every_chat_whole() {
    let (env, fake) = fake_env(json!({}));
    for i in 0..FILES {
        env.write(&path(i), &content(i, 0));
    }
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": path(0), "content": content(0, 0)}));
    assert_eq!(b.close().code(), Some(0));

    let mut rng = Lcg(0x5eed_b007);
    let mut outputs: Vec<String> = Vec::new();
    for kill in 0..KILLS {
        let mut b = open(&env, &id);
        let op = kill % 4;
        match op {
            // context_add of files not yet in context (removing first keeps it busy).
            0 => {
                for k in 0..FILES {
                    let i = (kill + k) % FILES;
                    b.send(json!({"action": "context_remove", "path": path(i)}));
                    b.send(json!({"action": "context_add", "path": path(i), "content": content(i, kill)}));
                }
            }
            1 => {
                for i in 0..FILES {
                    b.send(json!({"action": "context_update", "path": path(i), "content": content(i, kill)}));
                }
            }
            2 => {
                model_writes(&fake, kill);
                b.send(json!({"action": "send", "content": format!("round {kill}")}));
            }
            _ => {
                for p in &outputs {
                    b.send(json!({"action": "apply_file", "path": p, "force": true}));
                }
                b.send(json!({"action": "ping"}));
            }
        }
        let delay = Duration::from_micros(rng.next() % 12_000);
        std::thread::sleep(delay);
        b.kill();
        outputs = check(&env, &id, kill);
    }
}

/// What a power loss before the background flush can leave (docs/ARCHITECTURE.md,
/// "Durability" 8): a dead writer's marker, one snapshot emptied and one torn. The chat
/// opens, the two entries are dropped with remove events, the whole one stays, and
/// the marker is gone afterwards.
#[test]
fn a_power_loss_before_the_flush_drops_torn_snapshots_and_opens() {
    let (env, _fake) = fake_env(json!({}));
    for i in 0..3 {
        env.write(&path(i), &content(i, 0));
    }
    let (mut b, id) = env.with_chat();
    for i in 0..3 {
        b.ok(json!({"action": "context_add", "path": path(i), "content": content(i, 0)}));
    }
    assert_eq!(b.close().code(), Some(0));
    let dir = env.chat_dir(&id);
    let leftover = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".unflushed-"))
            .count()
    };
    assert_eq!(
        leftover(&dir),
        0,
        "a clean exit flushes and drops its marker"
    );
    // PIDs above the kernel's maximum never run.
    std::fs::write(dir.join(".unflushed-99999999"), b"").unwrap();
    std::fs::write(dir.join("context").join(path(0)), b"").unwrap();
    std::fs::write(dir.join("context").join(path(1)), &content(1, 0)[..40]).unwrap();

    let mut b = open(&env, &id);
    let listed = b.ok(json!({"action": "context_list"}));
    let paths: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec![path(2).as_str()]);
    let chat = b.ok(json!({"action": "chat_get"}));
    let removed: Vec<&Value> = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .filter(|p| p["action"] == "UserRemoveFile")
        .collect();
    assert_eq!(removed.len(), 2, "{removed:?}");
    assert_eq!(b.close().code(), Some(0));
    assert_eq!(leftover(&dir), 0, "the dead writer's marker is cleared");
}

/// A new chat whose `chat.json` a power loss left empty before its first flush opens
/// as an empty chat under the name the index kept.
#[test]
fn a_power_loss_before_a_new_chats_first_flush_opens_it_empty() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "chat_rename", "id": id, "name": "Kept name"}));
    assert_eq!(b.close().code(), Some(0));
    let dir = env.chat_dir(&id);
    std::fs::write(dir.join(".unflushed-99999999"), b"").unwrap();
    std::fs::write(dir.join("chat.json"), b"").unwrap();
    let mut b = open(&env, &id);
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["name"], "Kept name");
    assert_eq!(b.close().code(), Some(0));

    // Without a marker the damage is reported, not papered over.
    std::fs::write(dir.join("chat.json"), b"").unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let r = b.request(json!({"action": "chat_select", "id": id}));
    assert_eq!(r["type"], "error", "{r}");
}

#[test]
fn with_sync_writes_a_reply_comes_after_the_flush_and_leaves_no_marker() {
    let markers = |sync: bool| {
        let (env, _fake) = fake_env(json!({"sync_writes": sync}));
        env.write("a.txt", "one\n");
        let (mut b, id) = env.with_chat();
        b.ok(json!({"action": "context_add", "path": "a.txt", "content": "one\n"}));
        // Read at once, while the process still runs: a deferred flush has not
        // happened yet (it waits for 30 ms without writes).
        let n = std::fs::read_dir(env.chat_dir(&id))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".unflushed-"))
            .count();
        b.kill();
        n
    };
    assert_eq!(markers(true), 0, "sync_writes flushes before the reply");
    assert_eq!(
        markers(false),
        1,
        "by default the flush comes after the reply"
    );
}

/// The context journal (docs/ARCHITECTURE.md, "Durability" 10) under SIGKILL: a run of
/// adds is killed after a random number of replies; every add that was answered is in
/// the chat when it opens again, no entry is there twice, and every snapshot reads
/// back. Some rounds end cleanly instead, folding the journal into `chat.json`.
#[test]
fn sigkill_in_a_run_of_adds_keeps_every_answered_add() {
    let (env, _fake) = fake_env(json!({}));
    let (b, id) = env.with_chat();
    assert_eq!(b.close().code(), Some(0));
    let mut rng = Lcg(0x00ad_d50f_f11e);
    let mut answered: Vec<String> = Vec::new();
    for round in 0..40 {
        let mut b = open(&env, &id);
        let ids: Vec<(String, String)> = (0..24)
            .map(|j| {
                let p = format!("r{round:02}/f{j:02}.txt");
                env.write(&p, &format!("round {round} file {j}\n"));
                let rid = b.send(json!({"action": "context_add", "path": p,
                                        "content": format!("round {round} file {j}\n")}));
                (rid, p)
            })
            .collect();
        let wait = (rng.next() % 24) as usize;
        for (rid, p) in &ids[..wait] {
            assert_eq!(b.reply_to(rid)["type"], "ok", "round {round}: {p}");
            answered.push(p.clone());
        }
        if round % 5 == 4 {
            for (rid, p) in &ids[wait..] {
                assert_eq!(b.reply_to(rid)["type"], "ok", "round {round}: {p}");
                answered.push(p.clone());
            }
            assert_eq!(b.close().code(), Some(0));
        } else {
            std::thread::sleep(Duration::from_micros(rng.next() % 3_000));
            b.kill();
        }
        check(&env, &id, round);
        let mut b = open(&env, &id);
        let listed = b.ok(json!({"action": "context_list"}));
        let paths: Vec<String> = listed["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect();
        let unique: std::collections::HashSet<&String> = paths.iter().collect();
        assert_eq!(unique.len(), paths.len(), "round {round}: an entry twice");
        for p in &answered {
            assert!(paths.contains(p), "round {round}: answered add {p} lost");
        }
        answered = paths;
        assert_eq!(b.close().code(), Some(0));
    }
}

/// A journal whose last line a power loss cut: the chat opens with every whole line,
/// and the next add starts a journal of its own that the next open reads.
#[test]
fn a_torn_journal_tail_is_dropped_and_adds_go_on() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    for i in 0..3 {
        env.write(&path(i), &content(i, 0));
        b.ok(json!({"action": "context_add", "path": path(i), "content": content(i, 0)}));
    }
    b.kill();
    let dir = env.chat_dir(&id);
    let journal = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".jsonl"))
        .expect("the adds went to a journal");
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"{\"entry\":{\"path\":\"torn");
    std::fs::write(&journal, bytes).unwrap();
    let mut b = open(&env, &id);
    let listed = b.ok(json!({"action": "context_list"}));
    assert_eq!(listed["files"].as_array().unwrap().len(), 3, "{listed}");
    env.write(&path(3), &content(3, 0));
    b.ok(json!({"action": "context_add", "path": path(3), "content": content(3, 0)}));
    b.kill();
    let mut b = open(&env, &id);
    let listed = b.ok(json!({"action": "context_list"}));
    assert_eq!(listed["files"].as_array().unwrap().len(), 4, "{listed}");
    assert_eq!(b.close().code(), Some(0));
}
