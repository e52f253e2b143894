//! A deterministic request-line fuzzer: thousands of mutated requests of every action
//! in docs/PROTOCOL.md, plus hostile paths for every path-taking action. The contract
//! it enforces (docs/PROTOCOL.md "Conventions"): no input ends the process, every line
//! with a usable `request_id` is answered, stdout carries only JSON objects, and nothing
//! outside the project changes. `BB7_FUZZ_LINES` raises the line count and `BB7_FUZZ_SEED` changes
//! the seed for manual runs.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::fake_model::{self, Reply};
use common::{Bb7, Env, fake_env};
use serde_json::{Map, Value, json};

/// xorshift64*: tiny, seeded, and the same sequence on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A valid request of every action except `shutdown`; `$CHAT` names the chat.
fn templates() -> Vec<Value> {
    let all: Value = serde_json::from_str(
        r#"[
        {"action": "ping"},
        {"action": "version"},
        {"action": "bb7_init", "project_root": "$ROOT"},
        {"action": "init", "project_root": "$ROOT"},
        {"action": "get_customization_info"},
        {"action": "prepare_instructions", "level": "project"},
        {"action": "chat_new", "name": "n", "model": "fake/model", "global": false},
        {"action": "chat_list", "global": false, "include_archived": true},
        {"action": "chat_select", "id": "$CHAT", "global": false},
        {"action": "chat_get"},
        {"action": "chat_active"},
        {"action": "chat_rename", "id": "$CHAT", "name": "renamed", "global": false},
        {"action": "chat_delete", "id": "$CHAT", "global": false},
        {"action": "chat_move", "id": "$CHAT", "to": "global"},
        {"action": "chat_force_unlock", "id": "$CHAT", "global": false},
        {"action": "search_chats", "query": "a", "global": false},
        {"action": "chat_edit", "chat_id": "$CHAT", "message_index": 0, "content": "c"},
        {"action": "fork_chat", "chat_id": "$CHAT", "fork_message_index": 0},
        {"action": "chat_new_with_context", "source_chat_id": "$CHAT"},
        {"action": "chat_pin", "id": "$CHAT", "pinned": true},
        {"action": "chat_archive", "id": "$CHAT", "archived": false},
        {"action": "save_draft", "draft": "d"},
        {"action": "save_chat_settings", "model": "fake/model", "reasoning_effort": "low", "tools": "auto"},
        {"action": "add_system_message", "message": "m"},
        {"action": "context_add", "path": "a.txt", "content": "one\\ntwo\\nthree\\n", "readonly": false},
        {"action": "context_add_section", "path": "a.txt", "content": "two\\n", "start_line": 2, "end_line": 2},
        {"action": "context_update", "path": "a.txt", "content": "one\\ntwo\\n"},
        {"action": "sync_context", "path": "a.txt"},
        {"action": "context_remove", "path": "a.txt"},
        {"action": "context_remove_section", "path": "a.txt", "start_line": 2, "end_line": 2},
        {"action": "context_set_readonly", "path": "a.txt", "readonly": true},
        {"action": "context_list"},
        {"action": "get_context_file", "path": "a.txt", "start_line": 1, "end_line": 2},
        {"action": "get_output_file", "path": "a.txt"},
        {"action": "output_delete", "path": "a.txt"},
        {"action": "get_diff_paths", "path": "a.txt"},
        {"action": "diff_local_done", "path": "a.txt"},
        {"action": "get_file_statuses", "contents": false},
        {"action": "apply_file", "path": "a.txt", "force": false},
        {"action": "apply_file_as", "path": "a.txt", "destination": "b.txt", "force": false},
        {"action": "review_get", "path": "a.txt"},
        {"action": "review_apply", "path": "a.txt", "accept": ["h1"], "reject": "all",
         "expected_disk_hash": null, "reasons": {"h1": "why"}},
        {"action": "checkpoint_list", "chat_id": "$CHAT"},
        {"action": "checkpoint_get", "checkpoint_id": "cp1"},
        {"action": "checkpoint_diff3", "checkpoint_id": "cp1", "path": "a.txt"},
        {"action": "checkpoint_rollback", "checkpoint_id": "cp1", "mode": "scoped_selected",
         "hunk_ids": ["h1"], "force": false},
        {"action": "send", "content": "hello", "chat_id": "$CHAT", "model": "fake/model", "reasoning_effort": "high"},
        {"action": "cancel", "target_request_id": "f1"},
        {"action": "tool_approve", "approval_id": "f1-a1", "approved": true},
        {"action": "clarify", "question_id": "f1-q1", "answer": "yes"},
        {"action": "generate_title", "chat_id": "$CHAT", "content": "title me"},
        {"action": "get_models", "refresh": true},
        {"action": "get_balance"},
        {"action": "estimate_tokens", "input_text": "draft"},
        {"action": "estimate_text_tokens", "texts": ["a", "b"]}
    ]"#,
    )
    .unwrap();
    all.as_array().unwrap().clone()
}

