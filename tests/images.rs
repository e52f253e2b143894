//! Images in context: `context_add` of an image file becomes an image attachment,
//! sent as the provider's image part (OpenAI-compatible `image_url`, Anthropic
//! `image`), refused for a model the list gives as text-only, size-capped, listed
//! and counted in the estimate.

mod common;

use common::fake_model::{self, FakeModel, Reply, Step, text};
use common::{Env, fake_env};
use serde_json::{Value, json};

/// A PNG's signature and header, 64 × 48 pixels, then some bytes.
fn png() -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend(64u32.to_be_bytes());
    b.extend(48u32.to_be_bytes());
    b.extend([8, 6, 0, 0, 0, 0xAB, 0xCD, 0xEF, 0x01, 0x00, 0xFF]);
    b
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn models(fake: &FakeModel, inputs: &[&str]) {
    fake.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{"id": "fake/model", "context_length": 100000,
            "architecture": {"input_modalities": inputs},
            "pricing": {"prompt": "0", "completion": "0"}}]})
        .to_string(),
    });
}

fn answer(fake: &FakeModel) {
    fake.push_sse(vec![
        text("A cat."),
        fake_model::finish("stop"),
        fake_model::done(),
    ]);
}

#[test]
fn an_image_is_sent_as_an_image_url_part_to_a_vision_model() {
    let (env, fake) = fake_env(json!({}));
    models(&fake, &["text", "image"]);
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "get_models"}));
    std::fs::write(env.project.join("shot.png"), png()).unwrap();
    env.add(&mut b, "notes.md", "look\n");
    // The client's content is not the image: bb7 reads the file itself.
    b.ok(json!({"action": "context_add", "path": "shot.png", "content": ""}));
    let list = b.ok(json!({"action": "context_list"}));
    let image = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "image")
        .unwrap()
        .clone();
    assert_eq!(image["path"], "image:shot.png");
    assert_eq!(image["meta"]["width"], 64);
    assert_eq!(image["meta"]["tokens"], 5, "64 × 48 / 750, rounded up");
    let statuses = b.ok(json!({"action": "get_file_statuses", "contents": false}));
    let row = statuses["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "image:shot.png")
        .unwrap()
        .clone();
    assert_eq!(
        (row["kind"].clone(), row["tokens"].clone()),
        (json!("image"), json!(5))
    );
    let before = b.ok(json!({"action": "estimate_tokens", "input_text": ""}));
    b.ok(json!({"action": "context_remove", "path": "image:shot.png"}));
    let without = b.ok(json!({"action": "estimate_tokens", "input_text": ""}));
    assert_eq!(
        before["context_files"].as_u64().unwrap() - without["context_files"].as_u64().unwrap(),
        5,
        "{before} {without}"
    );
    b.ok(json!({"action": "context_add", "path": "shot.png", "content": ""}));

    answer(&fake);
    let end = b.turn("what is in the picture?");
    assert_eq!(end["type"], "done", "{end}");
    let body = &fake.chat_bodies()[0];
    let parts = body["messages"][1]["content"]
        .as_array()
        .expect("content parts");
    let at = parts
        .iter()
        .position(|p| p["type"] == "image_url")
        .expect("an image part");
    assert_eq!(
        parts[at]["image_url"]["url"],
        format!("data:image/png;base64,{}", base64(&png()))
    );
    assert!(parts[at].get("text").is_none());
    // It follows the text block that names it, the context block.
    let named = parts[at - 1]["text"].as_str().unwrap();
    assert!(named.starts_with("<context>"), "{named}");
    assert!(
        named.contains("<attachment kind=\"image\" name=\"shot.png\" media_type=\"image/png\""),
        "{named}"
    );
    assert!(
        !named.contains(&base64(&png())),
        "the image is not sent as text"
    );
}

