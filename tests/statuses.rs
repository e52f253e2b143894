//! `get_file_statuses`: `out_of_sync` follows the file on disk, and the persisted
//! cache of file facts (tokens, hashes) never changes an answer, even when damaged.

mod common;

use common::Env;
use serde_json::{Value, json};

/// The status row of `path` (whole file, or the section starting at `start`).
fn row(st: &Value, path: &str, start: Option<u64>) -> Value {
    st["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path && r["start_line"].as_u64() == start)
        .unwrap_or_else(|| panic!("no row for {path} in {st}"))
        .clone()
}

#[test]
fn out_of_sync_follows_the_disk_file() {
    let env = Env::new();
    env.write("a.rs", "one\ntwo\n");
    env.write("b.rs", "first\nsecond\nthird\n");
    let (mut b, _) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": "one\ntwo\n"}));
    // The reference plugin sends buffers without their final newline.
    b.ok(json!({"action": "context_add", "path": "b.rs", "content": "first\nsecond\nthird"}));
    b.ok(json!({"action": "context_add_section", "path": "b.rs",
        "content": "first\nsecond\nthird\n", "start_line": 1, "end_line": 1}));
    let sync = |b: &mut common::Bb7, path: &str, start: Option<u64>| -> (bool, bool) {
        let full = b.ok(json!({"action": "get_file_statuses"}));
        let lean = b.ok(json!({"action": "get_file_statuses", "contents": false}));
        (
            row(&full, path, start)["out_of_sync"].as_bool().unwrap(),
            row(&lean, path, start)["out_of_sync"].as_bool().unwrap(),
        )
    };
    assert_eq!(sync(&mut b, "a.rs", None), (false, false));
    assert_eq!(
        sync(&mut b, "b.rs", None),
        (false, false),
        "missing final newline"
    );
    assert_eq!(sync(&mut b, "b.rs", Some(1)), (false, false));

    // An edit of the same size, at once: metadata alone must not hide it.
    env.write("a.rs", "one\nTWO\n");
    assert_eq!(sync(&mut b, "a.rs", None), (true, true));
    env.write("a.rs", "one\ntwo\n");
    assert_eq!(sync(&mut b, "a.rs", None), (false, false), "restored");
    env.write("a.rs", "one\ntwo");
    assert_eq!(
        sync(&mut b, "a.rs", None),
        (false, false),
        "final newline dropped"
    );
    env.write("a.rs", "one\r\ntwo\r\n");
    assert_eq!(sync(&mut b, "a.rs", None), (false, false), "CRLF endings");
    env.write("a.rs", "one\ntwo\n\n");
    assert_eq!(
        sync(&mut b, "a.rs", None),
        (true, true),
        "a blank line added"
    );
    std::fs::remove_file(env.project.join("a.rs")).unwrap();
    assert_eq!(sync(&mut b, "a.rs", None), (true, true), "deleted");

    // A section compares only its own lines.
    env.write("b.rs", "first\nchanged\nthird\n");
    assert_eq!(sync(&mut b, "b.rs", Some(1)), (false, false));
    assert_eq!(sync(&mut b, "b.rs", None), (true, true));
    env.write("b.rs", "FIRST\nchanged\nthird\n");
    assert_eq!(sync(&mut b, "b.rs", Some(1)), (true, true));

    // Re-syncing the snapshot brings the file back in sync.
    b.ok(json!({"action": "sync_context", "path": "b.rs"}));
    assert_eq!(sync(&mut b, "b.rs", None), (false, false));
}

#[test]
fn a_damaged_cache_changes_no_answer() {
    let env = Env::new();
    let text: String = (0..400).map(|i| format!("let x{i} = {i} * 2;\n")).collect();
    env.write("big.rs", &text);
    env.write("small.rs", "fn main() {}\n");
    let (mut b, id) = env.with_chat();
    b.ok(json!({"action": "context_add", "path": "big.rs", "content": text}));
    b.ok(json!({"action": "context_add", "path": "small.rs", "content": "fn main() {}\n"}));
    env.plant_output(&id, "small.rs", "fn main() { run(); }\n");
    // Files changed within the file system's timestamp granularity are hashed again on
    // the next call; let that window pass so the first call leaves a settled cache.
    std::thread::sleep(std::time::Duration::from_millis(150));
    let lean = json!({"action": "get_file_statuses", "contents": false});
    let first = b.ok(lean.clone());
    assert!(row(&first, "big.rs", None)["tokens"].as_u64().unwrap() > 1000);
    b.close();

    // The facts persist: a new process answers the same without recounting.
    let cache = env.project.join(".bb7/cache/files.json");
    assert!(cache.is_file(), "the cache is written under .bb7/cache/");
    let written = std::fs::read(&cache).unwrap();
    let stamp = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let before = stamp(&cache);
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(b.ok(lean.clone())["files"], first["files"]);
    b.close();
    // Nothing had to be recomputed, so the cache was not rewritten.
    assert_eq!(stamp(&cache), before, "the new process rebuilt the cache");
    assert_eq!(std::fs::read(&cache).unwrap(), written);

    for damage in [
        &b"{\"version\": 1, \"content\": {\"x\": 3}"[..],
        b"\0\xff garbage",
        b"{\"version\": 1, \"content\": 7, \"stat\": []}",
        b"",
    ] {
        std::fs::write(&cache, damage).unwrap();
        let mut b = env.spawn();
        b.ok(json!({"action": "init", "project_root": env.project}));
        assert_eq!(b.ok(lean.clone())["files"], first["files"]);
        let full = b.ok(json!({"action": "get_file_statuses"}));
        assert_eq!(row(&full, "small.rs", None)["status"], "M");
        assert_eq!(row(&full, "big.rs", None)["context_content"], text.as_str());
        b.close();
        // The next save replaces the damaged file with a readable one.
        let saved: Value =
            serde_json::from_slice(&std::fs::read(&cache).unwrap()).expect("the cache was rebuilt");
        assert_eq!(saved["version"], 1);
    }

    // A cache that is a directory, not a file, is no error either.
    std::fs::remove_file(&cache).unwrap();
    std::fs::create_dir_all(cache.join("oops")).unwrap();
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    assert_eq!(b.ok(lean)["files"], first["files"]);
}
