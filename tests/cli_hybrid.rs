//! `bb7 ask` with `hybrid_auto`: a local attempt dropped after it streamed (a
//! timeout) never reaches stdout. Piped, only the answer that stands is written; on a
//! terminal, a separator line names the fallback before the answer again.

mod cli_support;
mod common;

use cli_support::*;
use common::Env;
use common::fake_model::*;
use serde_json::json;

fn setup() -> (Env, FakeModel, FakeModel) {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    env.write_config(json!({
        "providers": {"local": {"base_url": local.url, "model": "small"},
                      "remote": {"base_url": remote.url, "model": "big", "api_key": "rk"}},
        "agent_mode": "hybrid_auto",
        "hybrid_remote_on_timeout_ms": 300,
        "retry_backoff_ms": 10
    }));
    project_with(&env, &[("a.txt", "a\n")]);
    (env, local, remote)
}

fn slow_local(local: &FakeModel) {
    local.push_sse(vec![
        Step::Comment,
        role(),
        text("the local model starts an answer that will be dropped"),
        // Never opened: the local attempt outlasts the 300 ms timeout however slow
        // the machine is.
        Step::Wait(Gate::new()),
        done(),
    ]);
}

#[test]
fn piped_only_the_answer_that_stands_is_written() {
    let (env, local, remote) = setup();
    slow_local(&local);
    remote.push_sse(response("", "The remote answer.\n", vec![]));
    let o = ok(&env, &["ask", "hello"]);
    assert_eq!(stdout(&o), "The remote answer.\n");
    let err = stderr(&o);
    assert!(err.contains("dropped (timeout)"), "{err}");
    assert!(err.contains("after a fallback (timeout)"), "{err}");
}

#[test]
fn on_a_terminal_a_separator_names_the_fallback() {
    let (env, local, remote) = setup();
    slow_local(&local);
    remote.push_sse(response("", "The remote answer.\n", vec![]));
    let mut t = Terminal::start(&env, &["ask", "hello"]);
    let shown = t.expect("The remote answer.");
    let sep = shown.find("dropped (timeout)").expect(&shown);
    assert!(
        sep > shown.find("will be dropped").unwrap(),
        "the separator follows the dropped text: {shown:?}"
    );
    assert!(shown.contains("from remote"), "{shown:?}");
    t.wait();
}
