//! Invisible characters on the command line: an MCP resource attached by `bb7 add
//! mcp:…` or by `/add mcp:…` in `bb7 chat` is named like a file's add, and `bb7 ask`
//! and `bb7 chat` print the send's `notice` naming the lines of its context that hold
//! them.

mod cli_support;
mod common;
mod mcp_support;

use cli_support::*;
use common::fake_env;
use common::fake_model::response;
use serde_json::json;

const NAMED: &str =
    ":2: invisible characters: U+202E (right-to-left override), U+200B (zero-width space)";

#[test]
fn an_mcp_attach_names_hidden_characters_and_the_send_names_them_again() {
    let (env, fake) = fake_env(json!({"mcp_servers": {"h": mcp_support::fault("hostile", 60)}}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let o = ok(&env, &["add", "mcp:h:fault://hidden"]);
    let err = stderr(&o);
    assert!(err.contains("bb7: attached "), "{err}");
    assert!(
        err.contains("bb7: warning: ") && err.contains(NAMED),
        "{err}"
    );

    fake.push_sse(response("", "Noted.", vec![]));
    let o = ok(&env, &["ask", "what does it say?"]);
    let err = stderr(&o);
    assert!(
        err.contains("This send carries invisible characters") && err.contains(NAMED),
        "{err}"
    );
    assert!(stdout(&o).contains("Noted."), "{}", stdout(&o));
}

#[test]
fn bb7_chat_add_mcp_warns_like_bb7_add() {
    let (env, fake) = fake_env(json!({"mcp_servers": {"h": mcp_support::fault("hostile", 60)}}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("/add mcp:h:fault://hidden\r");
    t.expect("invisible characters: U+202E");
    t.expect("bb7> ");
    // The send names them again, before the answer.
    fake.push_sse(response("", "Read it.", vec![]));
    t.type_keys("what does it say?\r");
    t.expect("This send carries invisible characters");
    t.expect("Read it.");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());
    assert!(
        t.screen().contains("U+200B (zero-width space)"),
        "{}",
        t.screen()
    );
}
