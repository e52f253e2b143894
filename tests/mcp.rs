//! MCP resources and prompts through the protocol, against the npm registry's
//! reference servers (`server-everything` over stdio and Streamable HTTP,
//! `server-filesystem`): servers listed, resources and templates listed, a resource
//! attached as an `mcp_resource` snapshot that the model sees in the context block,
//! prompts listed and rendered with their embedded resources attached.

mod common;
mod mcp_support;

use common::fake_env;
use common::fake_model::{self, prompt_text, text};
use serde_json::{Value, json};

const DOC: &str = "demo://resource/static/document/architecture.md";

fn answer(fake: &fake_model::FakeModel) {
    fake.push_sse(vec![
        text("ok"),
        fake_model::finish("stop"),
        fake_model::done(),
    ]);
}

fn user_text(body: &Value) -> String {
    let mut body = body.clone();
    body["messages"].as_array_mut().unwrap().remove(0);
    prompt_text(&body)
}

/// Lists, attaches and sends a resource of `server`, a running everything server.
fn resources_attach_and_send(server: &str, transport: &str, mcp: Value) {
    let (env, fake) = fake_env(json!({"mcp_servers": mcp}));
    let (mut b, _id) = env.with_chat();

    let servers = b.ok(json!({"action": "mcp_servers_list"}));
    assert_eq!(servers["type"], "mcp_servers");
    let s = &servers["servers"][0];
    assert_eq!(s["name"], server);
    assert_eq!(s["transport"], transport);
    assert_eq!(s["origin"], "user");
    assert_eq!(s["running"], false, "servers start on first use: {servers}");

    let list = b.ok(json!({"action": "mcp_resources_list", "server": server}));
    assert_eq!(list["type"], "mcp_resources", "{list}");
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&DOC), "{uris:?}");
    let templates: Vec<&str> = list["templates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["uri_template"].as_str())
        .collect();
    assert!(
        templates.contains(&"demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );
    let running = b.ok(json!({"action": "mcp_servers_list"}));
    assert_eq!(running["servers"][0]["running"], true);

    let r = b.ok(json!({"action": "mcp_resource_attach", "server": server, "uri": DOC}));
    assert_eq!(r["type"], "mcp_attached", "{r}");
    let path = format!("mcp_resource:{server}:{DOC}");
    assert_eq!(r["paths"], json!([path]));
    assert_eq!(r["user_only"], false);
    // A template filled in.
    let t = b.ok(json!({"action": "mcp_resource_attach", "server": server,
                        "uri": "demo://resource/dynamic/text/3"}));
    let tpath = t["paths"][0].as_str().unwrap().to_owned();

    let ctx = b.ok(json!({"action": "context_list"}));
    let entry = ctx["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{ctx}"))
        .clone();
    assert_eq!(entry["kind"], "mcp_resource");
    assert_eq!(entry["readonly"], true);
    assert_eq!(entry["meta"]["server"], server);
    assert_eq!(entry["meta"]["uri"], DOC);
    assert_eq!(entry["meta"]["mime"], "text/markdown");
    let snap = b.ok(json!({"action": "get_context_file", "path": tpath}));
    assert!(
        snap["content"]
            .as_str()
            .unwrap()
            .starts_with("Resource 3: "),
        "{snap}"
    );

    answer(&fake);
    b.turn("what does the architecture say?");
    let user = user_text(&fake.chat_bodies()[0]);
    let open = format!("<attachment kind=\"mcp_resource\" name=\"{server}:{DOC}\"");
    let at = user.find(&open).unwrap_or_else(|| panic!("{user}"));
    assert!(at < user.find("</context>").unwrap());
    assert!(user[at..].contains("mode=\"read-only\" fence=\""));
    assert!(user.contains("Resource 3: "), "the template's text is sent");

    b.ok(json!({"action": "context_remove", "path": path}));
    let ctx = b.ok(json!({"action": "context_list"}));
    assert!(!ctx.to_string().contains(&format!("\"{path}\"")));
}

#[test]
fn stdio_resources_are_listed_attached_and_sent_as_context() {
    let mcp = json!({"everything": mcp_support::everything_stdio()});
    resources_attach_and_send("everything", "stdio", mcp);
}

#[test]
fn streamable_http_resources_are_listed_attached_and_sent_as_context() {
    let http = mcp_support::HttpServer::everything();
    let mcp = json!({"remote": {"url": http.url, "headers": {"X-Test": "1"}}});
    resources_attach_and_send("remote", "http", mcp);
}

#[test]
fn prompts_render_into_a_message_and_attach_their_embedded_resources() {
    let (env, _fake) = fake_env(json!({"mcp_servers": {
        "everything": mcp_support::everything_stdio(),
        "fs": mcp_support::filesystem(&std::env::temp_dir()),
    }}));
    let (mut b, _id) = env.with_chat();
    let all = b.ok(json!({"action": "mcp_prompts_list"}));
    assert_eq!(all["type"], "mcp_prompts", "{all}");
    let names: Vec<(String, String)> = all["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["server"].as_str().unwrap().into(),
                p["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        names.contains(&("everything".into(), "args-prompt".into())),
        "{names:?}"
    );
    assert!(
        names.iter().all(|(s, _)| s == "everything"),
        "fs has no prompts: {names:?}"
    );
    let args = all["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "args-prompt")
        .unwrap()["arguments"]
        .clone();
    assert_eq!(args[0]["name"], "city");
    assert_eq!(args[0]["required"], true);

    let p = b.ok(json!({"action": "mcp_prompt_get", "server": "everything",
                        "name": "args-prompt", "arguments": {"city": "Paris"}}));
    assert_eq!(p["type"], "mcp_prompt", "{p}");
    assert_eq!(p["text"], "What's weather in Paris?");
    assert_eq!(p["attached"], json!([]));

    let p = b.ok(json!({"action": "mcp_prompt_get", "server": "everything",
                        "name": "resource-prompt",
                        "arguments": {"resourceType": "Text", "resourceId": "2"}}));
    assert!(
        p["text"].as_str().unwrap().contains("resource with id: 2"),
        "{p}"
    );
    let attached = p["attached"][0].as_str().unwrap();
    assert_eq!(
        attached,
        "mcp_resource:everything:demo://resource/dynamic/text/2"
    );
    let ctx = b.ok(json!({"action": "context_list"}));
    assert!(ctx.to_string().contains(attached));

    // A prompt the server does not have: its error, naming the server.
    let e = b.err(json!({"action": "mcp_prompt_get", "server": "everything", "name": "nope"}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("MCP server everything"),
        "{e}"
    );

    // The filesystem server offers tools only: no resources, no templates.
    let fs = b.ok(json!({"action": "mcp_resources_list", "server": "fs"}));
    assert_eq!(fs["resources"], json!([]));
    assert_eq!(fs["templates"], json!([]));
}

#[test]
fn an_unknown_server_or_a_malformed_entry_is_a_clear_error() {
    let (env, _fake) = fake_env(json!({"mcp_servers": {"bad": {"url": "ftp://x"}}}));
    let (mut b, _id) = env.with_chat();
    let list = b.ok(json!({"action": "mcp_servers_list"}));
    assert!(
        list["servers"][0]["error"]
            .as_str()
            .unwrap()
            .contains("http"),
        "{list}"
    );
    let e = b.err(json!({"action": "mcp_resources_list", "server": "nope"}));
    assert_eq!(e["code"], "not_found");
    assert!(e["message"].as_str().unwrap().contains("bad"), "{e}");
    let e = b.err(json!({"action": "mcp_resources_list", "server": "bad"}));
    assert!(
        e["message"].as_str().unwrap().contains("MCP server bad"),
        "{e}"
    );
}

#[test]
fn an_attached_resource_is_counted_copied_to_a_new_chat_and_re_read() {
    let (env, _fake) =
        fake_env(json!({"mcp_servers": {"everything": mcp_support::everything_stdio()}}));
    let (mut b, id) = env.with_chat();
    let before = b.ok(json!({"action": "estimate_tokens"}));
    let uri = "demo://resource/dynamic/text/4";
    b.ok(json!({"action": "mcp_resource_attach", "server": "everything", "uri": uri}));
    let after = b.ok(json!({"action": "estimate_tokens"}));
    assert!(
        after["context_files"].as_u64().unwrap() > before["context_files"].as_u64().unwrap(),
        "{before} {after}"
    );
    let path = format!("mcp_resource:everything:{uri}");
    let first = b.ok(json!({"action": "get_context_file", "path": path}));
    // Adding it again reads it again: the everything server stamps each read with
    // the time, so the snapshot is new unless the second fell in the same second.
    let again = b.ok(json!({"action": "mcp_resource_attach", "server": "everything", "uri": uri}));
    assert_eq!(again["paths"], json!([path]));
    let ctx = b.ok(json!({"action": "context_list"}));
    let same: Vec<&Value> = ctx["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"] == path)
        .collect();
    assert_eq!(same.len(), 1, "one entry, replaced: {ctx}");
    assert!(
        first["content"]
            .as_str()
            .unwrap()
            .starts_with("Resource 4: ")
    );

    let copy = b.ok(json!({"action": "chat_new_with_context", "source_chat_id": id}));
    assert_ne!(copy["id"], id.as_str());
    let ctx = b.ok(json!({"action": "context_list"}));
    assert!(
        ctx.to_string().contains(&path),
        "the new chat has it: {ctx}"
    );
    let snap = b.ok(json!({"action": "get_context_file", "path": path}));
    assert!(
        snap["content"]
            .as_str()
            .unwrap()
            .starts_with("Resource 4: ")
    );
}
