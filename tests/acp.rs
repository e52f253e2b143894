//! `bb7 acp` driven by the official ACP crate's client side: the real binary against
//! the fake model endpoint.

mod acp_support;
mod common;

use acp_support::*;
use agent_client_protocol::v1::schema::{
    CancelNotification, ListSessionsRequest, LoadSessionRequest, SetSessionConfigOptionRequest,
};
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

#[test]
fn initialize_new_and_list_make_a_project_on_first_use() {
    let (env, _fake) = fake_env(json!({}));
    let ed = Editor::new(true);
    assert!(!env.project.join(".bb7").exists());
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, init| {
        let init = serde_json::to_value(&init).unwrap();
        assert_eq!(init["protocolVersion"], 1);
        assert_eq!(init["agentCapabilities"]["loadSession"], true);
        assert_eq!(
            init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
            true
        );
        assert_eq!(init["agentInfo"]["name"], "bb7");
        assert!(init["agentInfo"]["version"].as_str().is_some());
        // The ACP Registry lists agents that offer a method (tests/acp_auth.rs).
        assert_eq!(init["authMethods"][0]["id"], "bb7-config");
        let r = cx
            .send_request(agent_client_protocol::v1::schema::NewSessionRequest::new(
                &env.project,
            ))
            .block_task()
            .await?;
        let sid = r.session_id.0.to_string();
        assert!(env.project.join(".bb7").is_dir(), "cwd has .bb7/ now");
        assert!(env.chat_dir(&sid).is_dir(), "the session is a bb7 chat");
        let opts = serde_json::to_value(&r.config_options).unwrap();
        let model = opts
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["category"] == "model")
            .expect("a model option");
        assert_eq!(model["type"], "select");
        assert_eq!(model["currentValue"], "fake/model");
        let list = cx
            .send_request(ListSessionsRequest::new().cwd(env.project.clone()))
            .block_task()
            .await?;
        let list = serde_json::to_value(&list).unwrap();
        assert_eq!(list["sessions"][0]["sessionId"], sid.as_str());
        assert!(list["sessions"][0]["title"].as_str().is_some());
        Ok(())
    }))
    .unwrap();
    // The slash commands were announced.
    assert!(ed.seen.lock().unwrap().updates.iter().any(|n| {
        n["update"]["sessionUpdate"] == "available_commands_update"
            && n["update"]["availableCommands"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "add")
    }));
}

#[test]
fn context_blocks_reach_the_model_and_the_answer_streams_in_order() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/lib.rs", "pub fn one() {}\n");
    env.write("src/big.rs", "l1\nl2\nl3\nl4\nl5\n");
    let mut steps = vec![role(), reasoning("Thinking it over.")];
    steps.extend([
        text("The "),
        text("answer."),
        finish("stop"),
        usage(100, 20, 0.0015),
        done(),
    ]);
    fake.push_sse(steps);
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let r = prompt(
            &cx,
            &sid,
            vec![
                say("Explain these"),
                resource(
                    &file_uri(&env.project.join("src/lib.rs")),
                    "pub fn one() { /* editor text */ }\n",
                ),
                link(
                    &format!("{}#L2:3", file_uri(&env.project.join("src/big.rs"))),
                    "big.rs",
                ),
                resource("zed:///agent/rules?id=1", "Answer in one line."),
            ],
        )
        .await?;
        assert_eq!(stop(&r), "end_turn");
        let kinds: Vec<String> = ed
            .kinds(&sid)
            .into_iter()
            .filter(|k| k != "available_commands_update")
            .collect();
        // The first update lists the context the prompt brought.
        assert_eq!(kinds[0], "agent_message_chunk", "{kinds:?}");
        let first_msg = kinds
            .iter()
            .skip(1)
            .position(|k| k == "agent_message_chunk")
            .unwrap()
            + 1;
        let thought = kinds
            .iter()
            .position(|k| k == "agent_thought_chunk")
            .unwrap();
        let usage = kinds.iter().position(|k| k == "usage_update").unwrap();
        assert!(thought < first_msg && first_msg < usage, "{kinds:?}");
        assert_eq!(
            ed.text(&sid, "agent_message_chunk"),
            "Context: src/lib.rs (new), src/big.rs:2\u{2013}3\n\nThe answer."
        );
        assert_eq!(ed.text(&sid, "agent_thought_chunk"), "Thinking it over.");
        let u = ed
            .updates(&sid)
            .into_iter()
            .find(|u| u["sessionUpdate"] == "usage_update")
            .unwrap();
        assert!(u["used"].as_u64().unwrap() > 0, "{u}");
        assert_eq!(u["cost"]["amount"], 0.0015);
        assert_eq!(u["cost"]["currency"], "USD");
        Ok(())
    }))
    .unwrap();
    let body = fake.chat_bodies().pop().unwrap();
    let sent = prompt_text(&body);
    assert!(
        sent.contains("/* editor text */"),
        "embedded text is the context"
    );
    assert!(
        sent.contains("l2\nl3") && !sent.contains("l5"),
        "a section of the link"
    );
    assert!(sent.contains("Explain these"));
    assert!(
        sent.contains("Answer in one line."),
        "text that is no file joins the message"
    );
}

