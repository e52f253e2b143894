//! Local servers as they really behave, served from recordings of their bytes
//! (`tests/fixtures/wire/`) and from hand-written shapes of other servers: keep-alive
//! pings while a long prompt is read, a first token that never comes, a server killed
//! mid-answer, the error shapes of llama.cpp, LM Studio and Ollama.

mod common;

use std::time::Duration;

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

fn setup(extra: Value) -> (Env, FakeModel, Bb7, String) {
    let (env, fake) = fake_env(extra);
    let (b, id) = env.with_chat();
    (env, fake, b, id)
}

fn run(b: &mut Bb7, content: &str) -> (Vec<Value>, Value) {
    let mut seen = b.turn_stream(content);
    let end = seen.pop().unwrap_or_default();
    (seen, end)
}

/// The text of every `delta.content` in a recorded SSE response.
fn recorded_text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// The recorded ping stream's head and one ping chunk (`3\r\n:\n\n\r\n`).
fn head_and_ping() -> (Vec<u8>, Vec<u8>) {
    let pieces = wire_pieces(&wire_fixture("llama-server/h_h1_001.s2c"));
    assert_eq!(pieces[1], b"3\r\n:\n\n\r\n", "the recording changed");
    (pieces[0].clone(), pieces[1].clone())
}

fn last_assistant_text(env: &Env, id: &str) -> String {
    let chat = env.chat_json(id);
    let msgs = chat["messages"].as_array().unwrap();
    let last = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    last["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["content"].as_str())
        .collect()
}

#[test]
fn keep_alive_pings_carry_a_long_prompt_to_its_answer_and_the_wait_is_shown() {
    // Pings for longer than the stall timeout and the waiting note's interval (60 of
    // them 0.1 s apart: 6 s against 3 s and a note every 4 s, a quarter of the first
    // token's 16 s), then the recorded answer. The gaps are far below the stall
    // timeout: 0.4 s gaps against 1 s stalled on a loaded machine.
    let (env, fake, mut b, id) =
        setup(json!({"stream_timeout_secs": 3, "first_token_timeout_secs": 16}));
    let (head, ping) = head_and_ping();
    let answer = wire_fixture("llama-server/a_001.s2c");
    let mut pieces = vec![head];
    pieces.extend(std::iter::repeat_n(ping, 60));
    pieces.extend(wire_pieces(&answer).into_iter().skip(1));
    fake.push(Reply::Raw {
        pieces,
        pause: Duration::from_millis(100),
    });
    let (seen, end) = run(&mut b, "a long prompt");
    assert_eq!(end["type"], "done", "{end}");
    let waits: Vec<&Value> = seen.iter().filter(|m| m["type"] == "waiting").collect();
    assert!(!waits.is_empty(), "no waiting note: {seen:?}");
    let last = waits.last().unwrap();
    assert_eq!(last["received"], "pings", "{last}");
    assert_eq!(
        last["message"],
        format!(
            "the local server is reading the prompt, {} s",
            last["seconds"]
        ),
    );
    assert_eq!(last_assistant_text(&env, &id), recorded_text(&answer));
}

#[test]
fn a_first_token_that_never_comes_fails_saying_what_arrived() {
    // Pings 0.1 s apart for 10 s: the first token's 4 s end the wait, never the stall
    // timeout (0.3 s gaps against 1 s stalled on a loaded machine).
    let (_env, fake, mut b, _id) =
        setup(json!({"stream_timeout_secs": 2, "first_token_timeout_secs": 4}));
    let (head, ping) = head_and_ping();
    let mut pieces = vec![head];
    pieces.extend(std::iter::repeat_n(ping, 100));
    fake.push(Reply::Raw {
        pieces,
        pause: Duration::from_millis(100),
    });
    let (_, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "error", "{end}");
    let m = end["message"].as_str().unwrap();
    assert!(
        m.contains("no answer within 4 seconds (first_token_timeout_secs)")
            && m.contains("keep-alive ping"),
        "{m}"
    );

    // A server that accepts the connection and never answers: the send ends too.
    fake.push(Reply::Silent(Duration::from_secs(30)));
    let (seen, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "error", "{end}");
    let m = end["message"].as_str().unwrap();
    assert!(m.contains("sent no response headers"), "{m}");
    assert!(
        seen.iter()
            .any(|s| s["type"] == "waiting" && s["received"] == "nothing"),
        "{seen:?}"
    );
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
}

#[test]
fn a_stall_after_the_answer_began_says_what_had_arrived() {
    let (_env, fake, mut b, _id) = setup(json!({"stream_timeout_secs": 1}));
    let stall = Gate::new();
    fake.push_sse(vec![
        role(),
        text("twelve chars"),
        // Nothing more until the stall is reported (a gate, not 4 s: a loaded machine
        // could take longer than that to see the 1 s stall).
        Step::Wait(stall.clone()),
        done(),
    ]);
    let (_, end) = run(&mut b, "hi");
    let m = end["message"].as_str().unwrap();
    assert!(
        m.contains("no data for 1 seconds (stream_timeout_secs) after 12 characters of text"),
        "{m}"
    );
    stall.open();
}

#[test]
fn a_server_killed_mid_answer_is_named_with_what_was_kept() {
    let (env, fake, mut b, id) = setup(json!({}));
    let raw = wire_fixture("llama-server/f_f1_001.s2c");
    fake.push(Reply::Raw {
        pieces: vec![raw.clone()],
        pause: Duration::ZERO,
    });
    let (_, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "error", "{end}");
    let m = end["message"].as_str().unwrap();
    let kept = recorded_text(&raw);
    assert!(
        m.contains("the server closed the connection before the answer was complete")
            && m.contains(&format!("kept {} characters of text", kept.chars().count())),
        "{m}"
    );
    assert!(!m.contains("error decoding response body"), "{m}");
    assert_eq!(last_assistant_text(&env, &id), kept);
}

#[test]
fn every_server_error_shape_is_read_into_the_message() {
    let (env, fake, mut b, id) = setup(json!({}));
    let cases = [
        (
            "llama-server/d_d1_001.s2c",
            "request (5744 tokens) exceeds the available context size (256 tokens)",
        ),
        (
            "handwritten/lmstudio_http_error.http",
            "the model is loaded with context length of only 4096 tokens",
        ),
        (
            "handwritten/lmstudio_stream_error.http",
            "Model has unloaded or crashed",
        ),
        (
            "handwritten/llama_old_sse_error.http",
            "the request exceeds the available context size, try increasing",
        ),
        (
            "handwritten/ollama_context_400.http",
            "the prompt is longer than the context length of the model",
        ),
        (
            "handwritten/plain_text_400.http",
            "model \"qwen\" not found, try pulling it first",
        ),
    ];
    for (file, words) in cases {
        fake.push(Reply::Raw {
            pieces: vec![wire_fixture(file)],
            pause: Duration::ZERO,
        });
        let (_, end) = run(&mut b, "hi");
        assert_eq!(end["type"], "error", "{file}: {end}");
        let m = end["message"].as_str().unwrap();
        assert!(m.contains(words), "{file}: {m}");
    }
    // The partial answer before LM Studio's stream error is kept.
    assert!(
        env.chat_json(&id)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["parts"][0]["content"] == "Par")
    );
}

