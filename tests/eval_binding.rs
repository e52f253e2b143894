//! `bb7 eval` binds a trace to its run: a replay refuses a trace of another mode or
//! of another model than the provider is configured with, and a failed task makes the
//! exit status non-zero (README, "Eval").

mod eval_support;

use eval_support::*;
use serde_json::{Value, json};

/// A trace replays only as the run it was made of: a remote trace relabelled local
/// (its mode, or its mode and providers), or one whose exchanges name no model, is
/// refused, and the exit status says a task failed.
#[test]
fn a_replay_refuses_a_trace_of_another_mode_or_model() {
    let home = tempfile::tempdir().unwrap();
    let shipped = shipped_trace("remote", "js-const");
    let run = |trace: &Value| {
        let dir = home.path().join("traces");
        std::fs::create_dir_all(dir.join("local")).unwrap();
        std::fs::write(dir.join("local/js-const.json"), trace.to_string()).unwrap();
        let out = bb7(
            home.path(),
            &[
                "eval",
                "--replay",
                dir.to_str().unwrap(),
                "--mode",
                "local",
                "--task",
                "js-const",
                "--json",
            ],
        );
        let r = parse_report(&out);
        assert_eq!(out.status.code(), Some(1));
        let t = task_result(&r, "js-const").clone();
        assert_eq!(t["success"], false, "{t}");
        t["failures"].to_string()
    };
    // Moved under local/ as it is.
    let why = run(&shipped);
    assert!(
        why.contains("the trace is of mode \\\"remote\\\", not \\\"local\\\""),
        "{why}"
    );
    // Relabelled: mode and providers say local; the model that answered does not.
    let mut relabelled = shipped.clone();
    relabelled["mode"] = json!("local");
    for e in relabelled["exchanges"].as_array_mut().unwrap() {
        e["provider"] = json!("local");
    }
    let why = run(&relabelled);
    assert!(
        why.contains("answered by \\\"remote-model\\\"; the local provider is configured with \\\"local-model\\\""),
        "{why}"
    );
    // Relabelled and stripped of its models.
    for e in relabelled["exchanges"].as_array_mut().unwrap() {
        e.as_object_mut().unwrap().remove("model");
    }
    let why = run(&relabelled);
    assert!(
        why.contains("exchange 1 of the trace names no model"),
        "{why}"
    );
}
