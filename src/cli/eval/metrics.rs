//! The eval's metrics of one mode, from its task results: success rate, accepted-hunk
//! ratio, conflict rate, refusals as expected, tool calls per successful task, p50/p95
//! of the model's latency and of bb7's overhead and its parts, cost per task,
//! clarification rate, how often and why a hybrid turn fell back, and tasks and
//! successes per tag.

use std::collections::BTreeMap;

use serde::Serialize;

use super::observe::Overhead;
use super::run::TaskResult;

/// The metrics of one mode. Rates are fractions of the tasks run (0 to 1), rounded to
/// four decimals; costs are USD, rounded to six.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ModeMetrics {
    /// `local`, `remote` or `hybrid_auto`.
    pub mode: String,
    /// Tasks run (a replay skips tasks without a trace).
    pub tasks: usize,
    /// Tasks skipped for want of a trace.
    pub missing_traces: usize,
    /// Tasks whose checks all held.
    pub successes: usize,
    /// `successes / tasks`.
    pub success_rate: f64,
    /// Hunks accepted by the review over hunks proposed.
    pub accepted_hunk_ratio: f64,
    /// Tasks whose review met the user's edits.
    pub conflict_rate: f64,
    /// Tasks that expect bb7 to refuse the answer's edits (`expect.refusal`).
    pub refusal_tasks: usize,
    /// Of those, the tasks bb7 refused with every file left as it was.
    pub refused_as_expected: usize,
    /// `refused_as_expected / refusal_tasks` (0 without such tasks).
    pub refusal_rate: f64,
    /// Tool calls of successful tasks per successful task.
    pub tool_calls_per_success: f64,
    /// Median latency of a task in milliseconds (nearest rank).
    pub latency_p50_ms: u64,
    /// 95th percentile latency in milliseconds (nearest rank).
    pub latency_p95_ms: u64,
    /// Median of bb7's own time per task (`overhead_ms`: send to applied, less the
    /// model's answering), beside the model's latency above.
    pub overhead_p50_ms: u64,
    /// 95th percentile of bb7's own time per task.
    pub overhead_p95_ms: u64,
    /// Median of the overhead's parts per task (each part's own median).
    pub overhead_parts_p50: Overhead,
    /// 95th percentile of the overhead's parts per task (each part's own).
    pub overhead_parts_p95: Overhead,
    /// Mean cost of a task in USD.
    pub cost_per_task: f64,
    /// Tasks where the model asked a clarifying question.
    pub clarification_rate: f64,
    /// Tasks answered by the remote provider after a fallback.
    pub fallback_rate: f64,
    /// Fallbacks by reason.
    pub fallback_reasons: BTreeMap<String, usize>,
    /// Tasks and successes per task tag.
    pub tags: BTreeMap<String, TagCount>,
}

/// Tasks of one tag and how many succeeded.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct TagCount {
    /// Tasks run with the tag.
    pub tasks: usize,
    /// Of those, tasks whose checks all held.
    pub successes: usize,
}