/// Fields that hold a path, for the path vectors.
const PATH_FIELDS: &[&str] = &["path", "destination", "project_root"];

/// Relative paths that leave the project (a symlink out is read as an external,
/// read-only file, so it is not among them).
const ESCAPES: &[&str] = &["..", "../..", "../x", "a/../../x", "./../x"];

/// Fields that name a chat or a checkpoint.
const ID_FIELDS: &[&str] = &["id", "chat_id", "source_chat_id", "checkpoint_id"];

/// Actions that read or write the file a path names: an escaping path must fail.
const TOUCHING: &[&str] = &[
    "context_add",
    "context_add_section",
    "context_update",
    "sync_context",
    "get_context_file",
    "get_output_file",
    "output_delete",
    "apply_file",
    "apply_file_as",
    "get_diff_paths",
    "diff_local_done",
    "context_set_readonly",
];

/// Hostile paths: escapes, state and VCS directories, symlinks out, odd spellings.
fn path_vectors(env: &Env, outside: &Path) -> Vec<String> {
    let root = env.project.display().to_string();
    let out = outside.display().to_string();
    let mut v: Vec<String> = [
        "..",
        "../..",
        "../x",
        "a/../../x",
        "./../x",
        "~",
        "~/x",
        "~/.bashrc",
        ".bb7",
        ".bb7/chats/index.json",
        ".bb7/chats/$CHAT/chat.json",
        ".git/hooks/pre-commit",
        ".git",
        "link_out/victim.txt",
        "link_out",
        "link_file",
        "link_dir_in/../../x",
        "a\u{0}b",
        "a.txt\u{0}",
        "\u{0}",
        "//",
        "a//b",
        "a.txt/",
        "src/",
        ".",
        "./",
        "",
        " ",
        "\n",
        "%2e%2e/x",
        "%2e%2e%2fx",
        "..\\x",
        "a\\..\\..\\x",
        "C:\\Windows\\x",
        "\\\\server\\x",
        "src/lib.rs",
        "src/../a.txt",
        "new/dir/file.txt",
        "é/ü.txt",
        "日本.txt",
        "a.txt:1",
        "-rf",
        "*",
        "?",
        "[a]",
        "..\u{2215}x",
        "file://a.txt",
        "/",
        "/nonexistent-bb7-fuzz/x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(format!("{root}/a.txt"));
    v.push(format!("{root}/../outside/victim.txt"));
    v.push(format!("{root}/.bb7/chats"));
    v.push(format!("{root}/.git/hooks/pre-commit"));
    v.push(root.clone());
    v.push(format!("{out}/victim.txt"));
    v.push(out);
    v.push("a/".repeat(3000) + "x");
    v.push("x".repeat(5000));
    v
}

/// A value of a wrong or extreme kind for any field.
fn weird_value(rng: &mut Rng, paths: &[String]) -> Value {
    match rng.below(24) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(false),
        3 => json!(0),
        4 => json!(-1),
        5 => json!(i64::MIN),
        6 => json!(u64::MAX),
        7 => json!(1.5),
        8 => json!(-0.0),
        9 => json!(1e308),
        10 => json!(""),
        11 => json!("\u{0}\u{1}\u{7f}"),
        12 => json!("ünï😀códe\u{202e}\u{feff}"),
        13 => json!("x".repeat(rng.below(200_000))),
        14 => json!({"nested": {"deeper": [1, 2, {"x": null}]}}),
        15 => json!([]),
        16 => json!(["a", 1, null]),
        17 => json!({}),
        18 => json!("all"),
        19 => serde_json::from_str(&format!("{}1{}", "[".repeat(100), "]".repeat(100))).unwrap(),
        20 => json!(4_294_967_297u64),
        21 => json!("\n\r\t\\\""),
        _ => json!(rng.pick(paths)),
    }
}

