//! Benchmarks of the model turn through the real binary:
//! - per-chunk forwarding latency: from the fake server writing an SSE event to bb7's
//!   `chunk` line reaching the reader, against a `ping` round trip as the baseline;
//! - cancel latency: from `cancel` to the stream's final message;
//! - `estimate_tokens` on a 200-file, 8 MB context, cold (tokenizer load and counting),
//!   warm (the draft differs each time, as while the user types) and after a context
//!   file changed, and how long a `ping` sent right behind an estimate waits.
//!
//! Run with `cargo bench --bench turn`. Numbers are printed, never asserted.

#[path = "../tests/common/fake_model.rs"]
mod fake_model;
#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Step, done, role, text};
use serde_json::{Value, json};

fn main() {
    let fake = FakeModel::start();
    let (_tmp, home, project) = support::scratch(&fake.url);
    std::fs::create_dir_all(project.join("src")).unwrap();

    let (mut child, stdin, mut stdout) = support::spawn(&home);
    let mut read = move || -> (Value, Instant) {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        (serde_json::from_str(&line).unwrap(), Instant::now())
    };
    let stdin = std::cell::RefCell::new(stdin);
    let send = |v: Value| writeln!(stdin.borrow_mut(), "{v}").unwrap();
    let send_raw = |bytes: &[u8]| {
        let mut s = stdin.borrow_mut();
        s.write_all(bytes).unwrap();
        s.flush().unwrap();
    };

    send(json!({"action": "bb7_init", "project_root": project, "request_id": "i"}));
    read();
    send(json!({"action": "chat_new", "request_id": "c"}));
    read();

    // Baseline: ping round trips.
    let mut pings = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        send(json!({"action": "ping", "request_id": "p"}));
        read();
        pings.push(t.elapsed());
    }
    pings.sort();
    let ping = pings[pings.len() / 2];

    // Chunk forwarding: 300 deltas, 2 ms apart so each is forwarded on its own.
    const CHUNKS: usize = 300;
    let mut steps = vec![role()];
    for i in 0..CHUNKS {
        steps.push(text(&format!("word{i} ")));
        steps.push(Step::Sleep(Duration::from_millis(2)));
    }
    steps.push(done());
    fake.push_sse(steps);
    send(json!({"action": "send", "content": "go", "request_id": "s"}));
    let mut arrivals = Vec::new();
    loop {
        let (m, at) = read();
        match m["type"].as_str() {
            Some("chunk") => arrivals.push(at),
            Some("done") | Some("error") => break,
            _ => {}
        }
    }
    // The first data event is the role chunk; text events follow it one to one.
    let sent = fake.sent_at();
    let mut lat: Vec<Duration> = sent[1..=arrivals.len()]
        .iter()
        .zip(&arrivals)
        .map(|(s, a)| a.saturating_duration_since(*s))
        .collect();
    lat.sort();
    let median = lat[lat.len() / 2];
    let p99 = lat[lat.len() * 99 / 100];
    println!("ping round trip (baseline)       median {ping:>10.3?}");
    println!(
        "chunk forwarding ({} chunks)    median {median:>10.3?}  p99 {p99:>10.3?}",
        lat.len()
    );
    println!(
        "  ratio to ping: median {:.2}x, p99 {:.2}x",
        median.as_secs_f64() / ping.as_secs_f64(),
        p99.as_secs_f64() / ping.as_secs_f64()
    );

    // Cancel: from sending `cancel` mid-stream to the stream's final message (a cancelled
    // turn ends with `error`, code `cancelled`).
    let mut cancels = Vec::new();
    for round in 0..10 {
        fake.push_sse(vec![
            role(),
            text("started "),
            Step::Sleep(Duration::from_secs(5)),
            text("never"),
            done(),
        ]);
        let rid = format!("k{round}");
        send(json!({"action": "send", "content": "go", "request_id": rid}));
        loop {
            let (m, _) = read();
            if m["type"] == "chunk" {
                break;
            }
        }
        let t = Instant::now();
        send(json!({"action": "cancel", "target_request_id": rid, "request_id": "c"}));
        loop {
            let (m, _) = read();
            let last = m["type"] == "done" || m["type"] == "error";
            if last && m["request_id"] == rid.as_str() {
                break;
            }
        }
        cancels.push(t.elapsed());
    }
    cancels.sort();
    let cancel = cancels[cancels.len() / 2];
    println!(
        "cancel to final message (10 runs)   median {cancel:>10.3?}  max {:>10.3?}",
        cancels[cancels.len() - 1]
    );
    println!(
        "  ratio to ping: {:.1}x (target: under 100 ms)",
        cancel.as_secs_f64() / ping.as_secs_f64()
    );

    // estimate_tokens over 200 files, 8 MB.
    let line = "    let value = compute(alpha, beta, gamma); // adjust the running total here\n";
    let per_file = 8 * 1024 * 1024 / 200;
    let content: String = line.repeat(per_file / line.len());
    for i in 0..200 {
        // Each file differs so each has its own file id.
        let c = format!("// file {i}\n{content}");
        send(
            json!({"action": "context_add", "path": format!("src/f{i}.rs"), "content": c, "request_id": "a"}),
        );
        read();
    }
    // Sends `requests` in one write and returns when each reply came, in the order
    // sent (replies may come in another order: an estimate answers when computed).
    let mut exchange = |requests: &[Value]| -> Vec<(Duration, Value)> {
        let t = Instant::now();
        let mut lines = String::new();
        for r in requests {
            lines.push_str(&format!("{r}\n"));
        }
        send_raw(lines.as_bytes());
        let mut got: Vec<Option<(Duration, Value)>> = vec![None; requests.len()];
        while got.iter().any(Option::is_none) {
            let (m, at) = read();
            if let Some(i) = requests
                .iter()
                .position(|r| r["request_id"] == m["request_id"])
            {
                got[i] = Some((at.duration_since(t), m));
            }
        }
        got.into_iter().flatten().collect()
    };
    let estimate =
        |draft: &str| json!({"action": "estimate_tokens", "input_text": draft, "request_id": "e"});
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let first = exchange(&[estimate("draft")]).remove(0);
    let (cold, total) = (first.0, first.1["total"].as_u64().unwrap());
    // As the plugin asks while the user types: the draft differs each time.
    let warm = median(
        (0..10)
            .map(|i| exchange(&[estimate(&format!("draft {i}"))])[0].0)
            .collect(),
    );
    // One context file changed before each estimate: the layout is made again.
    let changed = median(
        (0..10)
            .map(|i| {
                let c = format!("// file 0, version {i}\n{content}");
                exchange(&[json!({"action": "context_update", "path": "src/f0.rs", "content": c, "request_id": "u"})]);
                exchange(&[estimate("draft")])[0].0
            })
            .collect(),
    );
    // A ping sent right behind an estimate: its answer waits for the estimate only if
    // the estimate runs on the request loop.
    let behind: Vec<(Duration, Duration)> = (0..10)
        .map(|i| {
            let r = exchange(&[
                estimate(&format!("again {i}")),
                json!({"action": "ping", "request_id": "p"}),
            ]);
            (r[0].0, r[1].0)
        })
        .collect();
    let ping_behind = median(behind.iter().map(|b| b.1).collect());
    let estimate_with_ping = median(behind.iter().map(|b| b.0).collect());
    println!(
        "estimate_tokens, 200 files / 8 MB: cold {cold:>10.3?}, warm median {warm:>10.3?} ({total} tokens)"
    );
    println!(
        "  warm is {:.1}x faster than cold; warm is {:.0}x a ping",
        cold.as_secs_f64() / warm.as_secs_f64(),
        warm.as_secs_f64() / ping.as_secs_f64()
    );
    println!(
        "estimate_tokens after a context file changed: median {changed:>10.3?} ({:.1}x the warm one)",
        changed.as_secs_f64() / warm.as_secs_f64()
    );
    println!(
        "ping sent right behind an estimate: answered in {ping_behind:>10.3?} ({:.1}x a ping; the estimate took {estimate_with_ping:.3?})",
        ping_behind.as_secs_f64() / ping.as_secs_f64()
    );
    child.kill().ok();
    child.wait().ok();
}
