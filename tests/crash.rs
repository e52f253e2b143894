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
