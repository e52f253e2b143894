//! A fake OpenAI-compatible model server for the Neovim tests and `scripts/demo`:
//! `cargo run --example fake_openai -- DIR` listens on 127.0.0.1, prints its base URL
//! on stdout, answers each streaming chat request with the next `DIR/*.json` script
//! (in name order; consumed files are renamed `*.used`) and appends every request
//! body to `DIR/requests.jsonl`.
//!
//! A script: `{"thinking": "…", "text": "…", "tool_calls": [{"name", "args"}],
//! "chunk_delay_ms": 0}` or `{"status": 401, "message": "…"}`.

#[path = "../tests/common/fake_model.rs"]
mod fake_model;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use fake_model::{FakeModel, Reply, Step, http_error, response};
use serde_json::{Value, json};

fn next_script(dir: &PathBuf) -> Option<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let first = files.into_iter().next()?;
    let text = std::fs::read_to_string(&first).ok()?;
    let _ = std::fs::rename(&first, first.with_extension("used"));
    serde_json::from_str(&text).ok()
}

fn reply_for(script: Value) -> Reply {
    if let Some(status) = script["status"].as_u64() {
        return http_error(status as u16, script["message"].as_str().unwrap_or("error"));
    }
    let calls: Vec<(String, Value)> = script["tool_calls"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_owned(),
                        c["args"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let steps = response(
        script["thinking"].as_str().unwrap_or(""),
        script["text"].as_str().unwrap_or(""),
        calls.iter().map(|(n, a)| (n.as_str(), a.clone())).collect(),
    );
    let delay = script["chunk_delay_ms"].as_u64().unwrap_or(0);
    if delay == 0 {
        return Reply::Sse(steps);
    }
    let mut slow = Vec::new();
    for s in steps {
        slow.push(s);
        slow.push(Step::Sleep(Duration::from_millis(delay)));
    }
    Reply::Sse(slow)
}

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: fake_openai DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = FakeModel::start();
    let log = dir.join("requests.jsonl");
    let script_dir = dir.clone();
    fake.set_fallback(Box::new(move |req| {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&log) {
            let _ = writeln!(f, "{}", json!({"path": req.path, "body": req.body}));
        }
        if req.path.ends_with("/models") {
            let body = json!({"data": [
                {"id": "fake/model", "name": "Fake model", "context_length": 128000,
                 "pricing": {"prompt": "0.000001", "completion": "0.000002"},
                 "supported_parameters": ["tools", "reasoning"]},
                {"id": "fake/other", "name": "Other fake", "context_length": 8000,
                 "pricing": {"prompt": "0", "completion": "0"}, "supported_parameters": ["tools"]}
            ]});
            return Some(Reply::Http { status: 200, headers: vec![], body: body.to_string() });
        }
        if req.body["stream"] == false {
            let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Fake title"}}]});
            return Some(Reply::Http { status: 200, headers: vec![], body: body.to_string() });
        }
        Some(next_script(&script_dir).map(reply_for).unwrap_or_else(|| http_error(500, "no script left")))
    }));
    println!("{}", fake.url);
    std::io::stdout().flush().unwrap();
    // Serve until stdin closes (the parent is gone).
    let mut sink = String::new();
    while std::io::stdin()
        .read_line(&mut sink)
        .map(|n| n > 0)
        .unwrap_or(false)
    {
        sink.clear();
    }
}
