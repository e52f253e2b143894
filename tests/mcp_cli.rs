//! MCP on the command line against the reference everything server: `bb7 mcp list`,
//! `bb7 add mcp:SERVER:URI`, `bb7 mcp allow` for a project's own servers, and in
//! `bb7 chat` `/mcp`, `/add mcp:…` with Tab completion and `/mcp:SERVER:PROMPT`.

mod cli_support;
mod common;
mod mcp_support;

use cli_support::*;
use common::fake_env;
use common::fake_model::{FakeModel, response};
use serde_json::{Value, json};

const DOC: &str = "demo://resource/static/document/architecture.md";

fn user_text(fake: &FakeModel, n: usize) -> String {
    let mut body: Value = fake.chat_bodies()[n].clone();
    body["messages"].as_array_mut().unwrap().remove(0);
    common::fake_model::prompt_text(&body)
}

#[test]
fn mcp_list_and_add_attach_a_resource_the_model_then_sees() {
    let (env, fake) =
        fake_env(json!({"mcp_servers": {"everything": mcp_support::everything_stdio()}}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let list = stdout(&ok(&env, &["mcp", "list"]));
    assert!(list.contains("everything (stdio)"), "{list}");
    assert!(
        list.contains(&format!("mcp:everything:{DOC}  text/markdown")),
        "{list}"
    );
    assert!(
        list.contains("mcp:everything:demo://resource/dynamic/text/{resourceId}  (template)"),
        "{list}"
    );
    assert!(
        list.contains("/mcp:everything:args-prompt city=… state=[…]"),
        "{list}"
    );

    let o = ok(&env, &["add", &format!("mcp:everything:{DOC}"), "a.txt"]);
    assert!(
        stderr(&o).contains(&format!("bb7: attached mcp_resource:everything:{DOC}")),
        "{}",
        stderr(&o)
    );
    let status = stdout(&ok(&env, &["status"]));
    assert!(
        status.contains(&format!("mcp_resource:everything:{DOC}")),
        "{status}"
    );
    assert!(status.contains("a.txt"), "{status}");
    fake.push_sse(response("", "Noted.", vec![]));
    ok(&env, &["ask", "summarise"]);
    let user = user_text(&fake, 0);
    assert!(
        user.contains(&format!(
            "<attachment kind=\"mcp_resource\" name=\"everything:{DOC}\""
        )),
        "{user}"
    );
    let e = fails(&env, &["add", "mcp:everything:demo://nothing/here"]);
    assert!(e.contains("MCP server everything"), "{e}");
}

#[test]
fn a_project_server_runs_only_after_mcp_allow() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let servers = json!({"mcp_servers": {"proj": mcp_support::everything_stdio()}});
    std::fs::write(env.project.join(".bb7/config.json"), servers.to_string()).unwrap();
    let list = stdout(&ok(&env, &["mcp", "list"]));
    assert!(
        list.contains("not started: a project server; `bb7 mcp allow`"),
        "{list}"
    );
    assert!(!list.contains(DOC), "{list}");
    let e = fails(&env, &["add", &format!("mcp:proj:{DOC}")]);
    assert!(e.contains("allow"), "{e}");
    ok(&env, &["mcp", "allow"]);
    let list = stdout(&ok(&env, &["mcp", "list"]));
    assert!(list.contains(DOC), "{list}");
    ok(&env, &["mcp", "deny"]);
    let list = stdout(&ok(&env, &["mcp", "list"]));
    assert!(list.contains("not started"), "{list}");
}

#[test]
fn chat_lists_completes_attaches_and_sends_prompts() {
    let (env, fake) =
        fake_env(json!({"mcp_servers": {"everything": mcp_support::everything_stdio()}}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("/mcp\r");
    t.expect("/mcp:everything:args-prompt");
    t.expect("bb7> ");
    // Tab completes the resource's URI.
    t.type_keys("/add mcp:everything:demo://resource/static/document/archi\t\r");
    t.expect(&format!("bb7: attached mcp_resource:everything:{DOC}"));
    t.expect("bb7> ");
    fake.push_sse(response("", "Sunny.", vec![]));
    t.type_keys("/mcp:everything:args-prompt city=\"New York\"\r");
    t.expect("Sunny.");
    t.expect("bb7> ");
    t.type_keys("\x04");
    t.wait();
    let user = user_text(&fake, 0);
    assert!(user.contains("What's weather in New York?"), "{user}");
    assert!(
        user.contains(&format!("name=\"everything:{DOC}\"")),
        "{user}"
    );
}

#[test]
fn a_streamable_http_server_through_the_command_line() {
    let http = mcp_support::HttpServer::everything();
    let (env, _fake) = fake_env(json!({"mcp_servers": {"remote": {"url": http.url}}}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let list = stdout(&ok(&env, &["mcp", "list"]));
    assert!(list.contains("remote (http)"), "{list}");
    assert!(list.contains(&format!("mcp:remote:{DOC}")), "{list}");
    let o = ok(&env, &["add", "mcp:remote:demo://resource/dynamic/text/9"]);
    assert!(
        stderr(&o).contains("bb7: attached mcp_resource:remote:demo://resource/dynamic/text/9"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bb7_add_mcp_is_served_by_the_editor_holding_the_chat() {
    let (env, _fake) =
        fake_env(json!({"mcp_servers": {"everything": mcp_support::everything_stdio()}}));
    let (mut editor, _id) = env.with_chat();
    let o = ok(&env, &["add", &format!("mcp:everything:{DOC}")]);
    assert!(
        stderr(&o).contains(&format!("bb7: attached mcp_resource:everything:{DOC}")),
        "{}",
        stderr(&o)
    );
    // The holder's own context has it: its session read the resource.
    let ctx = editor.ok(json!({"action": "context_list"}));
    assert!(
        ctx.to_string()
            .contains(&format!("mcp_resource:everything:{DOC}")),
        "{ctx}"
    );
    let list = stdout(&ok(&env, &["mcp", "list"]));
    assert!(list.contains(DOC), "{list}");
}
