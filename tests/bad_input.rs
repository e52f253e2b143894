//! Bad input never crashes bb7, never changes disk, and always gets an `error`;
//! state survives SIGKILL.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::Env;
use serde_json::json;

/// Every file under `dir` with its content, to compare before and after.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if e.file_name() != "lock"
                // A process's "not yet flushed" marker comes and goes with its
                // background flush (docs/ARCHITECTURE.md, "Durability" 8).
                && !e.file_name().to_string_lossy().starts_with(".unflushed-")
            {
                let content = std::fs::read(e.path()).unwrap_or_default();
                out.insert(
                    e.path().strip_prefix(dir).unwrap().display().to_string(),
                    content,
                );
            }
        }
    }
    out
}

#[test]
fn malformed_lines_get_errors_and_the_process_keeps_serving() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    let (mut b, _id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    let before = tree(&env.project);

    b.send_raw(b"this is not json");
    let m = b.recv().unwrap();
    assert_eq!(
        (m["type"].as_str(), m["message"].as_str()),
        (Some("error"), Some("Invalid JSON"))
    );
    b.send_raw(b"[1, 2, 3]");
    assert_eq!(b.recv().unwrap()["type"], "error");
    b.send_raw(b"\"just a string\"");
    assert_eq!(b.recv().unwrap()["type"], "error");
    b.send_raw(br#"{"request_id": 5}"#);
    let m = b.recv().unwrap();
    assert_eq!(m["message"], "Missing required field: action");
    assert_eq!(m["request_id"], "5");
    b.send_raw(br#"{"action": 12, "request_id": "x"}"#);
    assert_eq!(b.recv().unwrap()["request_id"], "x");
    b.send_raw(b"{\"action\": \"ping\"");
    assert_eq!(b.recv().unwrap()["message"], "Invalid JSON");
    b.send_raw(b"");
    b.send_raw(b"   ");

    assert_eq!(
        b.err(json!({"action": "launch_rockets"}))["message"],
        "Unknown action: launch_rockets"
    );
    assert_eq!(
        b.err(json!({"action": "context_add", "content": "x"}))["message"],
        "Missing required field: path"
    );
    assert_eq!(
        b.err(json!({"action": "context_add", "path": "a.txt"}))["message"],
        "Missing required field: content"
    );
    let e = b.err(json!({"action": "context_add", "path": 42, "content": "x"}));
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("'path' must be a string")
    );
    b.err(json!({"action": "context_add", "path": "b.txt", "content": "x", "readonly": "yes"}));
    b.err(json!({"action": "context_add_section", "path": "a.txt", "content": "x", "start_line": 0, "end_line": 1}));
    b.err(json!({"action": "context_add_section", "path": "a.txt", "content": "x", "start_line": -1, "end_line": 1}));
    b.err(json!({"action": "context_add_section", "path": "a.txt", "content": "a\nb\n", "start_line": 5, "end_line": 9}));
    b.err(json!({"action": "chat_edit", "chat_id": "nope", "message_index": 0, "content": ""}));
    b.err(json!({"action": "chat_select", "id": ""}));
    b.err(json!({"action": "save_chat_settings", "reasoning_effort": 3}));
    b.err(json!({"action": "context_add", "path": "", "content": "x"}));
    b.err(json!({"action": "context_add", "path": "a\u{0}b", "content": "x"}));
    b.err(json!({"action": "cancel", "target_request_id": "r1"}));
    for path in [
        "../outside.txt",
        "a/../../outside.txt",
        ".bb7/chats/index.json",
    ] {
        let e = b.err(json!({"action": "context_add", "path": path, "content": "x"}));
        assert_eq!(e["code"], "path_escape", "{path}");
        b.err(json!({"action": "apply_file", "path": path}));
        b.err(json!({"action": "get_output_file", "path": path}));
        b.err(json!({"action": "output_delete", "path": path}));
    }
    b.err(json!({"action": "apply_file", "path": "/etc/passwd"}));

    // Not UTF-8 text.
    std::fs::write(env.project.join("bin.dat"), [0u8, 159, 146, 150]).unwrap();
    let e = b.err(json!({"action": "sync_context", "path": "bin.dat"}));
    assert!(e["message"].as_str().unwrap().contains("not UTF-8"));
    std::fs::remove_file(env.project.join("bin.dat")).unwrap();

    assert_eq!(
        tree(&env.project),
        before,
        "a failed request changed the disk"
    );
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
}

#[test]
fn huge_lines_are_refused_and_large_files_are_served() {
    let env = Env::new();
    let (mut b, _id) = env.with_chat();
    // A 5 MB file is ordinary input.
    let big: String =
        "let x = 1; // padding padding padding padding\n".repeat(5 * 1024 * 1024 / 46);
    env.write("big.rs", &big);
    b.ok(json!({"action": "context_add", "path": "big.rs", "content": big}));
    let f = b.ok(json!({"action": "get_context_file", "path": "big.rs"}));
    assert_eq!(f["content"].as_str().unwrap().len(), big.len());

    // A line over the 64 MiB limit is discarded whole; the next line is served.
    let mut line = br#"{"action":"save_draft","request_id":"big","draft":""#.to_vec();
    line.resize(64 * 1024 * 1024 + 10, b'x');
    line.extend_from_slice(br#""}"#);
    b.send_raw(&line);
    let m = b.recv().unwrap();
    assert_eq!(m["type"], "error");
    assert!(m["message"].as_str().unwrap().contains("too long"), "{m}");
    assert_eq!(b.ok(json!({"action": "chat_get"}))["draft"], "");
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let env = Env::new();
    let (mut b, _id) = env.with_chat();
    let mut ids = Vec::new();
    for i in 0..50 {
        ids.push(b.send(json!({"action": "save_draft", "draft": format!("draft {i}")})));
    }
    let last = b.send(json!({"action": "chat_get"}));
    for id in &ids {
        let m = b.recv().unwrap();
        assert_eq!(&m["request_id"], id);
    }
    let m = b.recv().unwrap();
    assert_eq!(m["request_id"], last.as_str());
    assert_eq!(m["draft"], "draft 49");
}

#[test]
fn symlinks_planted_in_state_never_reach_outside() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    env.write("a.txt", "a\n");
    let (mut b, id) = env.with_chat();
    let chat_dir = env.chat_dir(&id);

    // context/ points outside: adding a file must not write there.
    std::os::unix::fs::symlink(outside.path(), chat_dir.join("context")).unwrap();
    let e =
        b.err(json!({"action": "context_add", "path": "victim.txt", "content": "overwritten\n"}));
    assert_eq!(e["code"], "path_escape");
    std::fs::remove_file(chat_dir.join("context")).unwrap();

    // output/ points outside: no read, no delete, no apply from there.
    std::os::unix::fs::symlink(outside.path(), chat_dir.join("output")).unwrap();
    b.err(json!({"action": "get_output_file", "path": "victim.txt"}));
    b.err(json!({"action": "output_delete", "path": "victim.txt"}));
    b.err(json!({"action": "apply_file", "path": "victim.txt"}));
    assert!(!env.project.join("victim.txt").exists());
    assert_eq!(
        b.err(json!({"action": "get_file_statuses"}))["code"],
        "path_escape"
    );
    std::fs::remove_file(chat_dir.join("output")).unwrap();

    // An output file that is itself a symlink to an outside file.
    std::fs::create_dir_all(chat_dir.join("output")).unwrap();
    std::os::unix::fs::symlink(&victim, chat_dir.join("output/a.txt")).unwrap();
    b.err(json!({"action": "apply_file", "path": "a.txt"}));
    b.err(json!({"action": "output_delete", "path": "a.txt"}));
    assert_eq!(env.read("a.txt"), "a\n");

    // A whole chat directory planted as a symlink.
    std::fs::create_dir_all(outside.path().join("chat")).unwrap();
    std::fs::write(
        outside.path().join("chat/chat.json"),
        r#"{"version":2,"id":"abcdefabcd","name":"evil"}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("chat"),
        env.project.join(".bb7/chats/abcdefabcd"),
    )
    .unwrap();
    b.err(json!({"action": "chat_select", "id": "abcdefabcd"}));
    b.err(json!({"action": "chat_delete", "id": "abcdefabcd"}));
    let list = b.ok(json!({"action": "chat_list"}));
    assert!(
        list["chats"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != "abcdefabcd")
    );

    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(outside.path().join("chat/chat.json").exists());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 2);
}

