//! Rules files (`AGENTS.md`, `CLAUDE.md`, …) as instructions: which are picked up
//! (`rules_files`, `rules_mode`), never from outside the project, shown in
//! `get_customization_info` and `chat_get`, and counted in the estimate.

mod common;

use common::fake_env;
use common::fake_model::{self, text};
use serde_json::{Value, json};

const DEFAULTS: [&str; 9] = [
    "AGENTS.md",
    "CLAUDE.md",
    "CLAUDE.local.md",
    ".github/copilot-instructions.md",
    ".cursorrules",
    ".rules",
    ".windsurfrules",
    ".clinerules",
    "GEMINI.md",
];

fn system_of(body: &Value) -> String {
    match &body["messages"][0]["content"] {
        Value::String(s) => s.clone(),
        other => other[0]["text"].as_str().unwrap_or("").to_owned(),
    }
}

fn answer(fake: &fake_model::FakeModel) {
    fake.push_sse(vec![
        text("ok"),
        fake_model::finish("stop"),
        fake_model::done(),
    ]);
}

#[test]
fn each_default_rules_file_is_picked_up_fenced_as_instructions() {
    for name in DEFAULTS {
        let (env, fake) = fake_env(json!({}));
        env.write(name, &format!("Rule from {name}.\n"));
        let (mut b, _id) = env.with_chat();
        let info = b.ok(json!({"action": "get_customization_info"}));
        assert_eq!(info["rules_files"], json!([name]), "{name}");
        answer(&fake);
        b.turn("hello");
        let system = system_of(&fake.chat_bodies()[0]);
        let open = format!("<user-instructions source=\"{name}\" fence=\"");
        assert!(system.contains(&open), "{name}: {system}");
        assert!(
            system.contains(&format!(
                "\">\nRule from {name}.\n</user-instructions fence=\""
            )),
            "{name}: {system}"
        );
    }
}

#[test]
fn first_is_the_default_all_takes_every_one_in_config_order() {
    let (env, fake) = fake_env(json!({}));
    env.write("AGENTS.md", "Agents rule.\n");
    env.write("CLAUDE.md", "Claude rule.\n");
    let (mut b, id) = env.with_chat();
    env.write(".bb7/instructions", "Project rule.\n");
    let chat = b.ok(json!({"action": "chat_get", "id": id}));
    assert_eq!(
        chat["instructions_info"]["rules_files"],
        json!(["AGENTS.md"])
    );
    answer(&fake);
    b.turn("one");
    answer(&fake);
    b.turn("two");
    let bodies = fake.chat_bodies();
    let system = system_of(&bodies[0]);
    assert!(system.contains("Agents rule."));
    assert!(!system.contains("Claude rule."));
    // Rules files come before the project's own instructions, which may refine them.
    assert!(system.find("Agents rule.").unwrap() < system.find("Project rule.").unwrap());
    // The system message is the same on the next turn (the prompt cache's prefix).
    assert_eq!(system, system_of(&bodies[1]));
    b.close();

    let (env, fake) = fake_env(
        json!({"rules_mode": "all", "rules_files": ["CLAUDE.md", "AGENTS.md", "GEMINI.md"]}),
    );
    env.write("AGENTS.md", "Agents rule.\n");
    env.write("CLAUDE.md", "Claude rule.\n");
    let (mut b, _id) = env.with_chat();
    let info = b.ok(json!({"action": "get_customization_info"}));
    assert_eq!(info["rules_files"], json!(["CLAUDE.md", "AGENTS.md"]));
    answer(&fake);
    b.turn("hello");
    let system = system_of(&fake.chat_bodies()[0]);
    assert!(system.find("Claude rule.").unwrap() < system.find("Agents rule.").unwrap());
}

#[test]
fn rules_files_never_come_from_outside_the_project() {
    let (env, fake) = fake_env(json!({"rules_mode": "all",
        "rules_files": ["AGENTS.md", "../outside.md", "/etc/hostname", ".git/config", ".clinerules"]}));
    let outside = env.project.parent().unwrap().join("outside.md");
    std::fs::write(&outside, "SECRET outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.project.join("AGENTS.md")).unwrap();
    env.write(".git/config", "url = https://token@example.com\n");
    std::fs::create_dir_all(env.project.join(".clinerules")).unwrap();
    let (mut b, _id) = env.with_chat();
    let info = b.ok(json!({"action": "get_customization_info"}));
    assert_eq!(info["rules_files"], json!([]));
    answer(&fake);
    b.turn("hello");
    let system = system_of(&fake.chat_bodies()[0]);
    assert!(
        !system.contains("SECRET") && !system.contains("token"),
        "{system}"
    );
    assert!(!system.contains("user-instructions"), "{system}");
}

#[test]
fn rules_files_count_in_the_estimate_and_not_in_global_chats() {
    let (env, _fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    let before = b.ok(json!({"action": "estimate_tokens", "input_text": ""}));
    env.write(
        "AGENTS.md",
        &"Always write tests for new behaviour.\n".repeat(50),
    );
    let after = b.ok(json!({"action": "estimate_tokens", "input_text": ""}));
    let grown = after["instructions"].as_u64().unwrap() - before["instructions"].as_u64().unwrap();
    assert!(grown >= 300, "{before} {after}");
    assert_eq!(
        after["total"].as_u64().unwrap() - before["total"].as_u64().unwrap(),
        grown
    );
    // A global chat belongs to no project: no rules files.
    b.ok(json!({"action": "chat_new", "global": true}));
    let active = b.ok(json!({"action": "chat_active"}));
    let chat = b.ok(json!({"action": "chat_get", "id": active["id"], "global": true}));
    assert_eq!(
        chat["instructions_info"]["rules_files"],
        json!([]),
        "{chat}"
    );
}
