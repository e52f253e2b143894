//! The retrieval tool steps of a turn: the client's approval or answer, awaited with
//! the turn's cancel, and the read itself off the runtime with a time limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::protocol::events::TurnMessage;
use crate::protocol::outbox::Outbox;
use crate::protocol::trace::tool_data;
use crate::tools::ToolCall;
use crate::tools::retrieval::{ReadError, RetrievalCall, ToolsMode};
use crate::turn::spec::{ClientAnswer, ToolStep, TurnSpec};

/// Asks the client and waits for its answer; `None` when the turn is cancelled.
async fn ask_client(
    spec: &TurnSpec,
    outbox: &Outbox,
    cancel: &CancellationToken,
    id: &str,
    msg: TurnMessage,
) -> Option<ClientAnswer> {
    let (tx, rx) = oneshot::channel();
    if let Ok(mut map) = spec.interactions.lock() {
        map.insert(id.to_owned(), tx);
    }
    outbox.emit(&msg, Some(&spec.request_id));
    let answer = tokio::select! {
        _ = cancel.cancelled() => None,
        a = rx => a.ok(),
    };
    if let Ok(mut map) = spec.interactions.lock() {
        map.remove(id);
    }
    answer
}

/// Runs one retrieval call: reports it, asks for approval in `ask` mode (or the
/// question of `clarify_user`), executes it and returns the result for the model.
/// `None` when the turn was cancelled meanwhile.
pub(super) async fn retrieval_step(
    call: &ToolCall,
    spec: &TurnSpec,
    outbox: &Outbox,
    cancel: &CancellationToken,
    budget: &mut usize,
    steps: &mut Vec<ToolStep>,
) -> Option<String> {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let chat_id = &spec.chat.id;
    let step = |status: &str, summary: &str| TurnMessage::ToolCall {
        name: call.name.clone(),
        arguments: args.clone(),
        status: status.to_owned(),
        summary: summary.to_owned(),
        chat_id: chat_id.clone(),
    };
    let traced = tool_data(&call.name, &args);
    // Every way out of the step records it once, with what the model is given.
    let mut record = |status: &str, summary: &str, given: Given, result: String| {
        spec.trace.tool_completed(
            &traced,
            status,
            &result,
            given == Given::ReadResult,
            given == Given::Error,
        );
        outbox.emit(&step(status, summary), Some(&spec.request_id));
        steps.push(ToolStep {
            name: call.name.clone(),
            arguments: args.clone(),
            status: status.to_owned(),
            summary: summary.to_owned(),
            answer: (given == Given::Answer && result != NO_ANSWER).then(|| result.clone()),
        });
        result
    };
    let Some(parsed) = RetrievalCall::parse(&call.name, &args) else {
        return Some(record(
            "denied",
            "invalid arguments",
            Given::Error,
            "Error: the arguments are not a valid JSON object.".into(),
        ));
    };
    if *budget == 0 {
        return Some(record(
            "denied",
            "tool call limit reached",
            Given::Refusal,
            format!(
                "The limit of {} tool calls for this response is reached. Answer with what you have.",
                spec.route.tool_budget(spec.limits.calls_per_turn)
            ),
        ));
    }
    *budget -= 1;
    let n = spec.route.tool_budget(spec.limits.calls_per_turn) - *budget;
    let read = match parsed {
        RetrievalCall::Read(read) => read,
        RetrievalCall::Clarify(c) => {
            let question = c.question.unwrap_or_default();
            outbox.emit(&step("requested", &question), Some(&spec.request_id));
            let id = format!("{}-q{n}", spec.request_id);
            spec.trace.clarification(&id, None, question.len());
            let msg = TurnMessage::Clarification {
                question_id: id.clone(),
                question: question.clone(),
                chat_id: chat_id.clone(),
            };
            let answer = ask_client(spec, outbox, cancel, &id, msg).await?;
            let answer = match answer {
                ClientAnswer::Text(a) if !a.trim().is_empty() => a,
                _ => NO_ANSWER.to_owned(),
            };
            let answered = answer != NO_ANSWER;
            spec.trace.clarification(&id, Some(answered), answer.len());
            return Some(record(
                "completed",
                &format!("Asked: {question}"),
                Given::Answer,
                answer,
            ));
        }
    };
    let payload = read.approval_payload();
    let description = payload.description().to_owned();
    // What the user approves names what the file is (its size, or that it is none).
    let payload = with_file_facts(payload, &spec.root);
    outbox.emit(&step("requested", &description), Some(&spec.request_id));
    spec.trace.tool_requested(&traced);
    if spec.tools == ToolsMode::Ask {
        let id = format!("{}-a{n}", spec.request_id);
        let msg = TurnMessage::ToolApproval {
            approval_id: id.clone(),
            payload,
            chat_id: chat_id.clone(),
        };
        let approved = ask_client(spec, outbox, cancel, &id, msg).await?;
        if approved != ClientAnswer::Approved(true) {
            return Some(record(
                "denied",
                &description,
                Given::Refusal,
                "The user declined this request. Do not ask for it again; continue without it."
                    .into(),
            ));
        }
    }
    let root = spec.root.clone();
    // A read of the project may block (a slow mount, a file that turned into a pipe
    // after it was checked): it runs on a blocking thread, and neither a cancel nor
    // the turn waits for it longer than READ_TIMEOUT (invariant 15).
    // Whatever ends the wait (the read, a cancel, the time limit, the turn dropped)
    // also stops a walk of the project still going on the blocking thread.
    let stop = StopOnDrop(Arc::new(AtomicBool::new(false)));
    let flag = stop.0.clone();
    let limits = spec.limits;
    let reading = tokio::task::spawn_blocking(move || read.run(&root, &limits, &flag));
    let result = tokio::select! {
        done = tokio::time::timeout(READ_TIMEOUT, reading) => match done {
            Ok(joined) => joined.unwrap_or_else(|e| Err(ReadError::Crashed(e.to_string()))),
            Err(_) => Err(ReadError::Crashed(format!(
                "the read did not finish within {} s",
                READ_TIMEOUT.as_secs()
            ))),
        },
        _ = cancel.cancelled() => return None,
    };
    Some(match result {
        Ok(out) => record("completed", &out.summary, Given::ReadResult, out.text),
        Err(e) => record(
            "completed",
            &format!("Failed: {e}"),
            Given::Error,
            format!("Error: {e}"),
        ),
    })
}

