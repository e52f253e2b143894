//! MCP over ACP: `session/new`'s `mcpServers` (the reference everything server over
//! stdio and over Streamable HTTP) become the session's servers; their prompts are
//! announced as `/mcp:SERVER:PROMPT` commands and render into the message; a
//! `resource_link` a server lists is read through it and attached.

mod acp_support;
mod common;
mod mcp_support;

use acp_support::*;
use agent_client_protocol::v1::schema::{McpServer, NewSessionRequest};
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

const DOC: &str = "demo://resource/static/document/architecture.md";

fn user_text(fake: &FakeModel, n: usize) -> String {
    let mut body: Value = fake.chat_bodies()[n].clone();
    body["messages"].as_array_mut().unwrap().remove(0);
    prompt_text(&body)
}

#[test]
fn mcp_servers_of_session_new_serve_prompts_and_resource_links() {
    let (env, fake) = fake_env(json!({}));
    let http = mcp_support::HttpServer::everything();
    let stdio = mcp_support::everything_stdio();
    let servers: Vec<McpServer> = serde_json::from_value(json!([
        {"name": "local", "command": "node", "args": stdio["args"], "env": []},
        {"type": "http", "name": "remote", "url": http.url, "headers": []},
    ]))
    .unwrap();
    let ed = Editor::new(true);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, init| {
        let init = serde_json::to_value(&init).unwrap();
        assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["http"], true);
        let r = cx
            .send_request(NewSessionRequest::new(&env.project).mcp_servers(servers))
            .block_task()
            .await?;
        let sid = r.session_id.0.to_string();
        // The prompts are announced once the servers answered (a hang guard, counted
        // in polls).
        let announced = |ed: &Editor| {
            ed.updates(&sid).iter().any(|u| {
                u["sessionUpdate"] == "available_commands_update"
                    && u["availableCommands"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|c| c["name"] == "mcp:remote:args-prompt")
            })
        };
        let mut polls = 0;
        while !announced(&ed) {
            polls += 1;
            assert!(
                polls < 3000,
                "no MCP prompts announced: {:?}",
                ed.updates(&sid)
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let cmds = ed
            .updates(&sid)
            .into_iter()
            .rfind(|u| u["sessionUpdate"] == "available_commands_update")
            .unwrap();
        let names: Vec<&str> = cmds["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert!(
            names.contains(&"add") && names.contains(&"mcp:local:simple-prompt"),
            "{names:?}"
        );

        fake.push_sse(response("", "Sunny.", vec![]));
        prompt(&cx, &sid, vec![say("/mcp:remote:args-prompt city=Paris")]).await?;
        fake.push_sse(response("", "Read it.", vec![]));
        prompt(
            &cx,
            &sid,
            vec![say("summarise "), link(DOC, "architecture")],
        )
        .await?;
        Ok(())
    }))
    .unwrap();
    assert!(user_text(&fake, 0).contains("What's weather in Paris?"));
    let second = user_text(&fake, 1);
    assert!(
        second.contains(&format!(
            "<attachment kind=\"mcp_resource\" name=\"local:{DOC}\""
        )),
        "{second}"
    );
}
