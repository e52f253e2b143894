//! The example state directory in `.bb7-example/` loads and behaves as documented.

mod common;

use common::Env;
use serde_json::json;

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn the_example_state_loads() {
    let env = Env::new();
    copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".bb7-example"),
        &env.project.join(".bb7"),
    );
    env.write(
        "src/math.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    env.write("STYLE.md", "Use four spaces.\n");
    let mut b = env.spawn();
    let r = b.ok(json!({"action": "init", "project_root": env.project}));
    assert!(r.get("global_only").is_none());
    let chat = b.ok(json!({"action": "chat_get"}));
    assert_eq!(chat["name"], "physics-refactor");
    assert_eq!(chat["draft"], "Now add a subtract function");
    assert!(chat["instructions_info"].get("project_error").is_none());
    let list = b.ok(json!({"action": "chat_list"}));
    assert_eq!(list["chats"][0]["pinned"], true);
    let st = b.ok(json!({"action": "get_file_statuses"}));
    let statuses: Vec<_> = st["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].clone(), f["status"].clone()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (json!("src/math.rs"), json!("M")),
            (json!("STYLE.md"), json!("S"))
        ]
    );
    let review = b.ok(json!({"action": "review_get"}));
    assert_eq!(
        review["files"][0]["hunks"][0]["patch"],
        "@@ -2,1 +2,1 @@\n-    a + b\n+    a.wrapping_add(b)\n"
    );
    // Forking from the user message finds every file unchanged.
    let user_index = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m["role"] == "user")
        .unwrap();
    let f = b.ok(
        json!({"action": "fork_chat", "chat_id": chat["id"], "fork_message_index": user_index}),
    );
    assert_eq!(f["context_warnings"], json!([]));
}
