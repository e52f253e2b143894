//! The event trace (docs/PROTOCOL.md, "Extension: the event trace"): each turn, apply
//! and rollback records its steps in the chat's `events.jsonl`, read back with
//! `events_get` and a cursor, and sent on stdout only to a client that follows it. No
//! event holds file contents or message text.

mod common;

use common::fake_model::*;
use common::{Bb7, Env, fake_env, file_id};
use serde_json::{Value, json};

const SRC: &str = "fn alpha() {}\n";
const NEW: &str = "fn alpha() { unique_marker_body(); }\n";

/// A response whose only content is these retrieval calls.
fn reads(list: Vec<(&str, Value)>) -> Vec<Step> {
    let mut steps = vec![role()];
    for (i, (name, args)) in list.into_iter().enumerate() {
        steps.extend(tool_call(i, name, args, 2));
    }
    steps.extend([finish("tool_calls"), usage(10, 5, 0.0), done()]);
    steps
}

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// The events after `after`, and the next cursor.
fn events_after(b: &mut Bb7, after: u64) -> (Vec<Value>, u64) {
    let page = b.ok(json!({"action": "events_get", "after": after}));
    assert_eq!(page["type"], "events", "{page}");
    (
        page["events"].as_array().unwrap().clone(),
        page["next_cursor"].as_u64().unwrap(),
    )
}

fn chat_with_file(env: &Env, b: &mut Bb7) {
    env.write("a.rs", SRC);
    b.ok(json!({"action": "context_add", "path": "a.rs", "content": SRC}));
    b.ok(json!({"action": "save_chat_settings", "tools": "auto"}));
}

/// The model's answer that changes `fn alpha() {}` in a.rs to `NEW`.
fn changes_alpha() -> Vec<Step> {
    response(
        "",
        "Changed it.",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "a.rs", "file_id": file_id("a.rs", SRC),
                              "old_string": "fn alpha() {}", "new_string": NEW.trim_end()}]}),
        )],
    )
}

