//! Context rules, statuses, apply, fork and edit.

mod common;

use common::{Env, events, file_id};
use serde_json::json;

#[test]
fn context_files_sections_and_events() {
    let env = Env::new();
    let src = "line 1\nline 2\nline 3\nline 4\n";
    env.write("src/lib.rs", src);
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "src/lib.rs", "content": src}));
    let e = b.err(json!({"action": "context_add", "path": "src/lib.rs", "content": src}));
    assert_eq!(e["message"], "Context file already exists");
    // A section of the same path does not collide with the whole file.
    b.ok(json!({"action": "context_add_section", "path": "src/lib.rs", "content": src, "start_line": 2, "end_line": 3}));
    b.err(json!({"action": "context_add_section", "path": "src/lib.rs", "content": "x\n", "start_line": 3, "end_line": 2}));
    // An absolute path inside the project is stored relative.
    let abs = env.project.join("src/lib.rs");
    b.err(json!({"action": "context_add", "path": abs, "content": src}));

    let list = b.ok(json!({"action": "context_list"}));
    let files = list["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(
        files[0],
        json!({"path": "src/lib.rs", "readonly": false, "external": false, "version": file_id("src/lib.rs", src)})
    );
    assert_eq!(files[1]["start_line"], 2);
    assert_eq!(files[1]["end_line"], 3);
    assert_eq!(files[1]["readonly"], true);

    // Snapshots are stored as docs/PROTOCOL.md lays out.
    let dir = env.chat_dir(&id);
    assert_eq!(
        std::fs::read_to_string(dir.join("context/src/lib.rs")).unwrap(),
        src
    );
    let sections: Vec<_> = std::fs::read_dir(dir.join("context/_sections"))
        .unwrap()
        .collect();
    assert_eq!(sections.len(), 1);
    let section = b.ok(
        json!({"action": "get_context_file", "path": "src/lib.rs", "start_line": 2, "end_line": 3}),
    );
    assert_eq!(section["content"], "line 2\nline 3\n");

    // Read-only toggles, and not on sections.
    b.ok(json!({"action": "context_set_readonly", "path": "src/lib.rs", "readonly": true}));
    b.ok(json!({"action": "context_set_readonly", "path": "src/lib.rs", "readonly": false}));

    // External files are read-only and snapshotted under _external.
    let outside = tempfile::tempdir().unwrap();
    let ext = outside.path().canonicalize().unwrap().join("ref.txt");
    std::fs::write(&ext, "external\n").unwrap();
    b.ok(json!({"action": "context_add", "path": ext, "content": "external\n"}));
    let list = b.ok(json!({"action": "context_list"}));
    let e = &list["files"][2];
    assert_eq!(e["external"], true);
    assert_eq!(e["readonly"], true);
    assert!(
        dir.join("context/_external")
            .join(ext.strip_prefix("/").unwrap())
            .is_file()
    );
    b.err(json!({"action": "context_set_readonly", "path": ext, "readonly": false}));

    // Update re-snapshots with a new version; removing leaves the others.
    let new_src = "line 1\nchanged\n";
    b.ok(json!({"action": "context_update", "path": "src/lib.rs", "content": new_src}));
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"][0]["version"], file_id("src/lib.rs", new_src));
    env.write("src/lib.rs", "from disk\n");
    b.ok(json!({"action": "sync_context", "path": "src/lib.rs"}));
    assert_eq!(
        b.ok(json!({"action": "get_context_file", "path": "src/lib.rs"}))["content"],
        "from disk\n"
    );
    b.ok(json!({"action": "context_remove_section", "path": "src/lib.rs", "start_line": 2, "end_line": 3}));
    b.err(json!({"action": "context_remove_section", "path": "src/lib.rs", "start_line": 2, "end_line": 3}));
    b.ok(json!({"action": "context_remove", "path": "src/lib.rs"}));
    assert_eq!(
        b.err(json!({"action": "context_remove", "path": "src/lib.rs"}))["message"],
        "File not found"
    );

    let chat = env.chat_json(&id);
    let actions: Vec<String> = events(&chat).into_iter().map(|(a, _)| a).collect();
    assert_eq!(
        actions,
        [
            "UserAddFile",
            "UserAddSection",
            "UserSetReadOnly",
            "UserSetReadOnly",
            "UserAddFile",
            "UserWriteFile",
            "UserWriteFile",
            "UserRemoveSection",
            "UserRemoveFile"
        ]
    );
    // Each event is its own assistant-role message, as in the reference.
    let first = &chat["messages"][0];
    assert_eq!(first["role"], "assistant");
    assert_eq!(first["parts"][0]["version"], file_id("src/lib.rs", src));
    let update = &chat["messages"][5]["parts"][0];
    assert_eq!(update["prev_version"], file_id("src/lib.rs", src));
}

