//! Benchmarks of the model turn through the real binary:
//! - per-chunk forwarding latency: from the fake server writing an SSE event to bb7's
//!   `chunk` line reaching the reader, against a `ping` round trip as the baseline;
//! - cancel latency: from `cancel` to the stream's final message;
//! - `estimate_tokens` on a 200-file, 8 MB context, cold (tokenizer load and counting)
//!   and warm (counts cached by file id).
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

    let (mut child, mut stdin, mut stdout) = support::spawn(&home);
    let mut read = move || -> (Value, Instant) {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        (serde_json::from_str(&line).unwrap(), Instant::now())
    };
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();

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
    let mut time_estimate = || {
        let t = Instant::now();
        send(json!({"action": "estimate_tokens", "input_text": "draft", "request_id": "e"}));
        let (m, _) = read();
        assert_eq!(m["type"], "token_estimate");
        (t.elapsed(), m["total"].as_u64().unwrap())
    };
    let (cold, total) = time_estimate();
    let mut warm: Vec<Duration> = (0..10).map(|_| time_estimate().0).collect();
    warm.sort();
    let warm = warm[warm.len() / 2];
    println!(
        "estimate_tokens, 200 files / 8 MB: cold {cold:>10.3?}, warm median {warm:>10.3?} ({total} tokens)"
    );
    println!(
        "  warm is {:.1}x faster than cold; warm is {:.0}x a ping",
        cold.as_secs_f64() / warm.as_secs_f64(),
        warm.as_secs_f64() / ping.as_secs_f64()
    );
    child.kill().ok();
    child.wait().ok();
}