#[test]
fn a_turn_an_apply_and_a_rollback_record_their_steps() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    chat_with_file(&env, &mut b);
    fake.push_sse(reads(vec![("read_file", json!({"file_path": "a.rs"}))]));
    fake.push_sse(changes_alpha());
    let stream = b.turn_stream("please change alpha");
    assert_eq!(stream.last().unwrap()["type"], "done", "{stream:?}");
    assert!(
        stream.iter().all(|m| m["type"] != "event"),
        "no events on the stream unless followed: {stream:?}"
    );

    let (turn, cursor) = events_after(&mut b, 0);
    assert_eq!(
        types(&turn),
        [
            "job.started",
            "tool.call.requested",
            "tool.call.completed",
            "edits.proposed",
            "diff.generated",
            "job.completed"
        ]
    );
    let seqs: Vec<u64> = turn.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert_eq!(cursor, 6);
    let job = turn[0]["job_id"].as_str().unwrap();
    assert!(job.starts_with("job_"), "{job}");
    assert!(turn.iter().all(|e| e["job_id"] == job));
    assert!(
        turn.iter()
            .all(|e| e["time"].as_str().is_some_and(|t| t.ends_with('Z')))
    );
    assert_eq!(turn[1]["data"]["tool"], "read_file");
    assert_eq!(turn[1]["data"]["path"], "a.rs");
    assert_eq!(turn[2]["data"]["status"], "completed");
    assert_eq!(turn[3]["data"]["paths"], json!(["a.rs"]));
    assert_eq!(turn[4]["data"]["status"], "ok");
    assert_eq!(turn[4]["data"]["bytes"], NEW.len());
    assert_eq!(turn[5]["data"]["provider"], "remote");

    // An apply: its start, the checkpoint, its end, as its own job.
    let applied = b.ok(json!({"action": "apply_file", "path": "a.rs"}));
    let checkpoint = applied["checkpoint_id"].as_str().unwrap().to_owned();
    let (apply, cursor) = events_after(&mut b, cursor);
    assert_eq!(
        types(&apply),
        ["apply.started", "checkpoint.created", "apply.completed"]
    );
    assert_ne!(apply[0]["job_id"], job);
    assert_eq!(apply[1]["data"]["checkpoint_id"], checkpoint.as_str());
    assert_eq!(apply[2]["data"]["status"], "ok");
    assert_eq!(apply[2]["data"]["checkpoint_id"], checkpoint.as_str());
    assert!(
        apply[2]["data"]["after_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    // A rollback, then one that is refused.
    let rolled = b.ok(
        json!({"action": "checkpoint_rollback", "checkpoint_id": checkpoint, "mode": "hard_all"}),
    );
    let (rollback, cursor) = events_after(&mut b, cursor);
    assert_eq!(
        types(&rollback),
        [
            "checkpoint.rollback.started",
            "checkpoint.created",
            "checkpoint.rollback.completed"
        ]
    );
    assert_eq!(rollback[0]["data"]["reason"], "hard_all");
    assert_eq!(
        rollback[1]["data"]["checkpoint_id"],
        rolled["checkpoint_id"]
    );
    assert_eq!(rollback[2]["data"]["paths"], json!(["a.rs"]));
    // A request refused at the door (an unknown checkpoint, a path outside the
    // project) leaves no trace, as it leaves nothing else on disk.
    b.err(
        json!({"action": "checkpoint_rollback", "checkpoint_id": "cp_1_nope", "mode": "hard_all"}),
    );
    b.err(json!({"action": "apply_file", "path": "../outside.txt"}));
    assert_eq!(events_after(&mut b, cursor), (vec![], cursor));
    // A damaged checkpoint is a rollback that failed.
    let damaged = rolled["checkpoint_id"].as_str().unwrap();
    std::fs::write(
        env.project.join(format!(".bb7/checkpoints/{damaged}.json")),
        "{\"checkpoint_id\": 1",
    )
    .unwrap();
    b.err(json!({"action": "checkpoint_rollback", "checkpoint_id": damaged, "mode": "hard_all"}));
    let (failed, cursor) = events_after(&mut b, cursor);
    assert_eq!(
        types(&failed),
        ["checkpoint.rollback.started", "checkpoint.rollback.failed"]
    );
    assert_eq!(failed[1]["data"]["code"], "io");
    assert_eq!(failed[1]["data"]["checkpoint_id"], damaged);
    assert_eq!(events_after(&mut b, cursor), (vec![], cursor));

    // Stored with the chat, without contents or the user's words.
    let log = std::fs::read_to_string(env.chat_dir(&id).join("events.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 14);
    for secret in ["unique_marker_body", "please change alpha", "Changed it."] {
        assert!(!log.contains(secret), "{secret} in the trace: {log}");
    }
    // Another chat's trace is asked for by id; an unknown chat is not found.
    let other = b.ok(json!({"action": "events_get", "chat_id": id, "after": 13}));
    assert_eq!(other["events"].as_array().unwrap().len(), 1);
    assert_eq!(
        b.err(json!({"action": "events_get", "chat_id": "0000000000"}))["code"],
        "not_found"
    );
}

#[test]
fn a_follower_gets_events_on_the_stream_and_a_damaged_trace_still_reads() {
    let (env, fake) = fake_env(json!({"retry_backoff_ms": 1}));
    let (mut b, id) = env.with_chat();
    chat_with_file(&env, &mut b);
    let page = b.ok(json!({"action": "events_get", "follow": true}));
    assert_eq!(page["events"], json!([]));
    assert_eq!(page["next_cursor"], 0);

    // A clarification, then an answer without edits.
    fake.push_sse(reads(vec![(
        "clarify_user",
        json!({"question": "Which one?"}),
    )]));
    fake.push_sse(response("", "Fine.", vec![]));
    let rid = b.send(json!({"action": "send", "content": "do it"}));
    loop {
        let m = b.reply_to(&rid);
        match m["type"].as_str() {
            Some("clarification") => {
                b.ok(json!({"action": "clarify", "question_id": m["question_id"], "answer": "the first"}));
            }
            Some("done" | "error" | "diff_error") => break,
            _ => {}
        }
    }
    let streamed: Vec<Value> = b
        .backlog
        .iter()
        .filter(|m| m["type"] == "event")
        .cloned()
        .collect();
    assert!(
        streamed
            .iter()
            .all(|m| m.get("request_id").is_none() && m["chat_id"] == id.as_str()),
        "{streamed:?}"
    );
    let kinds: Vec<String> = streamed
        .iter()
        .map(|m| m["event"]["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "job.started",
            "clarification.requested",
            "clarification.received",
            "tool.call.completed",
            "job.completed"
        ]
    );
    assert_eq!(streamed[2]["event"]["data"]["status"], "answered");

    // The trace is damaged (a torn line, garbage): reading skips what does not parse,
    // and the next events go on numbering.
    let path = env.chat_dir(&id).join("events.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("not json at all\n{\"seq\":99,\"job_");
    std::fs::write(&path, text).unwrap();
    b.ok(json!({"action": "events_get", "follow": false}));
    for _ in 0..4 {
        fake.push(http_error(500, "down"));
    }
    assert_eq!(b.turn("again")["code"], "api");
    let (all, cursor) = events_after(&mut b, 0);
    assert_eq!(cursor, 7);
    assert_eq!(types(&all[5..]), ["job.started", "job.failed"], "{all:?}");
    assert_eq!(all[6]["data"]["code"], "api");
    assert!(
        b.backlog.iter().filter(|m| m["type"] == "event").count() == 5,
        "no events on stdout after follow is off"
    );
}

#[test]
fn a_review_records_its_decisions_and_a_refused_apply_its_code() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, _id) = env.with_chat();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    env.write("f.txt", &text);
    b.ok(json!({"action": "context_add", "path": "f.txt", "content": text}));
    let changed = text
        .replace("line 2\n", "line two\n")
        .replace("line 28\n", "line twenty-eight\n");
    fake.push_sse(response(
        "",
        "Two changes.",
        vec![("write_file", json!({"path": "f.txt", "content": changed}))],
    ));
    assert_eq!(b.turn("change two lines")["type"], "done");
    let (_, cursor) = events_after(&mut b, 0);
    let review = b.ok(json!({"action": "review_get", "path": "f.txt"}));
    let file = &review["files"][0];
    let hunks: Vec<Value> = file["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["hunk_id"].clone())
        .collect();
    assert_eq!(hunks.len(), 2, "{review}");
    b.ok(
        json!({"action": "review_apply", "path": "f.txt", "accept": [hunks[0]], "reject": [],
                "expected_disk_hash": file["disk_hash"]}),
    );
    let (steps, cursor) = events_after(&mut b, cursor);
    assert_eq!(
        types(&steps),
        [
            "apply.started",
            "review.updated",
            "checkpoint.created",
            "apply.completed"
        ]
    );
    assert_eq!(steps[1]["data"]["path"], "f.txt");
    assert_eq!(steps[1]["data"]["accepted"], 1);
    assert_eq!(steps[1]["data"]["rejected"], 0);
    assert_eq!(steps[1]["data"]["pending"], 1);

    // The user edits the other hunk's line: a plain apply is refused as a conflict.
    env.write(
        "f.txt",
        &text
            .replace("line 2\n", "line two\n")
            .replace("line 28\n", "mine\n"),
    );
    b.err(json!({"action": "apply_file", "path": "f.txt"}));
    let (refused, _) = events_after(&mut b, cursor);
    assert_eq!(types(&refused), ["apply.started", "apply.completed"]);
    assert_eq!(refused[1]["data"]["status"], "failed");
    assert_eq!(refused[1]["data"]["code"], "conflict");
}

/// A dropped `hybrid_auto` attempt has its own event with the fallback's reason and
/// a summary of what it did (sizes and counts, never its text or edits); each tool
/// step says what it gave the model: its size, lines for a read, and whether it was
/// an error.
#[test]
fn a_dropped_hybrid_attempt_and_tool_results_are_summarised() {
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "small-local"},
            "remote": {"base_url": remote.url, "model": "big/remote", "api_key": "rk"}
        },
        "agent_mode": "hybrid_auto",
        "hybrid_max_local_attempts": 1,
        "retry_backoff_ms": 1
    }));
    let (mut b, _id) = env.with_chat();
    chat_with_file(&env, &mut b);
    // The local attempt reads a file and one that is missing, then proposes an edit
    // that does not apply: it is dropped, and the remote one answers.
    local.push_sse(reads(vec![
        ("read_file", json!({"file_path": "a.rs"})),
        ("read_file", json!({"file_path": "missing.rs"})),
    ]));
    local.push_sse(response(
        "",
        "local secret words",
        vec![(
            "edit_file",
            json!({"edits": [{"path": "a.rs", "file_id": file_id("a.rs", SRC),
                              "old_string": "fn absent() {}", "new_string": "local_marker()"}]}),
        )],
    ));
    remote.push_sse(changes_alpha());
    let done = b.turn("please change alpha");
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["fallback_reason"], "schema_fail", "{done}");

    let (all, _) = events_after(&mut b, 0);
    assert_eq!(
        types(&all),
        [
            "job.started",
            "tool.call.requested",
            "tool.call.completed",
            "tool.call.requested",
            "tool.call.completed",
            "attempt.dropped",
            "edits.proposed",
            "diff.generated",
            "job.completed"
        ],
        "{all:#?}"
    );
    let job = &all[0]["job_id"];
    assert!(all.iter().all(|e| &e["job_id"] == job), "one job: {all:#?}");

    let read = &all[2]["data"];
    assert_eq!(read["status"], "completed");
    assert_eq!(read["is_error"], false);
    assert!(
        read["result_bytes"].as_u64().unwrap() >= SRC.len() as u64,
        "{read}"
    );
    assert!(read["result_lines"].as_u64().unwrap() >= 1, "{read}");
    let missing = &all[4]["data"];
    assert_eq!(missing["path"], "missing.rs");
    assert_eq!(missing["is_error"], true, "{missing}");
    assert!(missing["result_bytes"].as_u64().unwrap() > 0, "{missing}");
    assert!(missing.get("result_lines").is_none(), "{missing}");

    let dropped = &all[5]["data"];
    assert_eq!(dropped["reason"], "schema_fail");
    assert_eq!(dropped["provider"], "local");
    assert_eq!(dropped["model"], "small-local");
    assert_eq!(dropped["next_provider"], "remote");
    assert_eq!(dropped["attempt"], 1);
    assert_eq!(dropped["rounds"], 2);
    assert_eq!(dropped["tool_calls"], 2);
    assert_eq!(dropped["count"], 1);
    assert_eq!(dropped["failed"], 1);
    assert_eq!(dropped["paths"], json!(["a.rs"]));
    assert_eq!(dropped["bytes"], "local secret words".len());
    assert!(
        dropped["input_tokens"].as_u64().unwrap() >= 100,
        "{dropped}"
    );
    assert!(dropped["duration_ms"].is_u64(), "{dropped}");
    assert_eq!(all[8]["data"]["provider"], "remote");
    assert_eq!(all[8]["data"]["reason"], "schema_fail");

    let log = std::fs::read_to_string(env.chat_dir(&_id).join("events.jsonl")).unwrap();
    for secret in ["local secret words", "local_marker", "fn absent"] {
        assert!(!log.contains(secret), "{secret} in the trace: {log}");
    }
}

