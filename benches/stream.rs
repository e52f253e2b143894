//! A 2 MB answer that writes one file, streamed through the real binary: once as a
//! `write_file` tool call (arguments in 2,000 fragments), once as a SEARCH/REPLACE block
//! in the answer text (2,000 text deltas, `edit_format: "blocks"`). Prints the median
//! time from `send` to `done` of each and their ratio: parsing blocks as the answer
//! streams should cost no measurable time.
//!
//! Run with `cargo bench --bench stream`. Numbers are printed, never asserted.

#[path = "../tests/common/fake_model.rs"]
mod fake_model;
#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use fake_model::{FakeModel, Step, done, role, text, tool_call};
use serde_json::{Value, json};

const SIZE: usize = 2 * 1024 * 1024;
const PIECES: usize = 2000;
const RUNS: usize = 7;

fn main() {
    let fake = FakeModel::start();
    let (_tmp, home, project) = support::scratch(&fake.url);
    let (mut child, mut stdin, mut stdout) = support::spawn(&home);
    let mut call = |v: Value| -> Value {
        writeln!(stdin, "{v}").unwrap();
        let id = v["request_id"].as_str().unwrap_or("").to_owned();
        loop {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            let m: Value = serde_json::from_str(&line).unwrap();
            let last = matches!(
                m["type"].as_str(),
                Some("done" | "error" | "diff_error" | "ok")
            );
            if m["request_id"] == id.as_str() && last {
                return m;
            }
        }
    };
    call(json!({"action": "bb7_init", "project_root": project, "request_id": "i"}));

    let line = "let value = compute(input, 42); // a line of generated code\n";
    let content: String = line.repeat(SIZE / line.len());
    let mut measure = |format: &str, steps: &dyn Fn(usize) -> Vec<Step>| -> Duration {
        let mut times = Vec::new();
        for run in 0..RUNS {
            call(json!({"action": "chat_new", "request_id": "n"}));
            call(json!({"action": "save_chat_settings", "edit_format": format, "request_id": "s"}));
            fake.push_sse(steps(run));
            let t = Instant::now();
            let end = call(
                json!({"action": "send", "content": "write it", "request_id": format!("{format}{run}")}),
            );
            times.push(t.elapsed());
            assert_eq!(end["type"], "done", "{format}: {end}");
        }
        times.sort();
        times[RUNS / 2]
    };
    let tools = measure("tools", &|run| {
        let mut steps = vec![role(), text("Here is the file.")];
        steps.extend(tool_call(
            0,
            "write_file",
            json!({"path": format!("t{run}.rs"), "content": content}),
            PIECES,
        ));
        steps.push(done());
        steps
    });
    let blocks = measure("blocks", &|run| {
        let answer = format!(
            "Here is the file.\n\nt{run}b.rs\n```rust\n<<<<<<< SEARCH\n=======\n{content}>>>>>>> REPLACE\n```\n"
        );
        let step = answer.len().div_ceil(PIECES);
        let mut steps = vec![role()];
        let mut rest = answer.as_str();
        while !rest.is_empty() {
            let mut cut = step.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            steps.push(text(&rest[..cut]));
            rest = &rest[cut..];
        }
        steps.push(done());
        steps
    });
    println!("2 MB answer writing one file, send -> done, median of {RUNS}:");
    println!("  as a write_file tool call   {tools:>10.3?}");
    println!("  as a SEARCH/REPLACE block   {blocks:>10.3?}");
    println!(
        "  blocks / tools               {:.3}x",
        blocks.as_secs_f64() / tools.as_secs_f64()
    );
    drop(child.kill());
}
