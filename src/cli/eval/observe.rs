//! What bb7 did in one task, seen from outside: the model calls it handled, counted
//! from the requests it sent and from its own trace of the turn (never from the
//! answers a trace file holds, which bb7 may drop, or a stream may number oddly), and
//! its own time around the model's, in three parts.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::task::Exchange;

/// When the eval saw the turn's steps, and what bb7's trace of it says.
#[derive(Debug, Clone, Copy)]
pub struct Observed {
    /// The `send` line was written to bb7.
    pub sent: Instant,
    /// bb7's final message of the turn (`done`, `diff_error`, `error`) was read.
    pub ended: Option<Instant>,
    /// The review ended (every file's `review_apply` answered); `None` without one.
    pub applied: Option<Instant>,
    /// Edit calls and SEARCH/REPLACE blocks of the answer that stood, as bb7 planned
    /// them (the `count` of its `edits.proposed` events).
    pub planned_edits: u64,
}

impl Observed {
    /// A turn whose `send` was written now.
    pub fn new() -> Observed {
        Observed {
            sent: Instant::now(),
            ended: None,
            applied: None,
            planned_edits: 0,
        }
    }
}

/// bb7's own time in one task, in milliseconds, in three parts around the model's
/// (the trace's recorded time). Time bb7 spends between one answer and its next request
/// (a retry, a fallback) is in the task's `overhead_ms` total, not in these parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Overhead {
    /// From the eval writing `send` to the first byte of bb7's first model request
    /// reaching the endpoint: reading the chat and context, building the prompt. 0 when
    /// bb7 sent no model request.
    pub send_to_request_ms: u64,
    /// From the last byte of the answer to bb7's last request to its final message
    /// (`done` or `diff_error`): reading the stream, planning and storing the edits. 0
    /// when that answer never ended (bb7 gave up on it).
    pub answer_to_done_ms: u64,
    /// From the final message to the end of the review: `review_get` and a
    /// `review_apply` per file, which writes it. 0 without proposed changes.
    pub apply_ms: u64,
}

/// The overhead's parts of a task whose endpoints answered `served` (each with the
/// instants its request arrived and its answer ended).
pub fn overhead(seen: &Observed, served: &[Exchange]) -> Overhead {
    let ms = |from: Instant, to: Instant| to.saturating_duration_since(from).as_millis() as u64;
    let first = served.iter().filter_map(|e| e.first_byte).min();
    // The answer the turn ended on is the one to the request that came last.
    let last = served
        .iter()
        .filter(|e| e.first_byte.is_some())
        .max_by_key(|e| e.first_byte)
        .and_then(|e| e.last_byte);
    Overhead {
        send_to_request_ms: first.map_or(0, |f| ms(seen.sent, f)),
        answer_to_done_ms: match (last, seen.ended) {
            (Some(l), Some(end)) => ms(l, end),
            _ => 0,
        },
        apply_ms: match (seen.ended, seen.applied) {
            (Some(end), Some(applied)) => ms(end, applied),
            _ => 0,
        },
    }
}

/// The model's calls bb7 handled in a task: for every request it sent, the tool results
/// it returned there to the answer before (a retrieval step, a clarifying question, the
/// failed edits a local retry reports), and the final answer's edits it planned. A
/// dropped local attempt that bb7 answered with nothing (a fallback to remote) counts
/// none: bb7 acted on none of its calls.
pub fn tool_calls(served: &[Exchange], planned_edits: u64) -> usize {
    let returned: usize = served
        .iter()
        .filter(|e| !e.unscripted)
        .map(|e| results_after_last_answer(&e.sent))
        .sum();
    returned + planned_edits as usize
}

/// The messages of a request body, as far as counting tool results goes.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SentBody {
    messages: Vec<SentMessage>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SentMessage {
    role: String,
    content: SentContent,
}

/// A message's content: parts (Anthropic's `tool_result` blocks among them) or text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SentContent {
    Parts(Vec<SentPart>),
    Other(serde::de::IgnoredAny),
}

impl Default for SentContent {
    fn default() -> SentContent {
        SentContent::Parts(Vec::new())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SentPart {
    #[serde(rename = "type")]
    kind: String,
}

/// Tool results after the request's last assistant message: what bb7 returned to
/// that answer's calls (OpenAI's `tool` messages, Anthropic's `tool_result` parts).
fn results_after_last_answer(body: &serde_json::Value) -> usize {
    let Ok(body) = SentBody::deserialize(body) else {
        return 0;
    };
    let Some(last) = body.messages.iter().rposition(|m| m.role == "assistant") else {
        return 0;
    };
    body.messages[last + 1..]
        .iter()
        .map(|m| match (&m.role[..], &m.content) {
            ("tool", _) => 1,
            ("user", SentContent::Parts(parts)) => {
                parts.iter().filter(|p| p.kind == "tool_result").count()
            }
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sent(body: serde_json::Value) -> Exchange {
        Exchange {
            sent: body,
            ..Exchange::default()
        }
    }

    #[test]
    fn calls_are_the_results_bb7_returned_and_the_edits_it_planned() {
        let first = sent(json!({"messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "u"}
        ]}));
        let retry = sent(json!({"messages": [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": [{}, {}]},
            {"role": "tool", "content": "Failed"}, {"role": "tool", "content": "Failed"},
            {"role": "user", "content": "again"}
        ]}));
        let anthropic = sent(json!({"messages": [
            {"role": "assistant", "content": [{"type": "tool_use"}]},
            {"role": "user", "content": [{"type": "tool_result"}, {"type": "text"}]}
        ]}));
        assert_eq!(tool_calls(&[first], 1), 1);
        assert_eq!(tool_calls(&[retry, anthropic], 1), 4);
        assert_eq!(tool_calls(&[sent(json!("not a body"))], 0), 0);
    }

    #[test]
    fn the_overhead_parts_are_the_gaps_around_the_model() {
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        let seen = Observed {
            sent: t0,
            ended: Some(at(70)),
            applied: Some(at(100)),
            planned_edits: 0,
        };
        let e = |first: u64, last: Option<u64>| Exchange {
            first_byte: Some(at(first)),
            last_byte: last.map(at),
            ..Exchange::default()
        };
        let o = overhead(&seen, &[e(10, Some(20)), e(30, Some(60))]);
        assert_eq!(
            o,
            Overhead {
                send_to_request_ms: 10,
                answer_to_done_ms: 10,
                apply_ms: 30
            }
        );
        // An answer bb7 gave up on has no end to measure from.
        assert_eq!(overhead(&seen, &[e(10, None)]).answer_to_done_ms, 0);
        assert_eq!(overhead(&seen, &[]).send_to_request_ms, 0);
    }
}
