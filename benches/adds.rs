//! Context adds through the real binary: the cost of one `context_add` after 100,
//! 10,000 and 50,000 adds to the same chat (flat when adds append to the chat's
//! journal instead of rewriting `chat.json`, docs/ARCHITECTURE.md "Durability" 10),
//! and the first `estimate_tokens` right after a burst of 200 adds (8 MB), next to the
//! reference BB-7's 3.4 s for the same burst.
//!
//! Every figure is printed next to a `ping` round trip measured in the same process, as
//! a ratio; numbers are printed, never asserted. Run with `cargo bench --bench adds`
//! (`-- quick` stops at 10,000 adds, `-- estimate` runs only the estimate).

#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The reference BB-7's first estimate after adding 200 files of 8 MB in all.
const REFERENCE_FIRST_ESTIMATE: Duration = Duration::from_millis(3400);

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let only_estimate = std::env::args().any(|a| a == "estimate");
    let (_tmp, home, project) = support::scratch("http://127.0.0.1:9");
    let (mut child, mut stdin, mut stdout) = support::spawn(&home);
    let mut next = 0u64;
    let mut call = |req: Value| -> (Value, Duration) {
        next += 1;
        let mut req = req;
        req["request_id"] = json!(format!("r{next}"));
        let t = Instant::now();
        writeln!(stdin, "{req}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "bb7 ended");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["request_id"] == req["request_id"] {
                return (v, t.elapsed());
            }
        }
    };
    call(json!({"action": "bb7_init", "project_root": project}));
    call(json!({"action": "chat_new"}));

    let total = match (only_estimate, quick) {
        (true, _) => 0,
        (false, true) => 10_000,
        (false, false) => 50_000,
    };
    let marks = [100usize, 1_000, 10_000, 50_000];
    let mut window = Vec::new();
    let started = Instant::now();
    for i in 1..=total {
        let path = format!("d{:03}/f{i:05}.txt", i / 500);
        let (r, took) = call(json!({"action": "context_add", "path": path,
                                    "content": format!("file {i}\n")}));
        assert_eq!(r["type"], "ok", "{r}");
        window.push(took);
        if window.len() > 100 {
            window.remove(0);
        }
        if marks.contains(&i) {
            let m = median(window.clone());
            // A ping measured here too: on a loaded machine the ratio to it is what
            // compares from mark to mark.
            let here = median(
                (0..100)
                    .map(|_| call(json!({"action": "ping"})).1)
                    .collect(),
            );
            println!(
                "context_add at {i:>6} adds (median of the last 100): {m:>9.1?}  {:>5.1}x ping ({here:.1?} here)",
                m.as_secs_f64() / here.as_secs_f64()
            );
        }
    }
    if total > 0 {
        println!("{total} adds took {:.1?}", started.elapsed());
    }

    // A new chat: 200 files, 8 MB, then at once the first estimate.
    call(json!({"action": "chat_new"}));
    let line = "    let value = compute(alpha, beta, gamma); // adjust the running total here\n";
    let body = line.repeat(8 * 1024 * 1024 / 200 / line.len());
    let burst = Instant::now();
    for i in 0..200 {
        let content = format!("// file {i}\n{body}");
        call(json!({"action": "context_add", "path": format!("src/g{i}.rs"), "content": content}));
    }
    println!("200 adds (8 MB) took {:.1?}", burst.elapsed());
    let (r, first) = call(json!({"action": "estimate_tokens", "input_text": "draft"}));
    assert_eq!(r["type"], "token_estimate", "{r}");
    println!(
        "first estimate_tokens after 200 adds (8 MB): {first:.1?}  {:.2}x the reference's {:.1?}",
        first.as_secs_f64() / REFERENCE_FIRST_ESTIMATE.as_secs_f64(),
        REFERENCE_FIRST_ESTIMATE
    );
    let (_, second) = call(json!({"action": "estimate_tokens", "input_text": "draft 2"}));
    println!("the next estimate (a new draft): {second:.1?}");
    call(json!({"action": "shutdown"}));
    let _ = child.wait();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}
