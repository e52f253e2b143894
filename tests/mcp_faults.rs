//! MCP servers that misbehave (`tests/fixtures/mcp/fault_server.js`): one that never
//! answers, one that dies in the middle of a listing, a 50 MB resource, bytes that
//! are not UTF-8, escape sequences, a resource for the user alone, a PDF blob. Each
//! is an error naming the server or a capped, cleaned attachment; none stalls bb7.
//! And the project's own servers, which start only once the user allowed them.

mod common;
mod mcp_support;

use common::fake_env;
use common::fake_model::{self, prompt_text, text};
use serde_json::{Value, json};

fn message(e: &Value) -> &str {
    e["message"].as_str().unwrap()
}

#[test]
fn a_server_that_hangs_crashes_or_sends_bad_bytes_is_an_error_naming_it() {
    let (env, _fake) = fake_env(json!({"mcp_servers": {
        "sleepy": mcp_support::fault("hang", 1),
        "crashy": mcp_support::fault("crash", 20),
        "garbled": mcp_support::fault("badutf8", 2),
        "missing": {"command": "/nonexistent/mcp-server"},
        "huge": mcp_support::fault("hostile", 3),
    }}));
    let (mut b, _id) = env.with_chat();
    let e = b.err(json!({"action": "mcp_resources_list", "server": "sleepy"}));
    assert!(message(&e).contains("MCP server sleepy"), "{e}");
    assert!(message(&e).contains("within 1 s"), "{e}");
    for _ in 0..2 {
        // Dead after the first answer, started again for the second: an error each
        // time, never a stuck request.
        let e = b.err(json!({"action": "mcp_resources_list", "server": "crashy"}));
        assert!(message(&e).contains("MCP server crashy"), "{e}");
    }
    let e = b.err(json!({"action": "mcp_resources_list", "server": "garbled"}));
    assert!(message(&e).contains("MCP server garbled"), "{e}");
    let e = b.err(json!({"action": "mcp_resources_list", "server": "missing"}));
    assert!(message(&e).contains("MCP server missing"), "{e}");
    assert!(message(&e).contains("/nonexistent/mcp-server"), "{e}");
    // 50 MB in one message: the SDK drops a message over 16 MiB unread, so the read
    // is an error once the server's time is up, and the server is stopped.
    let e =
        b.err(json!({"action": "mcp_resource_attach", "server": "huge", "uri": "fault://huge"}));
    assert!(message(&e).contains("MCP server huge"), "{e}");
    // bb7 still serves.
    b.ok(json!({"action": "ping"}));
}

#[test]
fn hostile_contents_are_capped_cleaned_refused_or_kept_from_the_model() {
    let (env, fake) = fake_env(json!({"mcp_servers": {"h": mcp_support::fault("hostile", 60)}}));
    let (mut b, _id) = env.with_chat();
    let list = b.ok(json!({"action": "mcp_resources_list", "server": "h"}));
    let listed = list.to_string();
    assert!(
        !listed.contains("\\u001b"),
        "escape sequences in names are replaced: {listed}"
    );
    let secret = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "fault://secret")
        .unwrap();
    assert_eq!(secret["user_only"], true);

    // 1 MB of text: read, then cut to the attachment cap.
    let big = b.ok(json!({"action": "mcp_resource_attach", "server": "h", "uri": "fault://big"}));
    assert_eq!(big["truncated"], true, "{big}");
    assert!(big["bytes"].as_u64().unwrap() > 1_000_000);
    let snap = b.ok(json!({"action": "get_context_file", "path": "mcp_resource:h:fault://big"}));
    assert!(snap["content"].as_str().unwrap().len() < 70 * 1024);

    let pdf =
        b.err(json!({"action": "mcp_resource_attach", "server": "h", "uri": "fault://manual.pdf"}));
    assert!(message(&pdf).contains("application/pdf"), "{pdf}");
    assert!(message(&pdf).contains("MCP server h"), "{pdf}");

    b.ok(json!({"action": "mcp_resource_attach", "server": "h", "uri": "fault://doc"}));
    let doc = b.ok(json!({"action": "get_context_file", "path": "mcp_resource:h:fault://doc"}));
    let doc = doc["content"].as_str().unwrap();
    assert!(
        !doc.contains('\u{1b}') && doc.contains("cleared"),
        "{doc:?}"
    );

    let s = b.ok(json!({"action": "mcp_resource_attach", "server": "h", "uri": "fault://secret"}));
    assert_eq!(s["user_only"], true);
    let ctx = b.ok(json!({"action": "context_list"}));
    assert!(
        ctx.to_string().contains("mcp_resource:h:fault://secret"),
        "listed for the user"
    );

    // Images: one for the model, one for the user alone.
    let shot = b.ok(json!({"action": "mcp_resource_attach", "server": "h", "uri": "fault://shot"}));
    assert_eq!(shot["paths"], json!(["image:mcp:h:fault://shot"]));
    let private = b
        .ok(json!({"action": "mcp_resource_attach", "server": "h", "uri": "fault://private-shot"}));
    assert_eq!(private["user_only"], true);

    let e = b.err(json!({"action": "mcp_resource_attach", "server": "h", "uri": "fault://none"}));
    assert!(message(&e).contains("Resource not found"), "{e}");

    fake.push_sse(vec![
        text("ok"),
        fake_model::finish("stop"),
        fake_model::done(),
    ]);
    b.turn("look");
    let sent = prompt_text(&fake.chat_bodies()[0]);
    assert!(sent.contains("cleared"), "the cleaned doc is sent");
    assert!(
        !sent.contains("USER-ONLY-NOTE"),
        "a resource for the user alone never reaches the model"
    );
    let body = fake.chat_bodies()[0].to_string();
    assert_eq!(
        body.matches("data:image/png;base64,").count(),
        1,
        "only the image for the model is sent"
    );
    assert!(
        sent.contains("fault://shot")
            && !sent.contains("private-shot")
            && !sent.contains("fault://secret"),
        "{sent}"
    );
}