#[test]
fn statuses_for_modified_added_conflicting_and_sections() {
    let env = Env::new();
    env.write("a.rs", "a\n");
    env.write("b.rs", "b\n");
    env.write("exists.rs", "local\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "a\n"}));
    b.ok(json!({"action": "context_add", "path": "b.rs", "content": "b\n"}));
    b.ok(json!({"action": "context_add_section", "path": "b.rs", "content": "b\n", "start_line": 1, "end_line": 1}));
    env.plant_output(&id, "a.rs", "a changed\n");
    env.plant_output(&id, "b.rs", "b\n");
    env.plant_output(&id, "new/file.rs", "new\n");
    env.plant_output(&id, "exists.rs", "model\n");
    let st = b.ok(json!({"action": "get_file_statuses"}));
    let rows = st["files"].as_array().unwrap();
    let row = |p: &str, section: bool| {
        rows.iter()
            .find(|r| r["path"] == p && r.get("start_line").is_some() == section)
            .unwrap_or_else(|| panic!("no row for {p}"))
            .clone()
    };
    let a = row("a.rs", false);
    assert_eq!(a["status"], "M");
    assert_eq!(a["has_output"], true);
    assert_eq!(a["in_context"], true);
    assert_eq!(a["output_content"], "a changed\n");
    assert_eq!(a["context_content"], "a\n");
    assert!(a["original_tokens"].is_u64() && a["output_tokens"].is_u64());
    assert_eq!(row("b.rs", false)["status"], "");
    assert_eq!(row("b.rs", true)["status"], "S");
    let n = row("new/file.rs", false);
    assert_eq!(n["status"], "A");
    assert_eq!(n["in_context"], false);
    assert_eq!(row("exists.rs", false)["status"], "!A");
    // Without contents, rows carry hashes of the texts instead.
    let lean = b.ok(json!({"action": "get_file_statuses", "contents": false}));
    let a_lean = &lean["files"][0];
    assert!(a_lean.get("context_content").is_none() && a_lean.get("output_content").is_none());
    let sha = |t: &str| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(t.as_bytes()))
    };
    assert_eq!(a_lean["context_hash"], sha("a\n"));
    assert_eq!(a_lean["output_hash"], sha("a changed\n"));
    assert_eq!(a_lean["status"], "M");

    // Read-only cannot be set while output is pending.
    let e = b.err(json!({"action": "context_set_readonly", "path": "a.rs", "readonly": true}));
    assert!(e["message"].as_str().unwrap().contains("pending output"));
    // b.rs output equals its context: not pending.
    b.ok(json!({"action": "context_set_readonly", "path": "b.rs", "readonly": true}));

    assert_eq!(
        b.ok(json!({"action": "get_output_file", "path": "a.rs"}))["content"],
        "a changed\n"
    );
    let d = b.ok(json!({"action": "get_diff_paths", "path": "a.rs"}));
    assert_eq!(d["local_path"], env.project.join("a.rs").to_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(d["output_path"].as_str().unwrap()).unwrap(),
        "a changed\n"
    );

    b.ok(json!({"action": "output_delete", "path": "new/file.rs"}));
    assert!(!env.chat_dir(&id).join("output/new").exists());
    b.err(json!({"action": "output_delete", "path": "new/file.rs"}));
    let chat = env.chat_json(&id);
    assert!(events(&chat).contains(&("UserRejectOutput".into(), "new/file.rs".into())));
}

