//! Small things a shell user meets: `init` twice, `bb7 use` and chat id prefixes,
//! `bb7 models` against a local server without a key, `/add` of directories and
//! globs, `/chats` by prefix, and `/tokens` naming why there is no price.

mod cli_support;
mod common;

use cli_support::*;
use common::Env;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn init_on_an_initialized_project_is_not_a_failure() {
    let env = Env::new();
    ok(&env, &["init"]);
    let o = ok(&env, &["init"]);
    assert!(stderr(&o).contains("already initialized"), "{}", stderr(&o));
}

#[test]
fn use_switches_the_active_chat_by_id_prefix_or_name() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "f\n")]);
    let first = stdout(&ok(&env, &["chats"]))
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned();
    let second = stdout(&ok(&env, &["new", "release notes"]))
        .trim()
        .to_owned();
    ok(&env, &["use", &first[..4]]);
    let listing = stdout(&ok(&env, &["chats"]));
    assert!(
        listing.contains(&format!("* {first}")) || listing.contains(&format!("*  {first}")),
        "{listing}"
    );
    ok(&env, &["use", "Release Notes"]);
    let listing = stdout(&ok(&env, &["chats"]));
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with('*') && l.contains(&second)),
        "{listing}"
    );
    let err = fails(&env, &["use", "nonesuch"]);
    assert!(err.contains("no chat nonesuch"), "{err}");
}

#[test]
fn models_lists_a_local_servers_models_without_a_key() {
    let env = Env::new();
    let local = FakeModel::start();
    local.set_models(Reply::Http {
        status: 200,
        headers: vec![],
        body: json!({"data": [{"id": "qwen2.5-coder:14b"}]}).to_string(),
    });
    env.write_config(json!({
        "providers": {"local": {"base_url": local.url, "model": "qwen2.5-coder:14b"}},
        "agent_mode": "local"
    }));
    ok(&env, &["init"]);
    let o = ok(&env, &["models"]);
    assert!(stdout(&o).contains("qwen2.5-coder:14b"), "{}", stderr(&o));
}

#[test]
fn slash_add_takes_directories_and_globs_and_chats_takes_a_prefix() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("top.txt", "t\n")]);
    env.write("src/a.rs", "a\n");
    env.write("src/deep/b.rs", "b\n");
    env.write("src/notes.md", "n\n");
    env.write("docs/x.md", "x\n");
    std::fs::write(env.project.join(".gitignore"), "ignored/\n").unwrap();
    env.write("ignored/skip.rs", "s\n");
    let second = stdout(&ok(&env, &["new", "other"])).trim().to_owned();
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("/add src\r");
    t.expect("added src/deep/b.rs");
    t.expect("bb7> ");
    t.type_keys("/add docs/*.md **/*.rs\r");
    t.expect("added docs/x.md");
    t.expect("bb7> ");
    t.type_keys("/files\r");
    let files = t.expect("bb7> ");
    for p in ["src/a.rs", "src/deep/b.rs", "src/notes.md", "docs/x.md"] {
        assert!(files.contains(p), "{p}: {files}");
    }
    assert!(!files.contains("skip.rs"), "{files}");
    // Tab lists the candidates when several match.
    t.type_keys("/re\t\t");
    t.expect("/refresh");
    t.expect("/review");
    t.type_keys("\x15");
    t.type_keys(&format!("/chats {}\r", &second[..5]));
    t.expect(&format!("switched to chat {second}"));
    t.expect("bb7> ");
    t.type_keys("/tokens\r");
    t.expect("no price for");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    t.wait();
}
