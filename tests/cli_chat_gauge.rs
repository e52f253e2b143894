//! `bb7 chat`'s prompt line on a pseudo-terminal: the context gauge (painted in the
//! warning colour from 80% of the window), the chat's spend and the day's (every
//! project), updated after each answer. Every fake answer costs $0.0015.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const MODEL: &str = "test/gauge";

fn models(window: u64) -> Reply {
    Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{"id": MODEL, "name": MODEL, "context_length": window,
                               "pricing": {"prompt": "0", "completion": "0"}}]})
        .to_string(),
    }
}

#[test]
fn the_prompt_shows_the_gauge_and_the_chats_and_days_spend() {
    let (env, fake) = fake_env(json!({"default_model": MODEL}));
    // Another project spent $0.0100 today.
    let dir = env.home.join(".bb7");
    std::fs::create_dir_all(&dir).unwrap();
    let today = chrono::Local::now().date_naive().format("%Y-%m-%d");
    std::fs::write(
        dir.join("usage.csv"),
        format!("{today}T08:00:00,/elsewhere,m,1,1,0,0.010000\n"),
    )
    .unwrap();
    // The chat's next request, measured over the protocol, fills 82% of the window (the
    // question itself and the system's turn framing add about a tenth).
    let (mut b, id) = env.with_chat();
    env.add(&mut b, "f.txt", "one\ntwo\n");
    let e = b.request(json!({"action": "estimate_tokens"}));
    let total = e["total"].as_u64().unwrap();
    fake.set_models(models(total * 100 / 82));
    b.ok(json!({"action": "get_models"}));
    drop(b);

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(&format!("bb7 chat {id}"));
    // The gauge in the warning colour (cyan, as `/tokens` paints it), then the spend.
    let shown = t.expect("%)");
    assert!(shown.contains("\x1b[36m~"), "{shown:?}");
    t.expect(" · chat $0.0000 · today $0.0100 bb7> ");

    fake.push_sse(response("", "Fine.\n", vec![]));
    t.type_keys("hello\r");
    t.expect("Fine.");
    t.expect(" · chat $0.0015 · today $0.0115 bb7> ");
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
}

#[test]
fn an_unknown_window_is_said_never_guessed() {
    let (env, _fake) = fake_env(json!({"default_model": MODEL}));
    project_with(&env, &[("f.txt", "one\n")]);
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("/help");
    t.expect("(window unknown)");
    t.expect(" · chat $0.0000 · today $0.0000 bb7> ");
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
}
