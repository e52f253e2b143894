//! Hostile ground on the wires: a client that stops reading stdout, a 20 MB one-line
//! edit, a token estimate over megabytes of context, a surrogate pair cut across SSE
//! events, a key over plain HTTP and a key in the base URL, through the real binary
//! (invariants 14 and 15 in docs/ARCHITECTURE.md).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

/// Resident memory of `pid` in MiB, from `/proc`.
fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

#[test]
fn a_client_that_stops_reading_cannot_grow_bb7_without_bound() {
    let env = Env::new();
    let (mut b, id) = env.with_chat();
    let big = "0123456789abcdef\n".repeat(256 * 1024); // about 4 MB
    env.add(&mut b, "big.txt", &big);
    assert_eq!(b.close().code(), Some(0));

    let mut child = Command::new(env!("CARGO_BIN_EXE_bb7"))
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped()) // never read
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let project = env.project.clone();
    let writer = std::thread::spawn(move || {
        let mut lines = format!(
            "{}\n{}\n",
            json!({"action": "init", "project_root": project, "request_id": "i"}),
            json!({"action": "chat_select", "id": id, "request_id": "s"})
        );
        for n in 0..9000 {
            lines.push_str(&json!({"action": "get_file_statuses", "request_id": n}).to_string());
            lines.push('\n');
        }
        // Blocks once bb7 stops reading; fails once it is killed.
        let _ = stdin.write_all(lines.as_bytes());
    });
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(12);
    while Instant::now() < deadline {
        peak = peak.max(rss_mib(pid));
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = writer.join();
    eprintln!("peak RSS with stdout unread: {peak} MiB");
    assert!(peak > 0, "could not read the RSS of bb7");
    assert!(
        peak < 160,
        "bb7 grew to {peak} MiB while its stdout was not read"
    );
}

/// Sends a `ping` and waits for its answer. Returns whether the turn `rid` had already
/// ended when the ping was sent, whether the turn's end came before the ping's answer,
/// and the end if it came.
fn ping_during(b: &mut Bb7, rid: &str) -> (bool, bool, Option<Value>) {
    let is_end = |m: &Value| {
        m["request_id"] == rid
            && matches!(m["type"].as_str(), Some("done" | "error" | "diff_error"))
    };
    let ended_before = b.backlog.iter().any(is_end);
    let id = b.send(json!({"action": "ping"}));
    let before = b.backlog.len();
    assert_eq!(b.reply_to(&id)["type"], "ok");
    let end_first = b.backlog[before.min(b.backlog.len())..].iter().any(is_end);
    let end = b
        .backlog
        .iter()
        .position(is_end)
        .map(|i| b.backlog.remove(i));
    (ended_before, end_first, end)
}

