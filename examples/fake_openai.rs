//! A fake OpenAI-compatible model server for the Neovim tests and `scripts/demo`:
//! `cargo run --example fake_openai -- DIR` listens on 127.0.0.1, prints its base URL
//! on stdout, answers each streaming chat request with the next `DIR/*.json` script
//! (in name order; consumed files are renamed `*.used`) and appends every request
//! body to `DIR/requests.jsonl`.
//!
//! A script: `{"thinking": "…", "text": "…", "tool_calls": [{"name", "args"}],
//! "chunk_delay_ms": 0}` or `{"status": 401, "message": "…"}`. With `"hold_after": N,
//! "hold_until": "NAME"` the answer stops after its first N words of text (0: before
//! its first) and goes on once the file `DIR/NAME` exists: a test sees the answer
//! mid-stream for as long as it needs, however loaded the machine (a `chunk_delay_ms`
//! window can close first). Several stalls: `"holds": [{"after": N, "until": "NAME"}]`.

#[path = "../tests/common/fake_model.rs"]
mod fake_model;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fake_model::{FakeModel, Gate, Reply, Step, http_error, response};
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

fn reply_for(dir: &Path, script: Value) -> Reply {
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
    let mut holds: Vec<(u64, &str)> = script["holds"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|h| Some((h["after"].as_u64()?, h["until"].as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    if let (Some(words), Some(name)) =
        (script["hold_after"].as_u64(), script["hold_until"].as_str())
    {
        holds.push((words, name));
    }
    let mut steps = steps;
    for (words, name) in holds {
        steps = held(steps, words, dir.join(name));
    }
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

/// `steps` with a stall before the text delta that follows the first `words` ones (0:
/// before the first); it ends once `release` exists (polled every 20 ms, for at most
/// the harness's two-minute hang guard).
fn held(steps: Vec<Step>, words: u64, release: PathBuf) -> Vec<Step> {
    let gate = Gate::new();
    let opener = gate.clone();
    std::thread::spawn(move || {
        for _ in 0..6000 {
            if release.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        opener.open();
    });
    let mut seen = 0;
    let mut out = Vec::new();
    for step in steps {
        let is_text = matches!(&step, Step::Data(d)
            if serde_json::from_str::<Value>(d)
                .is_ok_and(|v| v["choices"][0]["delta"]["content"].as_str().is_some_and(|c| !c.is_empty())));
        if is_text {
            if seen == words {
                out.push(Step::Wait(gate.clone()));
            }
            seen += 1;
        }
        out.push(step);
    }
    out
}

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: fake_openai DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = FakeModel::start();
    let log = dir.join("requests.jsonl");
    let script_dir = dir.clone();
    fake.set_fallback(Box::new(move |req| {
        // One write per line: `writeln!` on a File writes in pieces, and a test reading
        // the log meanwhile would see half a line.
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(&log) {
            let line = format!("{}\n", json!({"path": req.path, "body": req.body}));
            let _ = f.write_all(line.as_bytes());
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
        Some(next_script(&script_dir).map(|s| reply_for(&script_dir, s)).unwrap_or_else(|| http_error(500, "no script left")))
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
