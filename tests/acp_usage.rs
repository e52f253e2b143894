//! `bb7 acp`'s `usage_update` as the ACP schema means it: `used` is what the context
//! holds for the next request (bb7's context gauge), never a turn's requests added up;
//! `size` the model's window; `cost` the chat's running total.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

/// The figure of `/tokens`' answer: "The next request sends about N tokens …".
fn tokens_figure(answer: &str) -> u64 {
    let tail = answer
        .split("sends about ")
        .nth(1)
        .unwrap_or_else(|| panic!("no figure in {answer:?}"));
    tail.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn used_is_the_context_of_the_next_request_not_the_turns_requests_summed() {
    let (env, fake) = fake_env(json!({"context_window": 200000}));
    env.write("src/lib.rs", "pub fn a() {}\n");
    // A turn of two requests: a read, then the answer. Each reports its own usage; the
    // first one's large prompt must not be added to the second's.
    reads_then_answers(
        &fake,
        "src/lib.rs",
        Some(usage(50_000, 10, 0.001)),
        "It defines a.",
    );
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        set_tools(&cx, &sid, "auto").await?;
        let r = prompt(&cx, &sid, vec![say("What is in lib.rs?")]).await?;
        assert_eq!(stop(&r), "end_turn");
        assert_eq!(ed.text(&sid, "agent_message_chunk"), "It defines a.");
        let usage: Vec<Value> = of_kind(&ed, &sid, "usage_update");
        assert_eq!(usage.len(), 1, "{usage:?}");
        let used = usage[0]["used"].as_u64().unwrap();
        assert_eq!(usage[0]["size"], 200000, "the window: {usage:?}");
        assert!(
            used > 0 && used < 50_000,
            "the next request's fill, not 50,130 summed: {usage:?}"
        );
        // The cost stays the turn's two requests together, the chat's running total.
        let cost = usage[0]["cost"]["amount"].as_f64().unwrap();
        assert!((cost - 0.0025).abs() < 1e-9, "{usage:?}");
        // The same figure bb7 gives for the next request.
        ed.clear();
        prompt(&cx, &sid, vec![say("/tokens")]).await?;
        let answer = ed.text(&sid, "agent_message_chunk");
        assert_eq!(tokens_figure(&answer), used, "{answer}");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn used_grows_with_the_history_and_cost_adds_up() {
    let (env, fake) = fake_env(json!({"context_window": 100000}));
    fake.push_sse(response("", &"One answer. ".repeat(200), vec![]));
    fake.push_sse(response("", "Two.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("One")]).await?;
        prompt(&cx, &sid, vec![say("Two")]).await?;
        let usage = of_kind(&ed, &sid, "usage_update");
        assert_eq!(usage.len(), 2, "{usage:?}");
        let (a, b) = (
            usage[0]["used"].as_u64().unwrap(),
            usage[1]["used"].as_u64().unwrap(),
        );
        // Each fake answer reports 120 tokens: the gauge counts the text instead, and
        // the second request holds the first answer's 2,400 bytes.
        assert!(a > 400 && b > a, "{usage:?}");
        assert_eq!(usage[1]["size"], 100000);
        let total = usage[1]["cost"]["amount"].as_f64().unwrap();
        assert!((total - 0.003).abs() < 1e-9, "{usage:?}");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn a_slash_command_that_changes_the_context_updates_the_gauge() {
    let (env, _fake) = fake_env(json!({"context_window": 100000}));
    env.write("big.txt", &"a line of context\n".repeat(400));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("/add big.txt")]).await?;
        prompt(&cx, &sid, vec![say("/drop big.txt")]).await?;
        let usage = of_kind(&ed, &sid, "usage_update");
        assert_eq!(usage.len(), 2, "{usage:?}");
        let (added, dropped) = (
            usage[0]["used"].as_u64().unwrap(),
            usage[1]["used"].as_u64().unwrap(),
        );
        assert!(added > dropped + 1000, "the file's tokens: {usage:?}");
        assert_eq!(usage[0]["size"], 100000);
        assert_eq!(usage[0]["cost"]["amount"], 0.0, "nothing spent: {usage:?}");
        Ok(())
    }))
    .unwrap();
}