#[test]
fn sigkill_while_writing_never_leaves_a_torn_chat() {
    let env = Env::new();
    let (b, id) = env.with_chat();
    drop(b);
    let big = "x".repeat(100_000);
    for round in 0..10u64 {
        let mut b = env.spawn();
        b.ok(json!({"action": "init", "project_root": env.project}));
        b.ok(json!({"action": "chat_select", "id": id}));
        // Keep bb7 busy rewriting chat.json from another thread, then kill it mid-way.
        let mut stdin = b.take_stdin();
        let big = big.clone();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            for i in 0.. {
                let line = json!({"action": "save_draft", "draft": format!("{round}-{i}-{big}")});
                if writeln!(stdin, "{line}").is_err() {
                    break;
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(40 + round * 17));
        b.kill();
        writer.join().unwrap();
        let text = std::fs::read_to_string(env.chat_dir(&id).join("chat.json")).unwrap();
        let chat: serde_json::Value =
            serde_json::from_str(&text).expect("chat.json torn by SIGKILL");
        assert_eq!(chat["id"], id.as_str());
        for e in std::fs::read_dir(env.chat_dir(&id)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".bb7-tmp-") {
                // A temporary file from an interrupted write is harmless; clean it.
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    }
}

#[test]
fn every_action_survives_mistyped_fields() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "a\n"}));
    let actions = [
        "chat_new",
        "chat_list",
        "chat_select",
        "chat_get",
        "chat_active",
        "chat_rename",
        "chat_delete",
        "chat_move",
        "chat_force_unlock",
        "search_chats",
        "chat_edit",
        "fork_chat",
        "chat_new_with_context",
        "save_draft",
        "save_chat_settings",
        "add_system_message",
        "context_add",
        "context_add_section",
        "context_update",
        "context_remove",
        "context_remove_section",
        "context_set_readonly",
        "context_list",
        "sync_context",
        "get_context_file",
        "get_output_file",
        "output_delete",
        "get_diff_paths",
        "diff_local_done",
        "get_file_statuses",
        "apply_file",
        "apply_file_as",
        "prepare_instructions",
        "get_customization_info",
        "chat_pin",
        "chat_archive",
        "cancel",
        "estimate_tokens",
        "estimate_text_tokens",
        "review_get",
        "review_apply",
        "checkpoint_list",
        "checkpoint_get",
        "checkpoint_diff3",
        "checkpoint_rollback",
        "tool_approve",
        "clarify",
        "generate_title",
    ];
    let fields = [
        "id",
        "name",
        "path",
        "content",
        "start_line",
        "end_line",
        "chat_id",
        "message_index",
        "fork_message_index",
        "source_chat_id",
        "draft",
        "model",
        "reasoning_effort",
        "tools",
        "readonly",
        "destination",
        "level",
        "to",
        "query",
        "pinned",
        "archived",
        "texts",
        "accept",
        "reject",
        "expected_disk_hash",
        "checkpoint_id",
        "mode",
        "hunk_ids",
        "approval_id",
        "approved",
        "question_id",
        "answer",
        "target_request_id",
        "global",
        "message",
    ];
    let values = [
        json!(null),
        json!(-1),
        json!(1e300),
        json!(0),
        json!(""),
        json!("../../etc/passwd"),
        json!([1, "x"]),
        json!({"a": 1}),
        json!(true),
        json!("\u{0}"),
        json!(18446744073709551615u64),
    ];
    let mut n = 0;
    for action in actions {
        for (i, v) in values.iter().enumerate() {
            // Every field set to the same odd value, then each field alone.
            let mut all = json!({"action": action});
            for f in fields {
                all[f] = v.clone();
            }
            let r = b.request(all);
            assert!(r["type"].is_string(), "{action}: {r}");
            let f = fields[(i * 7 + n) % fields.len()];
            let r = b.request(json!({"action": action, f: v}));
            assert!(r["type"].is_string(), "{action} {f}: {r}");
            n += 1;
        }
        assert_eq!(
            b.ok(json!({"action": "ping"}))["type"],
            "ok",
            "after {action}"
        );
    }
    // Nothing escaped the project and the chat still loads.
    assert!(!env.project.parent().unwrap().join("etc").exists());
    b.ok(json!({"action": "chat_select", "id": id}));
}
