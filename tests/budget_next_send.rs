//! Budgets count the next send, through the binary: a send is refused before anything
//! is billed when the spend so far plus its expected cost (the prompt at the listed
//! prompt price plus 1000 expected answer tokens at the completion price) would pass
//! `max_cost_per_send`, `max_cost_per_chat` or `max_cost_per_day`; the error names the
//! budget, the spend and the expected cost. Every fake answer costs $0.0015.

mod common;

use common::fake_model::{FakeModel, Reply, response};
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

const MODEL: &str = "test/priced";

/// Lists `MODEL` at `prompt` and `completion` USD per token.
fn price(fake: &FakeModel, b: &mut Bb7, prompt: &str, completion: &str) {
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{"id": MODEL, "name": MODEL, "context_length": 1_000_000,
                               "pricing": {"prompt": prompt, "completion": completion}}]})
        .to_string(),
    });
    b.ok(json!({"action": "get_models"}));
}

fn turn(b: &mut Bb7, fake: &FakeModel, q: &str) {
    fake.push_sse(response("", "Fine.", vec![]));
    let done = b.turn(q);
    assert_eq!(done["type"], "done", "{done}");
}

/// Sends `q`, expects a refusal, checks nothing reached the model and returns the text.
fn refused(b: &mut Bb7, fake: &FakeModel, q: &str) -> String {
    let sent = fake.chat_bodies().len();
    let e = b.err(json!({"action": "send", "content": q}));
    assert_eq!(e["code"], "invalid_request", "{e}");
    assert_eq!(fake.chat_bodies().len(), sent, "nothing was sent: {e}");
    e["message"].as_str().unwrap().to_owned()
}

fn total_tokens(b: &mut Bb7, q: &str) -> u64 {
    let e = b.request(json!({"action": "estimate_tokens", "input_text": q}));
    assert_eq!(e["type"], "token_estimate", "{e}");
    e["total"].as_u64().unwrap()
}

fn config(extra: Value) -> (Env, FakeModel) {
    let mut c = json!({"default_model": MODEL});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    fake_env(c)
}

#[test]
fn a_chat_budget_refuses_the_send_whose_expected_answer_would_pass_it() {
    // Free input, $0.00001 per answer token: each send is expected to cost $0.0100.
    let (env, fake) = config(json!({"max_cost_per_chat": 0.0125}));
    let (mut b, id) = env.with_chat();
    price(&fake, &mut b, "0", "0.00001");
    turn(&mut b, &fake, "one"); // $0 + $0.0100 expected: under $0.0125
    turn(&mut b, &fake, "two"); // $0.0015 + $0.0100: under
    // $0.0030 spent, under the limit, but $0.0030 + $0.0100 passes it.
    let msg = refused(&mut b, &fake, "three");
    for part in [
        "max_cost_per_chat",
        "$0.0030 spent",
        "about $0.0100 expected",
        "1000 expected answer tokens",
        "($0.0125)",
        "nothing was sent",
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
    // The message was not saved as sent.
    let chat = env.chat_json(&id);
    let users = chat["messages"].as_array().unwrap();
    let users = users.iter().filter(|m| m["role"] == "user").count();
    assert_eq!(users, 2, "{chat}");
    // A model whose price is unknown is not counted: the send goes out.
    fake.push_sse(response("", "Fine.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "three", "model": "other/unlisted"}));
    let done = b.stream(&rid).pop().unwrap();
    assert_eq!(done["type"], "done", "{done}");
}

#[test]
fn a_day_budget_counts_the_prompt_of_the_next_send_and_names_what_to_drop() {
    let (env, fake) = config(json!({"max_cost_per_day": 0.02}));
    // Another project spent $0.0150 today.
    let dir = env.home.join(".bb7");
    std::fs::create_dir_all(&dir).unwrap();
    let today = chrono::Local::now().date_naive().format("%Y-%m-%d");
    std::fs::write(
        dir.join("usage.csv"),
        format!("{today}T09:00:00,/elsewhere,m,10,10,0,0.015000\n"),
    )
    .unwrap();
    let (mut b, _id) = env.with_chat();
    // $0.000001 per prompt token, free answers.
    price(&fake, &mut b, "0.000001", "0");
    let big: String = (0..1500)
        .map(|i| format!("def big_{i}(x):  # a line of the large file\n"))
        .collect();
    env.add(&mut b, "big.py", &big);
    let tokens = total_tokens(&mut b, "Explain.");
    assert!(
        tokens > 6_000,
        "the prompt is large enough to matter: {tokens}"
    );
    let msg = refused(&mut b, &fake, "Explain.");
    for part in [
        "max_cost_per_day",
        "$0.0150 spent today",
        "prompt tokens",
        "($0.0200)",
        "nothing was sent",
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
    // Without the large file the send is cheap enough.
    b.ok(json!({"action": "context_remove", "path": "big.py"}));
    assert!(total_tokens(&mut b, "Explain.") < 2_000);
    turn(&mut b, &fake, "Explain.");
}

#[test]
fn max_cost_per_send_counts_the_expected_answer() {
    // Free input; the expected answer alone costs $0.0100.
    let (env, fake) = config(json!({"max_cost_per_send": 0.005}));
    let (mut b, _id) = env.with_chat();
    price(&fake, &mut b, "0", "0.00001");
    let msg = refused(&mut b, &fake, "Hello");
    for part in [
        "about $0.0100",
        "1000 expected answer tokens",
        "max_cost_per_send ($0.0050)",
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
    // At a tenth of the answer price the same send passes.
    let (env, fake) = config(json!({"max_cost_per_send": 0.005}));
    let (mut b, _id) = env.with_chat();
    price(&fake, &mut b, "0", "0.000001");
    turn(&mut b, &fake, "Hello");
}
