//! A model answer is bounded (docs/PROTOCOL.md, "bb7 specifics": the answer's limits): ten
//! thousand `write_file` calls in one answer end the turn with an `error` naming the
//! limit, nothing of them is staged or saved as calls, and bb7 answers other requests
//! while the flood streams and takes the next turn after it.

mod common;

use std::time::Duration;

use common::fake_env;
use common::fake_model::{Step, done, response, role, text, tool_call};
use serde_json::json;

#[test]
fn ten_thousand_write_calls_end_the_turn_with_the_limit_and_stage_nothing() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let mut steps = vec![role(), text("Writing everything.")];
    // The flood starts after a pause, so that the ping below is read while it
    // streams (the pause only orders the test's steps: nothing is timed).
    steps.push(Step::Sleep(Duration::from_millis(300)));
    for i in 0..10_000 {
        let args = json!({"path": format!("f{i}.txt"), "content": format!("{i}\n")});
        steps.extend(tool_call(i, "write_file", args, 1));
    }
    steps.push(done());
    fake.push_sse(steps);
    let rid = b.send(json!({"action": "send", "content": "write many files"}));
    assert_eq!(b.reply_to(&rid)["type"], "chunk");
    let pong = b.request(json!({"action": "ping"}));
    assert_ne!(pong["type"], "error", "{pong}");
    let end = b.stream(&rid).pop().unwrap();
    assert_eq!(end["type"], "error", "{end}");
    let msg = end["message"].as_str().unwrap();
    assert!(
        msg.contains("more than 512 tool calls") && msg.contains("none of them was staged"),
        "{msg}"
    );
    // Nothing staged: no output, no review, no file.
    let statuses = b.ok(json!({"action": "get_file_statuses"}));
    let files = statuses["files"].as_array().unwrap();
    assert!(files.iter().all(|f| f["has_output"] != true), "{statuses}");
    assert!(!env.project.join("f0.txt").exists());
    // The answer's text is kept with the error after it, and no call was saved.
    let chat = env.chat_json(&id).to_string();
    assert!(chat.contains("Writing everything."), "{chat}");
    assert!(!chat.contains("f0.txt"), "a call of the flood was saved");
    // The next turn is served as usual.
    fake.push_sse(response("", "Fine.", vec![]));
    let r = b.turn("and now?");
    assert_eq!(r["type"], "done", "{r}");
}