/// The metrics of `results`, all of one `mode`.
pub fn summarize(mode: &str, results: &[TaskResult], missing_traces: usize) -> ModeMetrics {
    let n = results.len();
    let rate = |count: usize| {
        if n == 0 {
            0.0
        } else {
            round(count as f64 / n as f64, 4)
        }
    };
    let successes: Vec<&TaskResult> = results.iter().filter(|r| r.success).collect();
    let hunks: usize = results.iter().map(|r| r.hunks).sum();
    let accepted: usize = results.iter().map(|r| r.accepted).sum();
    let mut latencies: Vec<u64> = results.iter().map(|r| r.latency_ms).collect();
    latencies.sort_unstable();
    let mut overheads: Vec<u64> = results.iter().map(|r| r.overhead_ms).collect();
    overheads.sort_unstable();
    let part = |f: fn(&Overhead) -> u64, p: usize| {
        let mut v: Vec<u64> = results.iter().map(|r| f(&r.overhead)).collect();
        v.sort_unstable();
        percentile(&v, p)
    };
    let parts = |p: usize| Overhead {
        send_to_request_ms: part(|o| o.send_to_request_ms, p),
        answer_to_done_ms: part(|o| o.answer_to_done_ms, p),
        apply_ms: part(|o| o.apply_ms, p),
    };
    let refusal_tasks = results.iter().filter(|r| r.must_refuse).count();
    let refused_as_expected = results
        .iter()
        .filter(|r| r.must_refuse && r.refused && r.success)
        .count();
    let mut tags: BTreeMap<String, TagCount> = BTreeMap::new();
    for r in results {
        for tag in &r.tags {
            let count = tags.entry(tag.clone()).or_default();
            count.tasks += 1;
            count.successes += usize::from(r.success);
        }
    }
    let mut fallback_reasons = BTreeMap::new();
    for reason in results.iter().filter_map(|r| r.fallback_reason.as_ref()) {
        *fallback_reasons.entry(reason.clone()).or_insert(0) += 1;
    }
    ModeMetrics {
        mode: mode.to_owned(),
        tasks: n,
        missing_traces,
        successes: successes.len(),
        success_rate: rate(successes.len()),
        accepted_hunk_ratio: if hunks == 0 {
            0.0
        } else {
            round(accepted as f64 / hunks as f64, 4)
        },
        conflict_rate: rate(results.iter().filter(|r| r.conflict).count()),
        refusal_tasks,
        refused_as_expected,
        refusal_rate: if refusal_tasks == 0 {
            0.0
        } else {
            round(refused_as_expected as f64 / refusal_tasks as f64, 4)
        },
        tool_calls_per_success: if successes.is_empty() {
            0.0
        } else {
            let calls: usize = successes.iter().map(|r| r.tool_calls).sum();
            round(calls as f64 / successes.len() as f64, 4)
        },
        latency_p50_ms: percentile(&latencies, 50),
        latency_p95_ms: percentile(&latencies, 95),
        overhead_p50_ms: percentile(&overheads, 50),
        overhead_p95_ms: percentile(&overheads, 95),
        overhead_parts_p50: parts(50),
        overhead_parts_p95: parts(95),
        cost_per_task: if n == 0 {
            0.0
        } else {
            round(results.iter().map(|r| r.cost).sum::<f64>() / n as f64, 6)
        },
        clarification_rate: rate(results.iter().filter(|r| r.clarification).count()),
        fallback_rate: rate(
            results
                .iter()
                .filter(|r| r.fallback_reason.is_some())
                .count(),
        ),
        fallback_reasons,
        tags,
    }
}

