//! `bb7 acp` against the current ACP schema: `usage_update` carries the chat's running
//! cost, and the chat's reasoning effort is a `thought_level` config option.

mod acp_support;
mod common;

use acp_support::*;
use agent_client_protocol::v1::schema::SetSessionConfigOptionRequest;
use common::fake_env;
use common::fake_model::*;
use serde_json::{Value, json};

#[test]
fn usage_update_cost_is_the_chats_running_total() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "One.", vec![]));
    fake.push_sse(response("", "Two.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(&cx, &sid, vec![say("One")]).await?;
        prompt(&cx, &sid, vec![say("Two")]).await?;
        let usage: Vec<Value> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "usage_update")
            .collect();
        assert_eq!(usage.len(), 2, "{usage:?}");
        assert_eq!(usage[0]["cost"]["amount"], 0.0015);
        let total = usage[1]["cost"]["amount"].as_f64().unwrap();
        assert!((total - 0.003).abs() < 1e-9, "{usage:?}");
        // `used` is the next request's fill (tests/acp_usage.rs): the history grew.
        assert!(
            usage[1]["used"].as_u64() > usage[0]["used"].as_u64(),
            "{usage:?}"
        );
        // Each answer is its own message.
        let ids: Vec<Value> = ed
            .updates(&sid)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["messageId"].clone())
            .collect();
        assert!(ids.iter().all(Value::is_string), "{ids:?}");
        assert_ne!(ids.first(), ids.last(), "{ids:?}");
        Ok(())
    }))
    .unwrap();
}

#[test]
fn reasoning_effort_is_a_thought_level_option() {
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "Thought.", vec![]));
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let r = cx
            .send_request(agent_client_protocol::v1::schema::NewSessionRequest::new(
                &env.project,
            ))
            .block_task()
            .await?;
        let opts = serde_json::to_value(&r.config_options).unwrap();
        let effort = opts
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["category"] == "thought_level")
            .expect("a thought_level option")
            .clone();
        assert_eq!(effort["id"], "reasoning_effort");
        assert_eq!(effort["currentValue"], "default");
        let sid = r.session_id.0.to_string();
        let set = cx
            .send_request(SetSessionConfigOptionRequest::new(
                sid.clone(),
                "reasoning_effort",
                "high",
            ))
            .block_task()
            .await?;
        let opts = serde_json::to_value(&set.config_options).unwrap();
        assert!(
            opts.as_array()
                .unwrap()
                .iter()
                .any(|o| o["id"] == "reasoning_effort" && o["currentValue"] == "high"),
            "{opts}"
        );
        prompt(&cx, &sid, vec![say("Think hard")]).await?;
        Ok(())
    }))
    .unwrap();
    let body = fake.chat_bodies().pop().unwrap();
    assert_eq!(body["reasoning"]["effort"], "high", "{body}");
}

/// A PNG's signature and header, 64 × 48 pixels, then some bytes.
fn png() -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend(64u32.to_be_bytes());
    b.extend(48u32.to_be_bytes());
    b.extend([8, 6, 0, 0, 0, 0xAB, 0xCD, 0xEF, 0x01, 0x00, 0xFF]);
    b
}

#[test]
fn image_blocks_are_bb7_images_with_its_refusals() {
    use agent_client_protocol::v1::schema::{ContentBlock, ImageContent};
    use base64::Engine;
    let (env, fake) = fake_env(json!({}));
    fake.push_sse(response("", "A picture.", vec![]));
    let data = base64::engine::general_purpose::STANDARD.encode(png());
    let ed = Editor::new(false);
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, init| {
        let init = serde_json::to_value(&init).unwrap();
        assert_eq!(
            init["agentCapabilities"]["promptCapabilities"]["image"], true,
            "{init}"
        );
        let sid = new_session(&cx, &env.project).await?;
        let pasted = ContentBlock::Image(ImageContent::new(data.clone(), "image/png"));
        prompt(&cx, &sid, vec![pasted, say("What is this?")]).await?;
        assert!(
            ed.text(&sid, "agent_message_chunk")
                .starts_with("Context: image-1.png (new)\n\n"),
            "{}",
            ed.text(&sid, "agent_message_chunk")
        );
        let bmp = ContentBlock::Image(ImageContent::new(data.clone(), "image/bmp"));
        let e = prompt(&cx, &sid, vec![bmp, say("And this?")])
            .await
            .unwrap_err();
        assert!(
            e.message.contains("PNG, JPEG, GIF or WebP"),
            "{}",
            e.message
        );
        let not_png = base64::engine::general_purpose::STANDARD.encode(b"hello");
        let fake_png = ContentBlock::Image(ImageContent::new(not_png, "image/png"));
        let e = prompt(&cx, &sid, vec![fake_png, say("And this?")])
            .await
            .unwrap_err();
        assert!(e.message.contains("is not a PNG"), "{}", e.message);
        Ok(())
    }))
    .unwrap();
    let body = fake.chat_bodies().pop().unwrap();
    let parts = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect::<Vec<Value>>();
    let url = parts
        .iter()
        .find(|p| p["type"] == "image_url")
        .expect("the image reaches the model")["image_url"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(url, format!("data:image/png;base64,{data}"));
}