/// A rollback of another chat's checkpoint is traced in that chat, not in the
/// active one, and its checkpoint is that chat's too (its undo sees it).
#[test]
fn a_rollback_is_traced_in_the_chat_of_its_checkpoint() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, first) = env.with_chat();
    chat_with_file(&env, &mut b);
    fake.push_sse(changes_alpha());
    assert_eq!(b.turn("change alpha")["type"], "done");
    let applied = b.ok(json!({"action": "apply_file", "path": "a.rs"}));
    let checkpoint = applied["checkpoint_id"].as_str().unwrap().to_owned();
    let (_, cursor) = events_after(&mut b, 0);

    // Another chat is active when the first one's apply is rolled back.
    let second = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let rolled = b.ok(
        json!({"action": "checkpoint_rollback", "checkpoint_id": checkpoint, "mode": "hard_all"}),
    );
    assert_eq!(env.read("a.rs"), SRC);
    let page = b.ok(json!({"action": "events_get", "chat_id": second}));
    assert_eq!(
        page["events"],
        json!([]),
        "nothing in the active chat: {page}"
    );
    let page = b.ok(json!({"action": "events_get", "chat_id": first, "after": cursor}));
    let rollback = page["events"].as_array().unwrap();
    assert_eq!(
        types(rollback),
        [
            "checkpoint.rollback.started",
            "checkpoint.created",
            "checkpoint.rollback.completed"
        ]
    );
    assert_eq!(rollback[0]["data"]["checkpoint_id"], checkpoint.as_str());
    assert_eq!(
        rollback[1]["data"]["checkpoint_id"],
        rolled["checkpoint_id"]
    );
    let listed = b.ok(json!({"action": "checkpoint_list", "chat_id": first}));
    let ids: Vec<&Value> = listed["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["checkpoint_id"])
        .collect();
    assert!(ids.contains(&&rolled["checkpoint_id"]), "{listed}");
    assert!(!env.chat_dir(&second).join("events.jsonl").exists());
}