/// Byte-level damage to a serialized line.
fn damage(rng: &mut Rng, mut line: Vec<u8>) -> Vec<u8> {
    match rng.below(9) {
        0 => {
            let cut = rng.below(line.len().max(1));
            line.truncate(cut);
        }
        1 => {
            let at = rng.below(line.len().max(1));
            line.splice(at..at, [0xff, 0xfe, 0xc3]);
        }
        2 => {
            // A duplicate key in front of the real ones.
            let dup = br#""path":7,"request_id":{"a":1},"action":"ping","#;
            line.splice(1..1, dup.iter().copied());
        }
        3 => line = b" \t  \x0b\x0c ".to_vec(),
        4 => line = Vec::new(),
        5 => {
            line.insert(0, b'[');
            line.push(b']');
        }
        6 => line = b"null".to_vec(),
        7 => {
            // Invalid UTF-8 inside a string value.
            if let Some(i) = line.iter().position(|&b| b == b':') {
                line.splice(i + 1..i + 1, *b"\"\xc0\xaf\",\"zz\":");
            }
        }
        _ => line.extend_from_slice(b"}{\"action\":\"ping\"}"),
    }
    line
}

/// Builds one fuzzed line from a template.
fn mutate(rng: &mut Rng, template: &Value, paths: &[String], n: usize) -> Vec<u8> {
    let mut req: Map<String, Value> = template.as_object().unwrap().clone();
    req.insert("request_id".into(), json!(format!("f{n}")));
    let keys: Vec<String> = req.keys().cloned().collect();
    for _ in 0..1 + rng.below(3) {
        match rng.below(10) {
            0..=2 => {
                let k = rng.pick(&keys).clone();
                if k != "action" {
                    req.insert(k, weird_value(rng, paths));
                }
            }
            3..=4 => {
                for k in PATH_FIELDS {
                    if req.contains_key(*k) {
                        req.insert(k.to_string(), json!(rng.pick(paths)));
                    }
                }
            }
            5 => {
                let k = rng.pick(&keys).clone();
                if k != "action" && k != "request_id" {
                    req.remove(&k);
                }
            }
            6 => {
                let (s, e) = match rng.below(4) {
                    0 => (json!(5), json!(2)),
                    1 => (json!(-3), json!(-1)),
                    2 => (json!(1.5), json!(2.5)),
                    _ => (json!(u64::MAX), json!(0)),
                };
                req.insert("start_line".into(), s);
                req.insert("end_line".into(), e);
            }
            7 => {
                let a = [
                    "",
                    "PING",
                    "ping ",
                    "unknown_action",
                    "context_add\u{0}",
                    "__proto__",
                ];
                req.insert("action".into(), json!(rng.pick(&a)));
            }
            8 => {
                let id = match rng.below(7) {
                    0 => json!({"id": 1}),
                    1 => json!([1]),
                    2 => json!(true),
                    3 => json!(u64::MAX),
                    4 => json!(-7),
                    5 => json!(2.5),
                    _ => Value::Null,
                };
                req.insert("request_id".into(), id);
            }
            _ => {
                req.insert("unexpected".into(), weird_value(rng, paths));
            }
        }
    }
    // `bb7_init` elsewhere would create a `.bb7/` outside the project, which is its job.
    if req["action"] == "bb7_init" && req.get("project_root").is_some_and(Value::is_string) {
        req.insert("project_root".into(), json!("$ROOT"));
    }
    let line = Value::Object(req).to_string().into_bytes();
    if rng.chance(12) {
        damage(rng, line)
    } else {
        line
    }
}