#[test]
fn an_image_is_refused_for_a_text_only_model_and_bad_images_are_refused() {
    let (env, fake) = fake_env(json!({}));
    models(&fake, &["text"]);
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "get_models"}));
    std::fs::write(env.project.join("shot.png"), png()).unwrap();
    b.ok(json!({"action": "context_add", "path": "shot.png", "content": ""}));
    let rid = b.send(json!({"action": "send", "content": "what is this?"}));
    let e = b.reply_to(&rid);
    assert_eq!(e["type"], "error", "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("fake/model does not read images (the model list gives its input as text); remove image:shot.png"),
        "{msg}"
    );
    assert!(fake.chat_bodies().is_empty(), "nothing was sent");

    std::fs::write(env.project.join("fake.png"), "not a picture").unwrap();
    let e = b.err(json!({"action": "context_add", "path": "fake.png", "content": ""}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("is not a PNG, JPEG, GIF or WebP image"),
        "{e}"
    );
    let mut big = png();
    big.resize(5 * 1024 * 1024 + 1, 0);
    std::fs::write(env.project.join("big.png"), big).unwrap();
    let e = b.err(json!({"action": "context_add", "path": "big.png", "content": ""}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("too large to send as an image"),
        "{e}"
    );
    // context_attach takes no images.
    b.err(json!({"action": "context_attach", "kind": "image", "name": "x", "content": "y"}));
}

#[test]
fn an_image_is_sent_as_an_anthropic_image_block() {
    let env = Env::new();
    let remote = FakeModel::start();
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A cat."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let answer: Vec<Step> = events.iter().map(|e| Step::Data(e.to_string())).collect();
    remote.set_fallback(Box::new(move |req| {
        req.path
            .ends_with("/messages")
            .then(|| Reply::Sse(answer.clone()))
    }));
    env.write_config(json!({
        "providers": {"remote": {"api": "anthropic", "base_url": remote.url, "api_key": "ak",
                                 "model": "claude-sonnet-4-5"}}
    }));
    let (mut b, _chat) = env.with_chat();
    std::fs::write(env.project.join("shot.png"), png()).unwrap();
    b.ok(json!({"action": "context_add", "path": "shot.png", "content": ""}));
    let end = b.turn("what is in the picture?");
    assert_eq!(end["type"], "done", "{end}");
    let sent = remote.requests();
    let body = &sent
        .iter()
        .find(|r| r.path.ends_with("/messages"))
        .unwrap()
        .body;
    let blocks = body["messages"][0]["content"].as_array().unwrap();
    let image: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "image").collect();
    assert_eq!(image.len(), 1, "{blocks:?}");
    assert_eq!(
        image[0]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": base64(&png())})
    );
}

#[test]
fn an_image_whose_header_cannot_be_read_is_refused_at_the_add() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    // A PNG signature followed by noise: no IHDR chunk to read the size from.
    let mut noise = b"\x89PNG\r\n\x1a\n".to_vec();
    noise.extend((0u32..200).map(|i| (i * 37 % 251) as u8));
    std::fs::write(env.project.join("logo.png"), &noise).unwrap();
    let e = b.err(json!({"action": "context_add", "path": "logo.png", "content": ""}));
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("logo.png is not a valid PNG image"), "{e}");
    // Cut short after the chunk name: no width and height either.
    std::fs::write(env.project.join("cut.png"), &png()[..20]).unwrap();
    let e = b.err(json!({"action": "context_add", "path": "cut.png", "content": ""}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("not a valid PNG image"),
        "{e}"
    );
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"], json!([]));
    // A well-formed header is read.
    std::fs::write(env.project.join("ok.png"), png()).unwrap();
    b.ok(json!({"action": "context_add", "path": "ok.png", "content": ""}));
}

#[test]
fn the_model_list_is_fetched_before_an_image_is_sent_to_a_model_it_may_not_read() {
    let (env, fake) = fake_env(json!({}));
    models(&fake, &["text"]);
    let (mut b, _id) = env.with_chat();
    // No get_models: bb7 has never fetched the list.
    std::fs::write(env.project.join("shot.png"), png()).unwrap();
    b.ok(json!({"action": "context_add", "path": "shot.png", "content": ""}));
    let rid = b.send(json!({"action": "send", "content": "what is this?"}));
    let e = b.reply_to(&rid);
    assert_eq!(e["type"], "error", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("fake/model does not read images"),
        "{e}"
    );
    assert!(fake.chat_bodies().is_empty(), "nothing was sent");
    // The list is cached: a second send does not fetch it again.
    let fetched = |fake: &FakeModel| {
        fake.requests()
            .iter()
            .filter(|r| r.path.ends_with("/models"))
            .count()
    };
    assert_eq!(fetched(&fake), 1);
    let rid = b.send(json!({"action": "send", "content": "and now?"}));
    assert_eq!(b.reply_to(&rid)["type"], "error");
    assert_eq!(fetched(&fake), 1);
}
