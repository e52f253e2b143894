//! The prompt cache over a scripted 7-turn chat (one read-only and three writable files
//! of about 20 KB, an edit, a new file, a re-added file) through the real binary and the
//! fake endpoint, which simulates a provider's cache: per turn, the share of the
//! request that repeats the previous request's beginning, the prompt and cached tokens
//! the usage reports, and the input cost with and without the cache at Claude Sonnet's
//! prices ($3 per million input tokens, $0.30 read from the cache, $3.75 written to
//! it). Run with `cargo bench --bench cache` (or `cargo test --bench cache` for a quick
//! unoptimized run: the figures are the same). Numbers are printed, never asserted.

#[path = "../tests/common/mod.rs"]
mod common;

use common::fake_env;
use common::fake_model::{prompt_text, response, shared_prefix};
use serde_json::{Value, json};

const INPUT: f64 = 3.0e-6;
const READ: f64 = 0.3e-6;
const WRITE: f64 = 3.75e-6;

fn source(name: &str) -> String {
    (0..800)
        .map(|i| format!("def {name}_{i}(x):  # {name}\n"))
        .collect()
}

fn main() {
    for model in ["anthropic/claude-sonnet-4.5", "openai/gpt-5"] {
        run(model);
    }
}

fn run(model: &str) {
    let (env, fake) = fake_env(json!({"default_model": model}));
    fake.simulate_cache();
    let (mut b, _id) = env.with_chat();
    let docs = source("doc");
    env.write("docs.md", &docs);
    b.ok(json!({"action": "context_add", "path": "docs.md", "content": docs, "readonly": true}));
    for f in ["a.py", "b.py", "c.py"] {
        env.add(&mut b, f, &source(&f[..1]));
    }
    let mut turns: Vec<(&str, Value)> = Vec::new();
    let mut turn = |b: &mut common::Bb7, label: &'static str, q: &str| {
        let end = b.turn(q);
        assert_eq!(end["type"], "done", "{end}");
        turns.push((label, end["usage"].clone()));
    };
    let plain = || response("", "An answer.", vec![]);
    fake.push_sse(plain());
    turn(&mut b, "first question", "What does a.py do?");
    let edit = json!({"edits": [{"path": "a.py", "old_string": "def a_7(x):  # a\n",
                                 "new_string": "def a_seven(x):  # a\n"}]});
    fake.push_sse(response("", "Renamed.", vec![("edit_file", edit)]));
    turn(&mut b, "answer with an edit", "Rename a_7.");
    fake.push_sse(plain());
    turn(&mut b, "after the edit", "Why?");
    env.add(&mut b, "d.py", &source("d"));
    fake.push_sse(plain());
    turn(&mut b, "after a new file", "And d.py?");
    let changed = source("b").replace("def b_3(x)", "def b_three(x)");
    b.ok(json!({"action": "context_update", "path": "b.py", "content": changed}));
    fake.push_sse(plain());
    turn(&mut b, "after a re-added file", "I renamed b_3.");
    for q in ["Anything else?", "Thanks."] {
        fake.push_sse(plain());
        turn(&mut b, "plain", q);
    }
    let texts: Vec<String> = fake.chat_bodies().iter().map(prompt_text).collect();
    println!("\n{model}");
    println!(
        "{:<4}{:<24}{:>8}{:>10}{:>10}{:>10}{:>12}{:>12}",
        "turn", "", "reuse", "prompt", "cached", "written", "cost", "uncached"
    );
    let (mut with, mut without) = (0.0, 0.0);
    for (i, (label, usage)) in turns.iter().enumerate() {
        let reuse = match i {
            0 => 0.0,
            _ => 100.0 * shared_prefix(&texts[i - 1], &texts[i]) as f64 / texts[i].len() as f64,
        };
        let n = |k: &str| usage[k].as_u64().unwrap_or(0) as f64;
        let (prompt, cached, written) = (
            n("prompt_tokens"),
            n("cached_tokens"),
            n("cache_write_tokens"),
        );
        let cost = cached * READ + written * WRITE + (prompt - cached - written).max(0.0) * INPUT;
        let full = prompt * INPUT;
        with += cost;
        without += full;
        println!(
            "{:<4}{:<24}{:>7.1}%{:>10}{:>10}{:>10}{:>12.4}{:>12.4}",
            i + 1,
            label,
            reuse,
            prompt,
            cached,
            written,
            cost,
            full
        );
    }
    println!("total input cost: ${with:.4} with the cache, ${without:.4} without");
}
