//! The checks of a task. A replay checks what bb7 did against the trace it replays:
//! each request went to the provider the trace has at that point (so a retry or a
//! fallback in another order, or one too many, shows), named the expected model,
//! carried `tools` or asked for blocks as expected, and every answer of the trace was
//! asked for. A trace answers only the requests it expects; without these checks a
//! changed route could still end "ok". Every run then checks the outcome the task
//! expects: the files on disk, a command, a conflict, a question, or a refusal that
//! left every file as it was.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use super::task::{Exchange, Task};

/// Why a trace cannot be replayed as a run of `mode` (empty when it can): it was
/// made for another mode, or an exchange names no model or another model than
/// `model_of` gives its provider (the replay's configuration), so its answers are
/// not this configuration's.
pub fn check_binding(
    trace_mode: &str,
    mode: &str,
    trace: &[Exchange],
    model_of: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    if trace_mode != mode {
        failures.push(format!("the trace is of mode {trace_mode:?}, not {mode:?}"));
    }
    for (i, e) in trace.iter().enumerate() {
        let want = model_of(&e.provider);
        match (&e.model, want) {
            (None, _) => failures.push(format!(
                "exchange {} of the trace names no model; record it again, or write it with its model",
                i + 1
            )),
            (Some(m), Some(want)) if *m != want => failures.push(format!(
                "exchange {} of the trace was answered by {m:?}; the {} provider is configured with {want:?}",
                i + 1,
                e.provider
            )),
            _ => {}
        }
    }
    failures
}

/// The failures of a replayed task, in words: `trace` is the trace's exchanges in
/// order, `served` what the endpoints answered in the order the requests arrived,
/// `unused` the trace's answers no request asked for, and `model_of` the model the
/// replay config gives a provider (`local`, `remote`): a request must name the model
/// of the provider it went to.
pub fn check_requests(
    trace: &[Exchange],
    served: &[Exchange],
    unused: usize,
    model_of: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    let want: Vec<&str> = trace.iter().map(|e| e.provider.as_str()).collect();
    let got: Vec<&str> = served.iter().map(|e| e.provider.as_str()).collect();
    if let Some(i) = (0..want.len().max(got.len())).find(|&i| want.get(i) != got.get(i)) {
        failures.push(match (got.get(i), want.get(i)) {
            (Some(g), Some(w)) => format!(
                "request {} went to the {g} provider; the trace has it on {w} (the route changed)",
                i + 1
            ),
            (Some(g), None) => format!(
                "request {} went to the {g} provider; the trace has no request {} (an extra retry or fallback)",
                i + 1,
                i + 1
            ),
            (None, Some(w)) => format!(
                "bb7 sent {} requests; the trace has a request {} on {w} (a retry or fallback that did not happen)",
                got.len(),
                i + 1
            ),
            (None, None) => unreachable!("found where the two differ"),
        });
    }
    for (i, e) in served.iter().enumerate() {
        if e.unscripted {
            continue;
        }
        let model = e.sent.get("model").and_then(Value::as_str).unwrap_or("");
        // A replay runs with its own model names, so the model expected is the one
        // the replay config gives the provider that answered.
        let expected = model_of(&e.provider);
        if let Some(want) = expected.filter(|w| w != model) {
            failures.push(format!(
                "request {} named model {model:?}; the trace expects {want:?}",
                i + 1
            ));
        }
        let tools = carries_tools(&e.sent);
        let want_tools = e
            .expect_tools
            .or_else(|| (!e.request.is_null()).then(|| carries_tools(&e.request)));
        if let Some(want) = want_tools.filter(|w| *w != tools) {
            let shape = |t: bool| if t { "tools" } else { "SEARCH/REPLACE blocks" };
            failures.push(format!(
                "request {} asked for {}; the trace expects {}",
                i + 1,
                shape(tools),
                shape(want)
            ));
        }
    }
    if unused > 0 {
        failures.push(format!(
            "{unused} answer{} of the trace never asked for",
            if unused == 1 { "" } else { "s" }
        ));
    }
    failures
}

