//! Snapshots are exact copies: a file added with CRLF or mixed line endings is stored
//! as the bytes sent, its version is the protocol's file id of those bytes, and the
//! model (which sees LF text) can still edit it, with statuses and apply keeping the
//! file's own endings (docs/ARCHITECTURE.md, "What is stored").

mod common;

use common::fake_model::*;
use common::{fake_env, file_id};
use serde_json::json;

const CRLF: &str = "one\r\ntwo\r\nthree\r\n";
const MIXED: &str = "alpha\r\nbeta\ngamma\r\n";

#[test]
fn crlf_and_mixed_files_are_stored_as_sent_and_edited_end_to_end() {
    let (env, fake) = fake_env(json!({}));
    env.write("win.txt", CRLF);
    env.write("mix.txt", MIXED);
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "win.txt", "content": CRLF}));
    b.ok(json!({"action": "context_add", "path": "mix.txt", "content": MIXED}));
    b.ok(json!({"action": "context_add_section", "path": "win.txt", "content": CRLF, "start_line": 2, "end_line": 3}));

    // The ids are sha256(path + NUL + content)[:8] of the bytes as sent.
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(list["files"][0]["version"], file_id("win.txt", CRLF));
    assert_eq!(list["files"][1]["version"], file_id("mix.txt", MIXED));
    // The snapshots hold those bytes, and read back as they were added.
    let dir = env.chat_dir(&id);
    assert_eq!(
        std::fs::read(dir.join("context/win.txt")).unwrap(),
        CRLF.as_bytes()
    );
    assert_eq!(
        std::fs::read(dir.join("context/mix.txt")).unwrap(),
        MIXED.as_bytes()
    );
    let got = b.ok(json!({"action": "get_context_file", "path": "mix.txt"}));
    assert_eq!(got["content"], MIXED);
    let section = b.ok(
        json!({"action": "get_context_file", "path": "win.txt", "start_line": 2, "end_line": 3}),
    );
    assert_eq!(section["content"], "two\r\nthree\r\n");

    // The files on disk match their snapshots: nothing pending, nothing out of sync.
    let st = b.ok(json!({"action": "get_file_statuses"}));
    for f in st["files"].as_array().unwrap() {
        let want = if f["start_line"].is_null() { "" } else { "S" };
        assert_eq!(f["status"], want, "{f}");
        assert_eq!(f["out_of_sync"], false, "{f}");
    }

    // The model sees LF text, quotes it, and its edits land in the file's own endings.
    fake.push_sse(response(
        "",
        "Done.",
        vec![
            (
                "edit_file",
                json!({"edits": [{"path": "win.txt", "old_string": "two\n", "new_string": "TWO\n"}]}),
            ),
            (
                "edit_file",
                json!({"edits": [{"path": "mix.txt", "old_string": "beta", "new_string": "BETA"}]}),
            ),
        ],
    ));
    assert_eq!(b.turn("shout")["type"], "done");
    let prompt = prompt_text(&fake.chat_bodies()[0]);
    assert!(!prompt.contains('\r'), "the model is shown LF text");
    let st = b.ok(json!({"action": "get_file_statuses"}));
    let win = st["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "win.txt" && f["start_line"].is_null())
        .unwrap()
        .clone();
    assert_eq!(win["status"], "M", "{win}");
    b.ok(json!({"action": "apply_file", "path": "win.txt"}));
    b.ok(json!({"action": "apply_file", "path": "mix.txt"}));
    assert_eq!(env.read("win.txt"), "one\r\nTWO\r\nthree\r\n");
    assert_eq!(env.read("mix.txt"), "alpha\r\nBETA\ngamma\r\n");
    // After the apply the snapshot is again the file's bytes, under their id.
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(
        list["files"][0]["version"],
        file_id("win.txt", "one\r\nTWO\r\nthree\r\n")
    );
    assert_eq!(
        std::fs::read(dir.join("context/win.txt")).unwrap(),
        b"one\r\nTWO\r\nthree\r\n"
    );
    let st = b.ok(json!({"action": "get_file_statuses"}));
    for f in st["files"].as_array().unwrap() {
        if f["start_line"].is_null() {
            assert_eq!(f["status"], "", "{f}");
            assert_eq!(f["out_of_sync"], false, "{f}");
        }
    }

    // An update with the same bytes is no change; with LF bytes it is a new version.
    b.ok(json!({"action": "context_update", "path": "mix.txt", "content": "alpha\nBETA\ngamma\n"}));
    let list = b.ok(json!({"action": "context_list"}));
    assert_eq!(
        list["files"][1]["version"],
        file_id("mix.txt", "alpha\nBETA\ngamma\n")
    );
}