#[test]
fn apply_writes_the_file_keeps_crlf_and_refreshes_context() {
    let env = Env::new();
    std::fs::write(env.project.join("win.txt"), "one\r\ntwo\r\n").unwrap();
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "win.txt", "content": "one\ntwo\n"}));
    env.plant_output(&id, "win.txt", "one\nTWO\nthree\n");
    let r = b.ok(json!({"action": "apply_file", "path": "win.txt"}));
    assert_eq!(r["content"], "one\nTWO\nthree\n");
    assert_eq!(
        std::fs::read(env.project.join("win.txt")).unwrap(),
        b"one\r\nTWO\r\nthree\r\n"
    );
    assert!(!env.chat_dir(&id).join("output/win.txt").exists());
    let list = b.ok(json!({"action": "context_list"}));
    // The snapshot is the file's bytes after the apply, CRLF included.
    assert_eq!(
        list["files"][0]["version"],
        file_id("win.txt", "one\r\nTWO\r\nthree\r\n")
    );
    let st = b.ok(json!({"action": "get_file_statuses"}));
    assert_eq!(st["files"][0]["status"], "");
    b.err(json!({"action": "apply_file", "path": "win.txt"}));

    // A new file is created and joins the context.
    env.plant_output(&id, "dir/new.rs", "fn new() {}\n");
    b.ok(json!({"action": "apply_file", "path": "dir/new.rs"}));
    assert_eq!(env.read("dir/new.rs"), "fn new() {}\n");

    // Save as: the output goes elsewhere, the original file is untouched.
    env.write("keep.rs", "mine\n");
    env.plant_output(&id, "keep.rs", "theirs\n");
    b.ok(json!({"action": "apply_file_as", "path": "keep.rs", "destination": "keep_model.rs"}));
    assert_eq!(env.read("keep.rs"), "mine\n");
    assert_eq!(env.read("keep_model.rs"), "theirs\n");
    b.err(json!({"action": "apply_file_as", "path": "keep.rs", "destination": "x"}));
    env.plant_output(&id, "keep.rs", "theirs\n");
    let e =
        b.err(json!({"action": "apply_file_as", "path": "keep.rs", "destination": "../escape.rs"}));
    assert_eq!(e["code"], "path_escape");
    assert!(!env.project.parent().unwrap().join("escape.rs").exists());

    let chat = env.chat_json(&id);
    let ev = events(&chat);
    assert!(ev.contains(&("UserApplyFile".into(), "win.txt".into())));
    assert!(ev.contains(&("UserApplyFile".into(), "dir/new.rs".into())));
    assert!(ev.contains(&("UserSaveAs".into(), "keep_model.rs".into())));
    let save_as = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["parts"][0]["action"] == "UserSaveAs")
        .unwrap();
    assert_eq!(save_as["parts"][0]["original_path"], "keep.rs");
}