/// What a run saw of its task that the outcome checks read.
#[derive(Debug, Clone, Copy)]
pub struct Ended<'a> {
    /// How the turn ended: `done`, `diff_error`, `error`.
    pub outcome: &'a str,
    /// The review met the user's edits.
    pub conflict: bool,
    /// The model asked a clarifying question.
    pub clarification: bool,
    /// A failure was found already (the turn's error): a check that would only repeat
    /// it says nothing.
    pub failed: bool,
}

/// The outcome checks' verdict.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// The checks that did not hold, in words.
    pub failures: Vec<String>,
    /// bb7 refused the answer's edits: the turn ended with `diff_error` and every file
    /// of the task is byte for byte as it was.
    pub refused: bool,
}

/// The task's checks against the project after the turn (and its review).
pub fn check_outcome(task: &Task, project: &Path, ended: Ended) -> Verdict {
    let expect = &task.expect;
    let mut failures = Vec::new();
    // Byte for byte: a refusal that rewrote line ends or a final newline still wrote.
    let changed: Vec<&str> = task
        .files
        .iter()
        .filter(|(rel, before)| {
            std::fs::read(project.join(rel)).ok().as_deref() != Some(before.as_bytes())
        })
        .map(|(rel, _)| rel.as_str())
        .collect();
    let refused = ended.outcome == "diff_error" && changed.is_empty();
    if expect.refusal {
        match ended.outcome {
            "diff_error" => {}
            "done" if !changed.is_empty() => failures.push(format!(
                "bb7 applied edits the task expects refused ({} written)",
                changed.join(", ")
            )),
            other if !ended.failed => failures.push(format!(
                "the turn ended with {other}; bb7 should have refused the edits (diff_error)"
            )),
            _ => {}
        }
        for rel in &changed {
            failures.push(format!("{rel} changed; a refusal leaves it as it was"));
        }
    } else if ended.outcome != "done" && !ended.failed {
        failures.push(format!("the turn ended with {}", ended.outcome));
    }
    for (rel, want) in &expect.files {
        let got = std::fs::read(project.join(rel)).unwrap_or_default();
        if got != want.as_bytes() {
            failures.push(format!("{rel} is not as expected"));
        }
    }
    if let Some(argv) = expect.command.as_ref().filter(|a| !a.is_empty()) {
        let status = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(project)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            failures.push(format!("`{}` did not pass", argv.join(" ")));
        }
    }
    if expect.conflict != ended.conflict {
        failures.push(if expect.conflict {
            "no conflict, one was expected".into()
        } else {
            "an unexpected conflict".into()
        });
    }
    if expect.clarification && !ended.clarification {
        failures.push("no clarifying question, one was expected".into());
    }
    Verdict { failures, refused }
}

/// Whether a request body offers tools.
fn carries_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ex(provider: &str, sent: Value) -> Exchange {
        Exchange {
            provider: provider.into(),
            sent,
            ..Exchange::default()
        }
    }

    #[test]
    fn a_changed_route_or_request_is_a_failure() {
        let trace = [ex("local", Value::Null), ex("remote", Value::Null)];
        let models = |p: &str| Some(format!("{p}-model"));
        let good = [
            ex("local", json!({"model": "local-model", "tools": [1]})),
            ex("remote", json!({"model": "remote-model"})),
        ];
        assert!(check_requests(&trace, &good, 0, models).is_empty());
        let early = [ex("remote", json!({"model": "remote-model"}))];
        let f = check_requests(&trace, &early, 1, models);
        assert!(
            f[0].contains("request 1 went to the remote provider; the trace has it on local"),
            "{f:?}"
        );
        assert!(
            f.last()
                .unwrap()
                .contains("1 answer of the trace never asked for")
        );
        let mut wrong = good.clone();
        wrong[0].sent = json!({"model": "other"});
        wrong[0].expect_tools = Some(true);
        let f = check_requests(&trace, &wrong, 0, models);
        assert!(
            f.iter().any(|m| m.contains("named model \"other\"")),
            "{f:?}"
        );
        assert!(
            f.iter()
                .any(|m| m.contains("asked for SEARCH/REPLACE blocks; the trace expects tools"))
        );
    }
}