/// `events_get` on a long trace (50,000 events, with damaged and repeated lines)
/// gives, for every cursor, the events right after it; paging reaches each event
/// once, and the next event appended is numbered after the last.
#[test]
fn a_long_trace_pages_from_any_cursor() {
    let (env, fake) = fake_env(json!({}));
    let (mut b, id) = env.with_chat();
    let n = 50_000u64;
    let mut text = String::new();
    for seq in 1..=n {
        let line = json!({"seq": seq, "job_id": format!("job_{}", seq / 10),
                          "time": "2026-01-01T00:00:00.000Z", "type": "tool.call.completed",
                          "data": {"tool": "read_file", "path": format!("src/f{seq}.rs")}})
        .to_string();
        text.push_str(&line);
        text.push('\n');
        if seq == 30_000 {
            text.push_str(&line);
            text.push('\n');
        }
        if seq % 4_999 == 0 {
            text.push_str(&line[..line.len() / 3]);
            text.push_str("\nnot json\n\n");
        }
    }
    std::fs::write(env.chat_dir(&id).join("events.jsonl"), text).unwrap();
    for after in [
        0, 1, 4_998, 4_999, 5_000, 29_999, 30_000, 42_424, 49_000, 49_999,
    ] {
        let page = b.ok(json!({"action": "events_get", "after": after}));
        let seqs: Vec<u64> = page["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = (after + 1..=n).take(1000).collect();
        assert_eq!(seqs, want, "after {after}");
        assert_eq!(page["more"], after + 1000 < n, "after {after}");
        assert_eq!(page["next_cursor"], *want.last().unwrap(), "after {after}");
    }
    let (mut cursor, mut seen) = (0, 0);
    loop {
        let page = b.ok(json!({"action": "events_get", "after": cursor}));
        seen += page["events"].as_array().unwrap().len();
        cursor = page["next_cursor"].as_u64().unwrap();
        if page["more"] == false {
            break;
        }
    }
    assert_eq!((seen as u64, cursor), (n, n));
    assert_eq!(events_after(&mut b, n), (vec![], n));

    fake.push_sse(response("", "Fine.", vec![]));
    assert_eq!(b.turn("hello")["type"], "done");
    let (new, cursor) = events_after(&mut b, n);
    assert_eq!(types(&new), ["job.started", "job.completed"]);
    assert_eq!(new[0]["seq"], n + 1);
    assert_eq!(cursor, n + 2);
}