#[test]
fn project_servers_start_only_once_the_project_is_allowed() {
    let (env, _fake) = fake_env(json!({}));
    let (b, _id) = env.with_chat();
    let marker = env.project.join("ran");
    let servers = json!({"mcp_servers": {"proj": {
        "command": "sh",
        "args": ["-c", format!("touch '{}'; exec node \"$0\" hostile", marker.display()),
                 mcp_support::fault("hostile", 30)["args"][0].clone()],
    }}});
    std::fs::write(env.project.join(".bb7/config.json"), servers.to_string()).unwrap();
    b.close();

    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    let list = b.ok(json!({"action": "mcp_servers_list"}));
    assert_eq!(list["consent_needed"], true, "{list}");
    assert_eq!(list["servers"][0]["origin"], "project");
    assert_eq!(list["servers"][0]["needs_consent"], true);
    let e = b.err(json!({"action": "mcp_resources_list", "server": "proj"}));
    assert!(message(&e).contains("allow"), "{e}");
    assert!(!marker.exists(), "a project's command never runs unasked");

    b.ok(json!({"action": "mcp_consent", "allow": true}));
    b.ok(json!({"action": "mcp_resources_list", "server": "proj"}));
    assert!(marker.exists());
    b.close();

    // Remembered for the next process.
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let list = b.ok(json!({"action": "mcp_servers_list"}));
    assert_eq!(list["consent_needed"], false, "{list}");
    b.close();

    // A changed command must be allowed again.
    let mut changed = servers.clone();
    changed["mcp_servers"]["proj"]["args"][1] = json!("exec node \"$0\" hang");
    std::fs::write(env.project.join(".bb7/config.json"), changed.to_string()).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let list = b.ok(json!({"action": "mcp_servers_list"}));
    assert_eq!(list["consent_needed"], true, "{list}");
}

#[test]
fn servers_stop_with_bb7() {
    let (env, _fake) = fake_env(json!({}));
    let pidfile = env.home.join("mcp.pid");
    let mut spec = mcp_support::fault("stubborn", 30);
    spec["env"] = json!({"MCP_PIDFILE": pidfile});
    env.write_config(json!({"api_key": "k", "mcp_servers": {"s": spec}}));
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "mcp_resources_list", "server": "s"}));
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    let alive = || unsafe { libc::kill(pid, 0) } == 0;
    assert!(alive());
    b.close();
    // A hang guard, counted in polls (the harness's TIMEOUT): the kill is sent as bb7 ends.
    let mut polls = 0;
    while alive() {
        polls += 1;
        assert!(polls < 6000, "MCP server {pid} outlived bb7");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