#[test]
fn an_answer_cut_at_the_token_limit_is_marked_and_a_cut_block_refused() {
    let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "a.txt", "one\n");
    fake.push_sse(vec![
        role(),
        text("Here is half of it"),
        finish("length"),
        usage(100, 60, 0.0),
        done(),
    ]);
    let (_, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "done", "{end}");
    assert_eq!(end["truncated"], true, "{end}");
    let chat = env.chat_json(&id);
    let last = chat["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "system");
    assert!(
        last["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("cut at the server's token limit"),
        "{last}"
    );

    // A block the limit cut is refused with that reason, nothing written.
    fake.push_sse(vec![
        role(),
        text("a.txt\n```\n<<<<<<< SEARCH\none\n=======\ntw"),
        finish("length"),
        done(),
    ]);
    let (_, end) = run(&mut b, "change it");
    assert_eq!(end["type"], "diff_error", "{end}");
    let errors = end["errors"].to_string();
    assert!(
        errors.contains("cut at the server's token limit"),
        "{errors}"
    );
    assert!(env.output(&id, "a.txt").is_none());

    // A complete answer has no mark.
    fake.push_sse(response("", "All of it.", vec![]));
    let (_, end) = run(&mut b, "hi");
    assert_eq!(end["type"], "done");
    assert!(end.get("truncated").is_none(), "{end}");
    drop(b);

    // `bb7 ask` exits 5 on a cut answer.
    fake.push_sse(vec![role(), text("Cut"), finish("length"), done()]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bb7"))
        .args(["ask", "hi"])
        .current_dir(&env.project)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("token limit"));
}