/// What the model is told when the user skipped a clarifying question.
const NO_ANSWER: &str = "no_user_answer";

/// What a tool step gave the model, for its trace (`tool.call.completed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Given {
    /// A read's result, counted in lines too.
    ReadResult,
    /// The user's answer to a clarification.
    Answer,
    /// A refusal: denied by the user, or over the call limit.
    Refusal,
    /// An error: the read failed, or the arguments did not parse.
    Error,
}

/// Sets its flag when dropped: tells a blocking read that nobody waits for it.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How long a retrieval read of the project may take before the model is told it failed.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A read's payload with what `root`'s file is: whether it exists, its size and
/// lines, also said in `description`. A path outside the project, or one the
/// retrieval tools withhold (likely secrets), is only said not to be readable.
fn with_file_facts(
    mut payload: crate::tools::retrieval::ApprovalPayload,
    root: &std::path::Path,
) -> crate::tools::retrieval::ApprovalPayload {
    if let crate::tools::retrieval::ApprovalPayload::Read {
        description,
        path,
        exists,
        bytes,
        lines,
    } = &mut payload
    {
        let found = crate::project::paths::locate_in_project(root, path)
            .ok()
            .filter(|(rel, _)| !crate::tools::reads::is_secret(rel))
            .and_then(|(_, abs)| Some((abs.metadata().ok()?, abs)))
            .filter(|(m, _)| m.is_file());
        match found {
            Some((meta, abs)) => {
                *exists = Some(true);
                *bytes = Some(meta.len());
                *lines = crate::project::fsutil::read_text(&abs, path)
                    .ok()
                    .map(|t| crate::text::line_count(&t) as u64);
                let size = match *lines {
                    Some(n) => format!("{n} line{}, ", if n == 1 { "" } else { "s" }),
                    None => String::new(),
                };
                description.push_str(&format!(" ({size}{})", human_bytes(meta.len())));
            }
            None => {
                *exists = Some(false);
                description.push_str(" (no such file)");
            }
        }
    }
    payload
}

/// A size for people: `812 B`, `3.2 KiB`, `1.5 MiB`.
fn human_bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}