#[test]
fn a_huge_one_line_edit_that_matches_nothing_does_not_stall_bb7() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    env.add(&mut b, "a.txt", "fn main() {\n    println!(\"hi\");\n}\n");
    let huge = "x".repeat(20 << 20);
    let mut steps = vec![role()];
    steps.extend(tool_call(
        0,
        "edit_file",
        json!({"path": "a.txt", "edits": [{"old_string": huge, "new_string": "y"}]}),
        40,
    ));
    steps.extend([finish("tool_calls"), done()]);
    fake.push_sse(steps);
    let rid = b.send(json!({"action": "send", "content": "edit"}));
    let started = Instant::now();
    // At least `common::TIMEOUT` of 100 ms pauses: the hang guard, not a speed bound.
    let mut rounds_left = common::TIMEOUT.as_millis() / 100;
    // Pings sent while the edit streams and is planned are answered at once, before the
    // turn ends; on a request loop busy with the edit they would wait for its end. Only
    // the last ping, sent while the end was already on its way, may come after it.
    let mut late = 0;
    let mut pings = 0;
    let end = loop {
        let (ended_before, end_first, end) = ping_during(&mut b, &rid);
        if !ended_before {
            pings += 1;
            late += usize::from(end_first);
        }
        if let Some(end) = end {
            break end;
        }
        rounds_left = rounds_left.checked_sub(1).expect("the turn never ended");
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("{pings} pings during the turn, {late} answered after its end");
    assert!(
        late <= 1,
        "{late} of {pings} pings waited for the huge edit"
    );
    eprintln!("a 20 MB one-line edit took {:?} to fail", started.elapsed());
    assert_eq!(end["type"], "diff_error", "{}", &end.to_string()[..300]);
    assert_eq!(end["tool_calls"][0]["code"], "not_found");
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn a_surrogate_pair_cut_across_events_is_decoded_lossily() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let delta = |content: &str| {
        Step::Data(format!(
            r#"{{"choices":[{{"index":0,"delta":{{"content":"{content}"}},"finish_reason":null}}]}}"#
        ))
    };
    fake.push_sse(vec![
        role(),
        delta(r"smile \ud83d"),
        delta(r"\ude00 and go on"),
        finish("stop"),
        done(),
    ]);
    let end = b.turn("hi");
    assert_eq!(end["type"], "done", "{end}");
    let chat = env.chat_json(&id).to_string();
    assert!(chat.contains("smile \u{fffd}"), "{chat}");
    assert!(chat.contains("\u{fffd} and go on"), "{chat}");
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn a_key_never_crosses_plain_http_to_another_host() {
    let env = Env::new();
    // 0.0.0.0 is not loopback; a connection there is refused at once, never leaves.
    let url = "http://0.0.0.0:9/api/v1";
    env.write_config(json!({"api_key": "SECRET-KEY", "base_url": url,
                            "default_model": "fake/model", "retry_backoff_ms": 10}));
    let (mut b, id) = env.with_chat();
    let end = b.turn("hi");
    assert_eq!(end["type"], "error", "{end}");
    let message = end["message"].as_str().unwrap();
    assert!(message.contains("allow_insecure_http"), "{message}");
    assert!(!message.contains("SECRET-KEY"));
    assert_eq!(b.close().code(), Some(0));
    // The user may allow it; it is then attempted, with a warning on stderr.
    env.write_config(json!({"api_key": "SECRET-KEY", "base_url": url,
                            "allow_insecure_http": true,
                            "default_model": "fake/model", "retry_backoff_ms": 10}));
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    let end = b.turn("hi");
    assert_eq!(end["type"], "error", "{end}");
    assert!(
        !end["message"]
            .as_str()
            .unwrap()
            .contains("allow_insecure_http"),
        "{end}"
    );
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn credentials_in_the_base_url_are_never_echoed() {
    let fake = FakeModel::start();
    let env = Env::new();
    let base = fake.url.replace("http://", "http://user:PASSWORD@") + "?key=QUERYKEY";
    env.write_config(json!({"api_key": "k", "base_url": base,
                            "default_model": "fake/model", "retry_backoff_ms": 10}));
    for _ in 0..4 {
        fake.push(http_error(400, "bad request"));
    }
    let (mut b, id) = env.with_chat();
    let end = b.turn("hi");
    assert_eq!(end["type"], "error", "{end}");
    let message = end["message"].as_str().unwrap();
    assert!(message.contains("bad request"), "{message}");
    // A wrong port: the network error names the URL, redacted too.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let end2 = {
        assert_eq!(b.close().code(), Some(0));
        env.write_config(json!({"api_key": "k",
                                "base_url": format!("http://user:PASSWORD@127.0.0.1:{port}/v1?key=QUERYKEY"),
                                "default_model": "fake/model", "retry_backoff_ms": 10}));
        let mut b = Bb7::spawn(&env.home, &env.project, &[("BB7_DEBUG", "1")]);
        b.ok(json!({"action": "init", "project_root": env.project}));
        b.ok(json!({"action": "chat_select", "id": id}));
        let end = b.turn("hi");
        assert_eq!(b.close().code(), Some(0));
        end
    };
    assert_eq!(end2["type"], "error", "{end2}");
    let chat = std::fs::read_to_string(env.chat_dir(&id).join("chat.json")).unwrap();
    let log = std::fs::read_to_string(env.home.join(".bb7/debug.log")).unwrap_or_default();
    for text in [message, end2["message"].as_str().unwrap(), &chat, &log] {
        assert!(!text.contains("QUERYKEY"), "{text}");
        assert!(!text.contains("PASSWORD"), "{text}");
    }
}

#[test]
fn a_flood_of_estimates_is_bounded_and_every_one_answered() {
    let env = Env::new();
    let (mut b, _id) = env.with_chat();
    let text = "let value = compute(alpha, beta, gamma);\n".repeat(50_000);
    env.add(&mut b, "big.rs", &text);
    let ids: Vec<String> = (0..200)
        .map(|i| b.send(json!({"action": "estimate_tokens", "input_text": format!("draft {i}")})))
        .collect();
    let (mut estimates, mut busy) = (0, 0);
    for id in &ids {
        let r = b.reply_to(id);
        match r["type"].as_str() {
            Some("token_estimate") => estimates += 1,
            Some("error") if r["code"] == "busy" => busy += 1,
            _ => panic!("{r}"),
        }
    }
    // A few wait at a time; the rest are told to ask again rather than queued.
    assert!(
        estimates >= 1 && busy >= 1,
        "{estimates} estimates, {busy} busy"
    );
    let after = b.request(json!({"action": "estimate_tokens", "input_text": "draft"}));
    assert_eq!(after["type"], "token_estimate", "{after}");
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn ping_is_answered_while_a_big_estimate_runs() {
    let env = Env::new();
    let (mut b, _id) = env.with_chat();
    // About 4 MB of context whose tokens the first estimate counts (the ping is sent
    // while it runs; how long it runs does not matter, only which answer comes first).
    for i in 0..4 {
        let text =
            format!("let value_{i} = compute(alpha, beta, gamma); // file {i}\n").repeat(18_000);
        env.add(&mut b, &format!("big{i}.rs"), &text);
    }
    let estimate = b.send(json!({"action": "estimate_tokens", "input_text": "draft"}));
    let ping = b.send(json!({"action": "ping"}));
    let first = loop {
        let m = b
            .recv()
            .expect("bb7 answered neither the estimate nor the ping");
        if m["request_id"] == estimate || m["request_id"] == ping {
            break m;
        }
    };
    assert_eq!(
        first["request_id"], ping,
        "the ping waited for the estimate: {first}"
    );
    let e = b.reply_to(&estimate);
    assert_eq!(e["type"], "token_estimate", "{e}");
    let total = e["total"].as_u64().unwrap();
    assert!(e["context_files"].as_u64().unwrap() > 100_000, "{e}");
    // Asked again (laid out once, reused), with a longer draft, and after a change.
    let again = b.request(json!({"action": "estimate_tokens", "input_text": "draft"}));
    assert_eq!(again["total"].as_u64(), Some(total), "{again}");
    let longer =
        b.request(json!({"action": "estimate_tokens", "input_text": "draft ".repeat(100)}));
    assert!(longer["total"].as_u64().unwrap() > total, "{longer}");
    assert_eq!(longer["context_files"], e["context_files"]);
    b.ok(json!({"action": "context_update", "path": "big0.rs", "content": "small\n"}));
    let after = b.request(json!({"action": "estimate_tokens", "input_text": "draft"}));
    assert!(
        after["context_files"].as_u64() < e["context_files"].as_u64(),
        "{after}"
    );
    b.ok(json!({"action": "context_remove", "path": "big1.rs"}));
    let removed = b.request(json!({"action": "estimate_tokens", "input_text": "draft"}));
    assert!(removed["files"].as_array().unwrap().len() == 3, "{removed}");
    assert_eq!(b.close().code(), Some(0));
}
