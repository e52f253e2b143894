//! One model answer's tool-call arguments are bounded at 64 MiB together
//! (docs/PROTOCOL.md, "bb7 specifics": the answer's limits): a `write_file` call with
//! 65 MiB of arguments ends the turn with an `error` naming the limit, nothing staged,
//! and the next turn is served as usual.

mod common;

use common::fake_env;
use common::fake_model::{Step, done, response, role, text};
use serde_json::json;

/// One streamed chunk carrying `delta` (OpenAI's chat completion chunk).
fn delta(delta: serde_json::Value) -> Step {
    Step::Data(
        json!({"id": "gen-1", "object": "chat.completion.chunk", "model": "fake/model",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        .to_string(),
    )
}

/// The fragment `args` of call 0's arguments.
fn args(args: &str) -> Step {
    delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}))
}

#[test]
fn a_call_with_65_mib_of_arguments_ends_the_turn_with_the_limit_and_stages_nothing() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let mut steps = vec![role(), text("Writing one big file.")];
    steps.push(delta(
        json!({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                            "function": {"name": "write_file", "arguments": ""}}]}),
    ));
    steps.push(args(r#"{"path": "big.txt", "content": ""#));
    // 65 pieces of 1 MiB: 65 MiB of content, over the 64 MiB of one answer.
    let mib = "x".repeat(1 << 20);
    for _ in 0..65 {
        steps.push(args(&mib));
    }
    drop(mib);
    steps.push(args(r#""}"#));
    steps.push(done());
    fake.push_sse(steps);
    let end = b.turn("write it");
    assert_eq!(end["type"], "error", "{end}");
    let msg = end["message"].as_str().unwrap();
    assert!(
        msg.contains("arguments came to more than 64 MiB")
            && msg.contains("none of them was staged"),
        "{msg}"
    );
    // Nothing staged: no output, no file.
    let statuses = b.ok(json!({"action": "get_file_statuses"}));
    let files = statuses["files"].as_array().unwrap();
    assert!(files.iter().all(|f| f["has_output"] != true), "{statuses}");
    assert!(!env.project.join("big.txt").exists());
    // The text is kept with the error; the call is not saved.
    let chat = env.chat_json(&id).to_string();
    assert!(chat.contains("Writing one big file."), "{chat}");
    assert!(!chat.contains("big.txt"), "the call was saved");
    // The next turn is served as usual.
    fake.push_sse(response("", "Fine.", vec![]));
    let r = b.turn("and now?");
    assert_eq!(r["type"], "done", "{r}");
}
