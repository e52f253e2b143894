//! Benchmarks of the state layer through the real binary: `chat_list` and
//! `search_chats` over 2,000 chats of 50 messages each, `events_get` on a trace of
//! 50,000 events (its first page and its last), and startup-to-first-reply.
//! Numbers are printed with a baseline measured in the same run (a `ping` round trip),
//! never asserted. Run with `cargo bench --bench core`.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "support/mod.rs"]
mod support;

const CHATS: usize = 2000;
const MESSAGES: usize = 50;
const EVENTS: u64 = 50_000;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    let chats = project.join(".bb7/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let t = Instant::now();
    let mut index = Vec::new();
    for c in 0..CHATS {
        let id = format!("{c:010x}");
        let messages: Vec<_> = (0..MESSAGES)
            .map(|m| {
                json!({
                    "role": if m % 2 == 0 { "user" } else { "assistant" },
                    "parts": [{"type": "text", "content": format!(
                        "Message {m} of chat {c}: please refactor the parser module so that \
                         error recovery keeps going after a bad token, and explain the change. {}",
                        if c == CHATS / 2 && m == 25 { "needle-in-haystack" } else { "" })}],
                    "timestamp": "2026-01-01T00:00:00Z"
                })
            })
            .collect();
        let chat = json!({"version": 2, "id": id, "name": format!("Chat number {c}"),
            "created": format!("2026-01-01T00:{:02}:{:02}Z", (c / 60) % 60, c % 60),
            "model": "m", "draft": "", "context_files": [], "messages": messages});
        std::fs::create_dir_all(chats.join(&id)).unwrap();
        std::fs::write(
            chats.join(&id).join("chat.json"),
            serde_json::to_vec(&chat).unwrap(),
        )
        .unwrap();
        index.push(
            json!({"id": id, "name": format!("Chat number {c}"), "created": chat["created"]}),
        );
    }
    // One chat's event trace, long: a poll after its end reads a page, not the file.
    let traced = format!("{:010x}", CHATS / 3);
    let mut trace = String::new();
    for seq in 1..=EVENTS {
        let event = json!({"seq": seq, "job_id": format!("job_{}", seq / 8),
            "time": "2026-01-01T00:00:00.000Z", "type": "tool.call.completed",
            "data": {"tool": "read_file", "path": format!("src/module_{seq}.rs"),
                     "status": "completed", "result_bytes": 4096, "result_lines": 120}});
        trace.push_str(&event.to_string());
        trace.push('\n');
    }
    std::fs::write(chats.join(&traced).join("events.jsonl"), trace).unwrap();
    std::fs::write(
        chats.join("index.json"),
        json!({"version": 1, "chats": index}).to_string(),
    )
    .unwrap();
    println!(
        "generated {CHATS} chats x {MESSAGES} messages in {:?}",
        t.elapsed()
    );

    let spawn = || support::spawn(&home);

    // Startup to first reply: spawn, send ping, read the reply.
    let mut startup = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let (mut child, mut stdin, mut stdout) = spawn();
        writeln!(stdin, r#"{{"action":"ping","request_id":1}}"#).unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        startup.push(t.elapsed());
        drop(stdin);
        child.wait().unwrap();
    }

    let (mut child, mut stdin, mut stdout) = spawn();
    let mut call = |req: serde_json::Value| -> (Duration, usize) {
        let t = Instant::now();
        writeln!(stdin, "{req}").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        (t.elapsed(), line.len())
    };
    call(json!({"action": "init", "project_root": project, "request_id": 0}));
    let mut measure = |name: &str, req: serde_json::Value, n: usize| -> Duration {
        let mut times: Vec<Duration> = (0..n).map(|_| call(req.clone()).0).collect();
        times.sort();
        let median = times[n / 2];
        let bytes = call(req).1;
        println!("{name:<34} median {median:>10.3?}  (reply {bytes} bytes)");
        median
    };
    let ping = measure(
        "ping (baseline)",
        json!({"action": "ping", "request_id": 1}),
        200,
    );
    let list = measure(
        "chat_list",
        json!({"action": "chat_list", "request_id": 2}),
        30,
    );
    let title = measure(
        "search_chats (title hit)",
        json!({"action": "search_chats", "query": "number 1999", "request_id": 3}),
        10,
    );
    let content = measure(
        "search_chats (one content hit)",
        json!({"action": "search_chats", "query": "needle-in-haystack", "request_id": 4}),
        10,
    );
    let miss = measure(
        "search_chats (no hit)",
        json!({"action": "search_chats", "query": "zebra", "request_id": 5}),
        10,
    );
    let events_first = measure(
        "events_get (first page of 50,000)",
        json!({"action": "events_get", "chat_id": traced, "after": 0, "request_id": 6}),
        10,
    );
    let events_tail = measure(
        "events_get (after event 49,990)",
        json!({"action": "events_get", "chat_id": traced, "after": EVENTS - 10, "request_id": 7}),
        30,
    );
    startup.sort();
    let start = startup[startup.len() / 2];
    println!("{:<34} median {start:>10.3?}", "startup to first reply");
    println!();
    println!("ratios to the ping round trip measured above:");
    for (name, d) in [
        ("chat_list", list),
        ("search title", title),
        ("search content", content),
        ("search miss", miss),
        ("events first", events_first),
        ("events tail", events_tail),
        ("startup", start),
    ] {
        println!(
            "  {name:<16} {:>8.1}x",
            d.as_secs_f64() / ping.as_secs_f64()
        );
    }
    drop(stdin);
    child.wait().unwrap();
}
