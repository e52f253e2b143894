//! `bb7 export` and `bb7 import` through the binary: Markdown as `bb7 show` prints it
//! with planted secrets redacted by default (and counted), JSON that imports back into
//! a new chat with the same messages, context snapshots and outputs.

mod cli_support;
mod common;

use cli_support::{lossy, ok};
use common::fake_env;
use common::fake_model::response;
use serde_json::{Value, json};

const OPENROUTER: &str =
    "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const GITHUB: &str = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";

#[test]
fn markdown_is_redacted_by_default_and_json_imports_back_into_a_new_chat() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let env_file = format!("GITHUB_TOKEN={GITHUB}\nMAX_TOKENS=4096\n");
    env.add(&mut b, "settings.env", &env_file);
    env.add(&mut b, "a.py", "def a():\n    return 1\n");
    let edit = json!({"edits": [{"path": "a.py", "old_string": "    return 1\n",
                                 "new_string": "    return 2\n"}]});
    fake.push_sse(response("", "Changed it.", vec![("edit_file", edit)]));
    let done = b.turn(&format!(
        "My key is {OPENROUTER} and AWS id {AWS}; fix a.py"
    ));
    assert_eq!(done["type"], "done", "{done}");
    drop(b);

    let shown = lossy(&ok(&env, &["show"]).stdout);
    assert!(shown.contains(OPENROUTER), "show prints the chat as it is");
    let o = ok(&env, &["export"]);
    let md = lossy(&o.stdout);
    assert!(!md.contains(OPENROUTER) && !md.contains(AWS), "{md}");
    assert!(
        md.contains("[REDACTED:openrouter_key]") && md.contains("[REDACTED:aws_access_key_id]"),
        "{md}"
    );
    assert_eq!(
        md,
        shown
            .replace(OPENROUTER, "[REDACTED:openrouter_key]")
            .replace(AWS, "[REDACTED:aws_access_key_id]")
    );
    assert!(
        lossy(&o.stderr).contains("redacted 2 likely secret(s)"),
        "{}",
        lossy(&o.stderr)
    );
    assert_eq!(lossy(&ok(&env, &["export", "--no-redact"]).stdout), shown);

    // JSON: redacted only on request.
    let raw = lossy(&ok(&env, &["export", "--format", "json", &id]).stdout);
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["files"]["context/settings.env"], env_file.as_str());
    assert_eq!(v["files"]["output/a.py"], "def a():\n    return 2\n");
    let o = ok(&env, &["export", "--format", "json", "--redact"]);
    let redacted = lossy(&o.stdout);
    assert!(
        !redacted.contains(GITHUB) && !redacted.contains(OPENROUTER),
        "{redacted}"
    );
    assert!(redacted.contains("MAX_TOKENS=4096"), "look-alikes stay");
    assert!(
        lossy(&o.stderr).contains("redacted 3 likely secret(s)"),
        "{}",
        lossy(&o.stderr)
    );

    env.write("chat.json.export", &raw);
    let o = ok(&env, &["import", "chat.json.export"]);
    let new_id = lossy(&o.stdout).trim().to_owned();
    assert_ne!(new_id, id);
    let imported = env.chat_json(&new_id);
    let original = env.chat_json(&id);
    assert_eq!(imported["messages"], original["messages"]);
    assert_eq!(imported["context_files"], original["context_files"]);
    assert!(imported["name"].as_str().unwrap().ends_with("(imported)"));
    assert_eq!(
        env.output(&new_id, "a.py").as_deref(),
        Some("def a():\n    return 2\n")
    );
    // The imported chat is the active one, and reads as the original does.
    let again = lossy(&ok(&env, &["show"]).stdout);
    assert_eq!(
        again.lines().skip(3).collect::<Vec<_>>(),
        shown.lines().skip(3).collect::<Vec<_>>()
    );
    let status = lossy(&ok(&env, &["status"]).stdout);
    assert!(
        status.contains("a.py") && status.contains("settings.env"),
        "{status}"
    );

    // A file outside the chat's context and outputs is refused.
    let mut bad = v.clone();
    bad["files"]["../../escape.txt"] = json!("x");
    env.write("bad.export", &bad.to_string());
    let err = cli_support::fails(&env, &["import", "bad.export"]);
    assert!(err.contains("outside the chat's context"), "{err}");
}