/// The reply's `request_id` for `line`, as bb7 normalises it (none when unusable).
fn expected_id(line: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(line).ok()?;
    match v.get("request_id")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Answers every model call at once, so `send`, titles, models and balance finish.
fn quick_model(fake: &fake_model::FakeModel) {
    fake.set_fallback(Box::new(|req| {
        let http = |body: Value| Reply::Http {
            status: 200,
            headers: vec![],
            body: body.to_string(),
        };
        if req.path.ends_with("/chat/completions") {
            if req.body["stream"] == true {
                return Some(Reply::Sse(fake_model::response("", "fine", vec![])));
            }
            return Some(http(
                json!({"choices": [{"message": {"role": "assistant", "content": "T"}}]}),
            ));
        }
        if req.path.ends_with("/models") {
            return Some(http(json!({"data": []})));
        }
        if req.path.ends_with("/credits") {
            return Some(http(
                json!({"data": {"total_credits": 1.0, "total_usage": 0.5}}),
            ));
        }
        None
    }));
}

/// A project with files, a `.git` hook, and symlinks that lead out of it.
fn setup(outside: &Path) -> (Env, fake_model::FakeModel) {
    let (env, fake) = fake_env(json!({}));
    quick_model(&fake);
    env.write("a.txt", "one\ntwo\nthree\n");
    env.write("src/lib.rs", "fn main() {}\n");
    env.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    std::fs::create_dir_all(outside).unwrap();
    std::fs::write(outside.join("victim.txt"), "precious\n").unwrap();
    std::os::unix::fs::symlink(outside, env.project.join("link_out")).unwrap();
    std::os::unix::fs::symlink(outside.join("victim.txt"), env.project.join("link_file")).unwrap();
    std::fs::create_dir_all(env.project.join("dir_in")).unwrap();
    std::os::unix::fs::symlink(env.project.join("dir_in"), env.project.join("link_dir_in"))
        .unwrap();
    (env, fake)
}

/// Puts the session back on a fresh chat with context and output; returns the chat id.
fn reset(b: &mut Bb7, env: &Env) -> String {
    b.ok(json!({"action": "init", "project_root": env.project}));
    let id = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.write("a.txt", "one\ntwo\nthree\n");
    b.ok(json!({"action": "context_add", "path": "a.txt", "content": "one\ntwo\nthree\n"}));
    env.plant_output(&id, "a.txt", "one\nTWO\nthree\n");
    id
}

/// Sends `lines`, then a `ping`; waits until every usable `request_id` is answered.
/// Returns the first reply to each `request_id`.
fn run_batch(b: &mut Bb7, lines: &[Vec<u8>], batch: usize) -> HashMap<String, Value> {
    let mut replies = HashMap::new();
    let mut want: HashSet<String> = lines.iter().filter_map(|l| expected_id(l)).collect();
    for line in lines {
        b.send_raw(line);
    }
    let ping = format!("ping-{batch}");
    b.send_raw(
        json!({"action": "ping", "request_id": ping})
            .to_string()
            .as_bytes(),
    );
    want.insert(ping);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !want.is_empty() && Instant::now() < deadline {
        if let Some(status) = b.child.try_wait().unwrap() {
            panic!(
                "bb7 exited ({status}) during batch {batch}; last lines: {:?}",
                tail(lines)
            );
        }
        match b.recv_timeout(Duration::from_millis(200)) {
            Some(m) => {
                if let Some(id) = m["request_id"].as_str() {
                    want.remove(id);
                    replies.entry(id.to_owned()).or_insert(m);
                }
            }
            None => continue,
        }
    }
    assert!(
        b.child.try_wait().unwrap().is_none(),
        "bb7 exited after batch {batch}"
    );
    assert!(
        want.is_empty(),
        "batch {batch}: no reply to {want:?}; lines: {:?}",
        tail(lines)
    );
    replies
}

fn tail(lines: &[Vec<u8>]) -> Vec<String> {
    lines
        .iter()
        .rev()
        .take(5)
        .map(|l| String::from_utf8_lossy(&l[..l.len().min(300)]).into_owned())
        .collect()
}

fn line_count() -> usize {
    std::env::var("BB7_FUZZ_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
}

fn substitute(line: Vec<u8>, chat: &str, root: &Path) -> Vec<u8> {
    let root = serde_json::to_string(&root.display().to_string()).unwrap();
    let text = String::from_utf8_lossy(&line);
    if !text.contains('$') {
        return line;
    }
    // Replace only in valid text, so byte damage elsewhere stays as it was.
    match String::from_utf8(line) {
        Ok(t) => t
            .replace("$CHAT", chat)
            .replace("\"$ROOT\"", &root)
            .into_bytes(),
        Err(e) => e.into_bytes(),
    }
}

const PER_BATCH: usize = 150;

/// Sends `total` fuzzed lines (every template unchanged first) in batches, each on a
/// fresh chat; returns the number of lines and batches sent.
fn fuzz(b: &mut Bb7, env: &Env, paths: &[String], seed: u64, total: usize) -> (usize, usize) {
    let templates = templates();
    let mut rng = Rng(seed | 1);
    let per_batch = PER_BATCH;
    let mut n = 0;
    let mut batch = 0;
    let mut kinds: HashMap<bool, usize> = HashMap::new();
    while n < total {
        let chat = reset(b, env);
        let mut lines = Vec::new();
        if batch == 0 {
            for t in &templates {
                n += 1;
                let mut t = t.clone();
                t["request_id"] = json!(format!("v{n}"));
                lines.push(substitute(t.to_string().into_bytes(), &chat, &env.project));
            }
        }
        while lines.len() < per_batch && n < total {
            n += 1;
            let t = rng.pick(&templates).clone();
            let line = mutate(&mut rng, &t, paths, n);
            lines.push(substitute(line, &chat, &env.project));
        }
        for reply in run_batch(b, &lines, batch).values() {
            *kinds.entry(reply["type"] == "error").or_insert(0usize) += 1;
        }
        batch += 1;
    }
    // A fuzzer whose lines all fail at parsing would test nothing past the parser.
    assert!(
        kinds.get(&false).copied().unwrap_or(0) > total / 20,
        "too few fuzzed requests were served: {kinds:?}"
    );
    (n, batch)
}

#[test]
fn two_processes_fuzzing_one_project_both_keep_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().canonicalize().unwrap().join("outside");
    let (env, _fake) = setup(&outside);
    let paths = path_vectors(&env, &outside);
    let (mut first, _) = env.with_chat();
    let mut second = env.spawn();
    std::thread::scope(|s| {
        let (env, paths) = (&env, &paths);
        let a = s.spawn(move || fuzz(&mut first, env, paths, 7, 900).0 + shut(first));
        let b = s.spawn(move || fuzz(&mut second, env, paths, 11, 900).0 + shut(second));
        a.join().unwrap();
        b.join().unwrap();
    });
    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).unwrap(),
        "precious\n"
    );
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    b.ok(json!({"action": "chat_list", "include_archived": true}));
    assert_eq!(b.close().code(), Some(0));
}