#[test]
fn resources_typed_as_attachment_kinds_are_attached_not_message_text() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/lib.rs", "pub fn one() {}\n");
    env.write("fix.patch", "--- a/x\n+++ b/x\n(project patch)\n");
    fake.push_sse(response("", "Seen.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let lib = file_uri(&env.project.join("src/lib.rs"));
        let patch = file_uri(&env.project.join("fix.patch"));
        let r = prompt(
            &cx,
            &sid,
            vec![
                say("Look at these"),
                typed_resource(
                    "git:/work/changes/working.diff",
                    "text/x-diff",
                    "--- a/y\n+++ b/y\n(the working diff)\n",
                ),
                typed_resource(
                    &lib,
                    "application/vnd.bb7.diagnostics+json",
                    "src/lib.rs:1:1: error: no tests [rustc]\n",
                ),
                typed_resource(
                    "terminal://cargo%20test",
                    "application/vnd.bb7.command-output; charset=utf-8",
                    "test result: FAILED\n",
                ),
                typed_resource(
                    &patch,
                    "text/x-patch",
                    "--- a/x\n+++ b/x\n(project patch)\n",
                ),
            ],
        )
        .await?;
        assert_eq!(stop(&r), "end_turn");
        Ok(())
    }))
    .unwrap();
    let sent = prompt_text(&fake.chat_bodies().pop().unwrap());
    for (kind, name, text) in [
        ("git_diff", "working.diff", "(the working diff)"),
        ("diagnostics", "lib.rs", "error: no tests [rustc]"),
        ("command_output", "cargo test", "test result: FAILED"),
    ] {
        let open = format!("<attachment kind=\"{kind}\" name=\"{name}\" file_id=\"");
        let at = sent
            .find(&open)
            .unwrap_or_else(|| panic!("{open} in {sent}"));
        assert!(
            sent[at..].contains(text),
            "{text} in the attachment: {sent}"
        );
        assert_eq!(
            sent.matches(text).count(),
            1,
            "{text} once, not as message text"
        );
    }
    assert!(
        !sent.contains("working.diff:\n"),
        "not joined to the message: {sent}"
    );
    assert!(
        !sent.contains("name=\"fix.patch\"") && sent.contains("(project patch)"),
        "a project file stays a file: {sent}"
    );
}

#[test]
fn paths_outside_the_project_are_refused() {
    let (env, fake) = fake_env(json!({}));
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret\n").unwrap();
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        for block in [
            link(&file_uri(&secret), "secret.txt"),
            resource(&file_uri(&secret), "secret\n"),
            link(&file_uri(&env.project.join("../escape.txt")), "escape"),
        ] {
            let e = prompt(&cx, &sid, vec![say("read this"), block])
                .await
                .expect_err("refused");
            assert_eq!(i32::from(e.code), -32602, "{e:?}");
            assert!(e.message.contains("outside the project"), "{}", e.message);
        }
        Ok(())
    }))
    .unwrap();
    assert!(fake.chat_bodies().is_empty(), "nothing went to the model");
}

#[test]
fn a_model_error_ends_the_prompt_and_the_next_one_works() {
    let (env, fake) = fake_env(json!({"max_retries": 0}));
    fake.push(http_error(402, "Insufficient credits on this key"));
    fake.push_sse(response("", "Fine now.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let e = prompt(&cx, &sid, vec![say("hi")]).await.expect_err("fails");
        assert!(e.message.contains("402"), "{}", e.message);
        assert!(e.message.contains("Insufficient credits"), "{}", e.message);
        let r = prompt(&cx, &sid, vec![say("again")]).await?;
        assert_eq!(stop(&r), "end_turn");
        assert_eq!(ed.text(&sid, "agent_message_chunk"), "Fine now.");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn model_selection_is_a_config_option() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "ok", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        let r = cx
            .send_request(SetSessionConfigOptionRequest::new(
                sid.clone(),
                "model",
                "other/model",
            ))
            .block_task()
            .await?;
        let opts = serde_json::to_value(&r.config_options).unwrap();
        assert!(
            opts.as_array()
                .unwrap()
                .iter()
                .any(|o| o["id"] == "model" && o["currentValue"] == "other/model"),
            "{opts}"
        );
        let e = cx
            .send_request(SetSessionConfigOptionRequest::new(
                sid.clone(),
                "tools",
                "sometimes",
            ))
            .block_task()
            .await
            .expect_err("not a value");
        assert_eq!(i32::from(e.code), -32602);
        prompt(&cx, &sid, vec![say("hi")]).await?;
        Ok(())
    }))
    .unwrap();
    assert_eq!(fake.chat_bodies()[0]["model"], "other/model");
}

fn _unused(_: Value, _: CancelNotification, _: LoadSessionRequest) {}