/// The nearest-rank percentile `p` (1 to 100) of sorted `values`; 0 when empty.
pub fn percentile(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

fn round(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

/// The metrics side by side: one row per metric, one column per mode.
pub fn table(modes: &[ModeMetrics]) -> String {
    type Row = (&'static str, fn(&ModeMetrics) -> String);
    let rows: Vec<Row> = vec![
        ("tasks", |m| m.tasks.to_string()),
        ("success rate", |m| {
            format!("{:.1}%", m.success_rate * 100.0)
        }),
        ("accepted hunks", |m| {
            format!("{:.1}%", m.accepted_hunk_ratio * 100.0)
        }),
        ("conflict rate", |m| {
            format!("{:.1}%", m.conflict_rate * 100.0)
        }),
        ("refused as expected", |m| {
            format!("{}/{}", m.refused_as_expected, m.refusal_tasks)
        }),
        ("tool calls / success", |m| {
            format!("{:.2}", m.tool_calls_per_success)
        }),
        ("model latency p50", |m| format!("{} ms", m.latency_p50_ms)),
        ("model latency p95", |m| format!("{} ms", m.latency_p95_ms)),
        ("bb7 overhead p50", |m| format!("{} ms", m.overhead_p50_ms)),
        ("bb7 overhead p95", |m| format!("{} ms", m.overhead_p95_ms)),
        ("  send → request p50", |m| {
            format!("{} ms", m.overhead_parts_p50.send_to_request_ms)
        }),
        ("  send → request p95", |m| {
            format!("{} ms", m.overhead_parts_p95.send_to_request_ms)
        }),
        ("  answer → done p50", |m| {
            format!("{} ms", m.overhead_parts_p50.answer_to_done_ms)
        }),
        ("  answer → done p95", |m| {
            format!("{} ms", m.overhead_parts_p95.answer_to_done_ms)
        }),
        ("  apply p50", |m| {
            format!("{} ms", m.overhead_parts_p50.apply_ms)
        }),
        ("  apply p95", |m| {
            format!("{} ms", m.overhead_parts_p95.apply_ms)
        }),
        ("cost / task", |m| format!("${:.4}", m.cost_per_task)),
        ("clarification rate", |m| {
            format!("{:.1}%", m.clarification_rate * 100.0)
        }),
        ("fallback rate", |m| {
            format!("{:.1}%", m.fallback_rate * 100.0)
        }),
    ];
    let mut labelled: Vec<(String, Vec<String>)> = rows
        .iter()
        .map(|(label, f)| (label.to_string(), modes.iter().map(f).collect()))
        .collect();
    // A tag's successes out of its tasks, per mode: how each kind of task fares.
    let tags: std::collections::BTreeSet<&String> =
        modes.iter().flat_map(|m| m.tags.keys()).collect();
    for tag in tags {
        let cells = modes
            .iter()
            .map(|m| {
                let c = m.tags.get(tag).copied().unwrap_or_default();
                format!("{}/{}", c.successes, c.tasks)
            })
            .collect();
        labelled.push((format!("tasks ok: {tag}"), cells));
    }
    let chars = |s: &str| s.chars().count();
    let label_width = labelled.iter().map(|(l, _)| chars(l)).max().unwrap_or(0);
    let widths: Vec<usize> = (0..modes.len())
        .map(|i| {
            labelled
                .iter()
                .map(|(_, r)| chars(&r[i]))
                .chain([chars(&modes[i].mode)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!("{:label_width$}", "");
    for (m, w) in modes.iter().zip(&widths) {
        out.push_str(&format!("  {:>w$}", m.mode));
    }
    out.push('\n');
    for (label, row) in &labelled {
        out.push_str(&format!("{label:label_width$}"));
        for (cell, w) in row.iter().zip(&widths) {
            out.push_str(&format!("  {cell:>w$}"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 50), 10);
        assert_eq!(percentile(&v, 95), 19);
        assert_eq!(percentile(&[7], 95), 7);
        assert_eq!(percentile(&[], 50), 0);
    }

    #[test]
    fn rates_count_tasks_and_hunks() {
        let r = |success, hunks, accepted, calls, cost| TaskResult {
            success,
            hunks,
            accepted,
            tool_calls: calls,
            cost,
            latency_ms: 100,
            ..TaskResult::default()
        };
        let mut conflicted = r(true, 2, 1, 1, 0.0);
        conflicted.conflict = true;
        conflicted.fallback_reason = Some("timeout".into());
        let m = summarize(
            "x",
            &[r(true, 1, 1, 3, 0.01), r(false, 1, 0, 5, 0.02), conflicted],
            1,
        );
        assert_eq!(m.tasks, 3);
        assert_eq!(m.success_rate, 0.6667);
        assert_eq!(m.accepted_hunk_ratio, 0.5);
        assert_eq!(m.conflict_rate, 0.3333);
        assert_eq!(m.tool_calls_per_success, 2.0);
        assert_eq!(m.cost_per_task, 0.01);
        assert_eq!(m.fallback_reasons.get("timeout"), Some(&1));
        assert!(table(&[m]).contains("success rate"));
    }

    #[test]
    fn refusals_count_only_when_expected_and_held() {
        let r = |must_refuse, refused, success, tag: &str| TaskResult {
            must_refuse,
            refused,
            success,
            tags: vec![tag.to_owned()],
            ..TaskResult::default()
        };
        let m = summarize(
            "x",
            &[
                r(true, true, true, "must_refuse"),
                // Refused, but another check failed: not a refusal as expected.
                r(true, true, false, "must_refuse"),
                // Landed where a refusal was expected.
                r(true, false, false, "must_refuse"),
                // A refusal nobody asked for is no refusal as expected.
                r(false, true, false, "recoverable"),
            ],
            0,
        );
        assert_eq!((m.refusal_tasks, m.refused_as_expected), (3, 1));
        assert_eq!(m.refusal_rate, 0.3333);
        assert_eq!(
            m.tags["must_refuse"],
            TagCount {
                tasks: 3,
                successes: 1
            }
        );
        assert!(table(&[m]).contains("tasks ok: recoverable"));
    }
}
