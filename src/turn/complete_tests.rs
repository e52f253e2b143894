//! Turn completion without a process: each ending of a turn, from its outcome and plan
//! to the chat messages and the final stream message.

use std::time::Duration;

use super::*;
use crate::chat::ChatKey;
use crate::edit::{CallReport, CallStatus};
use crate::llm::ApiError;
use crate::llm::request::ChatRequest;
use crate::tools::ToolsMode;
use crate::turn::stream::{ToolStep, TurnSpec};

fn outcome(text: &str, calls: &[(&str, &str)]) -> TurnOutcome {
    TurnOutcome {
        spec: TurnSpec {
            request_id: "r1".into(),
            chat: ChatKey {
                global: false,
                id: "abcdef0123".into(),
            },
            body: std::sync::Arc::new(ChatRequest::new("m", vec![])),
            model: "vendor/model".into(),
            stall_timeout: Duration::from_secs(1),
            first_token_timeout: Duration::from_secs(1),
            local_server: false,
            max_retries: 0,
            backoff: Duration::from_millis(1),
            visible: true,
            tools: ToolsMode::Off,
            limits: crate::tools::retrieval::Limits::default(),
            root: "/tmp".into(),
            interactions: Default::default(),
            edits: Default::default(),
            route: Default::default(),
            trace: Default::default(),
        },
        text: text.into(),
        thinking: String::new(),
        calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall {
                id: format!("c{i}"),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect(),
        steps: Vec::new(),
        rounds: 1,
        usage: Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            cost: 0.01,
            ..Usage::default()
        }),
        error: None,
        cancelled: false,
        duration: 1.23456,
        blocks: Vec::new(),
        fell_back_to_blocks: false,
        finish_reason: None,
        prompt_cut: None,
        tools_exhausted: false,
    }
}

fn report(status: CallStatus, error: Option<&str>) -> CallReport {
    CallReport {
        tool: "edit_file".into(),
        path: Some("a.rs".into()),
        args: None,
        args_raw: None,
        status,
        error: error.map(str::to_owned),
        code: None,
        match_lines: None,
        suggestions: None,
    }
}

fn written(path: &str, content: &str, base: Option<&str>) -> Plan {
    let mut plan = Plan::default();
    plan.writes.insert(path.into(), content.into());
    plan.bases.insert(path.into(), base.map(str::to_owned));
    plan.reports.push(report(CallStatus::Ok, None));
    plan
}

#[test]
fn a_completed_answer_with_a_write_is_done_with_its_event() {
    let first = outcome("Here.", &[("write_file", "{}")]);
    let ended = Ended {
        first: &first,
        repair: None,
    };
    let c = complete(ended, &written("new.rs", "x\n", None), Vec::new());
    assert!(c.title);
    assert_eq!(c.messages.len(), 1);
    let m = &c.messages[0];
    assert_eq!(m.role, "assistant");
    assert_eq!(m.text(), "Here.");
    assert_eq!(m.output_files.as_deref(), Some(&["new.rs".to_owned()][..]));
    let event = m.parts.iter().find(|p| p.kind == "context_event").unwrap();
    assert_eq!(event.added, Some(true));
    assert_eq!(m.extra["usage"]["duration"], 1.235);
    match c.event {
        TurnMessage::Done {
            output_files,
            duration,
            ..
        } => {
            assert_eq!(output_files, ["new.rs"]);
            assert_eq!(duration, 1.235);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn failed_edits_keep_the_text_and_record_the_failure_on_the_answer() {
    let first = outcome("Changing it.", &[("edit_file", "{}")]);
    let mut plan = Plan::default();
    plan.reports
        .push(report(CallStatus::Failed, Some("old_string not found")));
    let ended = Ended {
        first: &first,
        repair: None,
    };
    assert!(ended.wants_repair(&plan, true));
    assert!(!ended.wants_repair(&plan, false));
    let c = complete(ended, &plan, Vec::new());
    assert!(!c.title);
    let roles: Vec<&str> = c.messages.iter().map(|m| m.role.as_str()).collect();
    // The answer stays the chat's last message; its failure is on it, not in a
    // system message.
    assert_eq!(roles, ["assistant"]);
    let failure = c.messages[0].diff_error.as_ref().unwrap();
    assert!(
        failure.errors[0].contains("old_string not found"),
        "{failure:?}"
    );
    assert!(matches!(c.event, TurnMessage::DiffError { ref errors, .. } if errors.len() == 1));
}

#[test]
fn a_cancelled_turn_keeps_complete_calls_and_ends_with_the_reference_error() {
    let mut first = outcome(
        "Partial",
        &[("write_file", r#"{"path":"a"}"#), ("write_file", r#"{"pa"#)],
    );
    first.cancelled = true;
    first.usage = None;
    let ended = Ended {
        first: &first,
        repair: None,
    };
    let calls = ended.calls_to_plan();
    assert_eq!(calls.len(), 1, "the cut-off call is dropped");
    let c = complete(ended, &Plan::default(), Vec::new());
    let roles: Vec<&str> = c.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["assistant", "system"]);
    assert!(c.messages[0].extra.get("usage").is_none());
    assert_eq!(c.messages[1].text(), CANCELLED);
    match c.event {
        TurnMessage::Error { code, message, .. } => {
            assert_eq!(code, ErrorCode::Cancelled);
            assert_eq!(message, CANCELLED);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_api_failure_applies_nothing_and_says_why() {
    let mut first = outcome("", &[("write_file", "{}")]);
    first.error = Some(ApiError::Dropped("eof".into()));
    let ended = Ended {
        first: &first,
        repair: None,
    };
    assert!(ended.calls_to_plan().is_empty());
    let c = complete(ended, &Plan::default(), Vec::new());
    // Nothing was said, so only the system message with the error is kept.
    assert_eq!(c.messages.len(), 1);
    assert_eq!(c.messages[0].role, "system");
    assert!(matches!(
        c.event,
        TurnMessage::Error {
            code: ErrorCode::Api,
            ..
        }
    ));
}

#[test]
fn a_repair_round_keeps_what_applied_and_adds_its_calls_and_text() {
    let first = outcome("First.", &[("write_file", "{}"), ("edit_file", "{}")]);
    let mut repair = outcome("Fixed.", &[("edit_file", r#"{"fixed":true}"#)]);
    repair.steps.push(ToolStep {
        name: "read_file".into(),
        arguments: Value::Null,
        status: "completed".into(),
        summary: "Read a.rs".into(),
        answer: None,
    });
    let mut plan = Plan::default();
    plan.reports.push(report(CallStatus::Ok, None));
    plan.reports
        .push(report(CallStatus::Failed, Some("not unique")));
    let ended = Ended {
        first: &first,
        repair: Some(&repair),
    };
    let calls = ended.calls_after_repair(&first.calls, &plan);
    let args: Vec<&str> = calls.iter().map(|c| c.arguments.as_str()).collect();
    assert_eq!(args, ["{}", r#"{"fixed":true}"#]);
    assert!(!ended.wants_repair(&plan, true), "one repair round at most");
    let c = complete(ended, &written("a.rs", "y\n", Some("x\n")), Vec::new());
    assert_eq!(c.messages[0].text(), "First.\n\nFixed.");
    assert_eq!(c.usage.total_tokens, 30);
}