#[test]
fn diff_local_done_reports_how_much_was_merged() {
    let env = Env::new();
    env.write("m.txt", "a\nb\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "m.txt", "content": "a\nb\n"}));
    env.plant_output(&id, "m.txt", "A\nB\n");
    assert_eq!(
        b.ok(json!({"action": "diff_local_done", "path": "m.txt"}))["outcome"],
        "none"
    );
    env.write("m.txt", "A\nb\n");
    assert_eq!(
        b.ok(json!({"action": "diff_local_done", "path": "m.txt"}))["outcome"],
        "partial"
    );
    assert_eq!(
        b.ok(json!({"action": "get_context_file", "path": "m.txt"}))["content"],
        "A\nb\n"
    );
    env.write("m.txt", "A\nB\n");
    assert_eq!(
        b.ok(json!({"action": "diff_local_done", "path": "m.txt"}))["outcome"],
        "full"
    );
    assert!(!env.chat_dir(&id).join("output/m.txt").exists());
}

#[test]
fn fork_and_edit_restore_context_with_warnings() {
    let env = Env::new();
    env.write("a.txt", "v1\n");
    env.write("b.txt", "b1\nb2\nb3\n");
    env.write("gone.txt", "bye\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "v1\n"}));
    b.ok(json!({"action": "context_add", "path": "gone.txt", "content": "bye\n"}));
    b.ok(json!({"action": "context_add_section", "path": "b.txt", "content": "b1\nb2\nb3\n", "start_line": 2, "end_line": 3}));
    b.ok(json!({"action": "save_draft", "draft": ""}));
    assert!(b.close().success());

    // A user message recorded with its context snapshot, as a send writes it.
    let mut chat = env.chat_json(&id);
    let snapshot: Vec<_> = chat["context_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut r = json!({"path": c["path"], "file_id": c["version"]});
            if c.get("start_line").is_some() {
                r["start_line"] = c["start_line"].clone();
                r["end_line"] = c["end_line"].clone();
            }
            r
        })
        .collect();
    let msgs = chat["messages"].as_array_mut().unwrap();
    msgs.push(
        json!({"role": "user", "model": "m", "timestamp": "2026-01-01T00:00:00Z",
        "parts": [{"type": "text", "content": "Explain a.txt"}], "context_snapshot": snapshot}),
    );
    msgs.push(json!({"role": "assistant", "model": "m", "parts": [{"type": "text", "content": "It says v1."}]}));
    let user_index = msgs.len() - 2;
    std::fs::write(env.chat_dir(&id).join("chat.json"), chat.to_string()).unwrap();

    env.write("a.txt", "v2\n");
    std::fs::remove_file(env.project.join("gone.txt")).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.err(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": user_index + 1}));
    let f = b.ok(json!({"action": "fork_chat", "chat_id": id, "fork_message_index": user_index}));
    assert_eq!(f["type"], "fork_result");
    assert_eq!(f["fork_message_content"], "Explain a.txt");
    let warnings = f["context_warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.contains(
        &json!({"path": "a.txt", "issue": "modified", "original_version": file_id("a.txt", "v1\n")})
    ));
    assert!(
        warnings
            .iter()
            .any(|w| w["path"] == "gone.txt" && w["issue"] == "deleted")
    );
    // The unchanged section gives no warning (a reference bug).
    assert!(!warnings.iter().any(|w| w["path"] == "b.txt"));
    let new_id = f["new_chat_id"].as_str().unwrap();
    let fork = b.ok(json!({"action": "chat_get"}));
    assert_eq!(fork["id"], new_id);
    assert_eq!(fork["draft"], "Explain a.txt");
    // The messages before the fork point, then one system message with the warnings.
    assert_eq!(fork["messages"].as_array().unwrap().len(), user_index + 1);
    assert_eq!(fork["messages"][user_index]["role"], "system");
    assert_eq!(fork["context_files"].as_array().unwrap().len(), 2);
    let fork_events: Vec<String> = events(&fork).into_iter().map(|(a, _)| a).collect();
    assert!(fork_events.contains(&"ForkWarningModified".to_owned()));
    assert!(fork_events.contains(&"ForkWarningDeleted".to_owned()));

    // Edit in place: truncate before the message, content becomes the draft.
    let r = b.ok(json!({"action": "chat_edit", "chat_id": id, "message_index": user_index, "content": "Explain again"}));
    assert_eq!(r["context_warnings"].as_array().unwrap().len(), 2);
    let original = env.chat_json(&id);
    assert_eq!(original["draft"], "Explain again");
    assert!(
        original["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["role"] != "user")
    );

    // A new chat with the same context.
    let n = b.ok(json!({"action": "chat_new_with_context", "source_chat_id": new_id}));
    let copy = b.ok(json!({"action": "chat_get"}));
    assert_eq!(copy["id"], n["id"]);
    assert_eq!(copy["context_files"], fork["context_files"]);
    assert_eq!(copy["draft"], "");
}

#[test]
fn error_paths_of_output_actions() {
    let env = Env::new();
    env.write("m.txt", "a\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "m.txt", "content": "a\n"}));
    // No output to merge, review or diff against.
    assert_eq!(
        b.err(json!({"action": "diff_local_done", "path": "m.txt"}))["code"],
        "not_found"
    );
    assert_eq!(
        b.err(json!({"action": "review_get", "path": "m.txt"}))["code"],
        "not_found"
    );
    assert_eq!(
        b.err(json!({"action": "review_apply", "path": "m.txt", "accept": "all", "expected_disk_hash": null}))["code"],
        "not_found"
    );
    assert_eq!(
        b.err(json!({"action": "get_output_file", "path": "m.txt"}))["code"],
        "not_found"
    );
    // A binary file on disk is never overwritten by an apply.
    std::fs::write(env.project.join("bin.dat"), [0u8, 0xff, 0xfe]).unwrap();
    env.plant_output(&id, "bin.dat", "text\n");
    let e = b.err(json!({"action": "apply_file", "path": "bin.dat"}));
    assert!(e["message"].as_str().unwrap().contains("not UTF-8"), "{e}");
    assert_eq!(
        std::fs::read(env.project.join("bin.dat")).unwrap(),
        [0u8, 0xff, 0xfe]
    );
    // A checkpoint does not know files it did not change.
    env.plant_output(&id, "m.txt", "b\n");
    let cp = b.ok(json!({"action": "apply_file", "path": "m.txt"}))["checkpoint_id"].clone();
    assert_eq!(
        b.err(json!({"action": "checkpoint_diff3", "checkpoint_id": cp, "path": "other.txt"}))["code"],
        "not_found"
    );
}