/// Pings, shuts down, and checks the exit status is 0.
fn shut(mut b: Bb7) -> usize {
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
    b.ok(json!({"action": "shutdown"}));
    assert_eq!(common::wait_with_timeout(&mut b.child).code(), Some(0));
    0
}

#[test]
fn fuzzed_lines_never_end_the_process_and_every_id_is_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().canonicalize().unwrap().join("outside");
    let (env, _fake) = setup(&outside);
    let (mut b, _) = env.with_chat();
    let paths = path_vectors(&env, &outside);
    let templates = templates();
    let seed = std::env::var("BB7_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_bb7f_u64);
    let (mut n, mut batch) = fuzz(&mut b, &env, &paths, seed, line_count());
    let per_batch = PER_BATCH;
    // Every path vector through every path-taking action, unmutated otherwise.
    let chat = reset(&mut b, &env);
    let mut lines = Vec::new();
    let mut must_fail = Vec::new();
    for t in templates
        .iter()
        .filter(|t| PATH_FIELDS.iter().any(|f| t.get(f).is_some()) && t["action"] != "bb7_init")
    {
        for p in &paths {
            let mut req = t.clone();
            for f in PATH_FIELDS {
                if req.get(f).is_some() {
                    req[*f] = json!(p);
                }
            }
            n += 1;
            req["request_id"] = json!(format!("p{n}"));
            if ESCAPES.contains(&p.as_str()) && TOUCHING.contains(&req["action"].as_str().unwrap())
            {
                must_fail.push((format!("p{n}"), req.clone()));
            }
            lines.push(substitute(
                req.to_string().into_bytes(),
                &chat,
                &env.project,
            ));
        }
    }
    // Every path vector as the id of a chat or checkpoint: never a chat or checkpoint.
    for t in templates
        .iter()
        .filter(|t| ID_FIELDS.iter().any(|f| t.get(f).is_some()))
    {
        for p in &paths {
            let mut req = t.clone();
            for f in ID_FIELDS {
                if req.get(f).is_some() {
                    req[*f] = json!(p);
                }
            }
            n += 1;
            req["request_id"] = json!(format!("p{n}"));
            if !matches!(req["action"].as_str(), Some("checkpoint_list" | "send")) {
                must_fail.push((format!("p{n}"), req.clone()));
            }
            lines.push(substitute(
                req.to_string().into_bytes(),
                &chat,
                &env.project,
            ));
        }
    }
    let mut replies = HashMap::new();
    for chunk in lines.chunks(per_batch) {
        replies.extend(run_batch(&mut b, chunk, batch));
        batch += 1;
    }

    for (id, req) in &must_fail {
        assert_eq!(
            replies[id]["type"], "error",
            "{req} was served: {}",
            replies[id]
        );
    }

    assert_eq!(
        std::fs::read_to_string(outside.join("victim.txt")).unwrap(),
        "precious\n",
        "a request changed a file outside the project"
    );
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        1,
        "a request created a file outside the project"
    );
    assert_eq!(
        env.read(".git/hooks/pre-commit"),
        "#!/bin/sh\nexit 0\n",
        "a request changed .git/"
    );
    assert_eq!(b.ok(json!({"action": "ping"}))["type"], "ok");
    b.ok(json!({"action": "shutdown"}));
    let status = common::wait_with_timeout(&mut b.child);
    assert_eq!(status.code(), Some(0));

    // The state the fuzzing left behind still loads in a new process.
    let mut b = env.spawn();
    b.ok(json!({"action": "init", "project_root": env.project}));
    let list = b.ok(json!({"action": "chat_list", "include_archived": true}));
    assert!(!list["chats"].as_array().unwrap().is_empty(), "{list}");
    for chat in list["chats"].as_array().unwrap() {
        let id = chat["id"].as_str().unwrap();
        let r = b.request(json!({"action": "chat_select", "id": id}));
        if r["type"] == "error" {
            continue;
        }
        b.ok(json!({"action": "chat_get"}));
        b.ok(json!({"action": "get_file_statuses"}));
    }
    b.ok(json!({"action": "search_chats", "query": ""}));
    assert_eq!(b.close().code(), Some(0));
}
