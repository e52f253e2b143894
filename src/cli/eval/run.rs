//! Running one eval task: a scratch home and project, a `bb7 serve` child whose config
//! points at the eval's endpoints, the task's prompt sent over the protocol like an
//! editor would, the review done as the task says, and the checks.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::observe::{Observed, Overhead};
use super::serve::EvalEndpoint;
use super::task::{Decision, Exchange, Review, Task, Trace};
use crate::chat::events::{Event, EventKind};
use crate::protocol::action::Action;
use crate::protocol::events::TurnMessage;
use crate::protocol::params::{self, HunkSelection, NonEmpty};

/// How long one task may take before it counts as failed.
const TASK_TIMEOUT: Duration = Duration::from_secs(300);

/// What one task did in one mode.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskResult {
    /// The task's id.
    pub task: String,
    /// The mode it ran in.
    pub mode: String,
    /// The task's main language.
    pub language: String,
    /// The task's tags.
    pub tags: Vec<String>,
    /// How the turn ended: `done`, `diff_error`, `error`, or `failed` (bb7 itself).
    pub outcome: String,
    /// Every check held.
    pub success: bool,
    /// The checks that did not hold, in words.
    pub failures: Vec<String>,
    /// Hunks the answer proposed.
    pub hunks: usize,
    /// Hunks the review wrote to the files.
    pub accepted: usize,
    /// The review met the user's edits.
    pub conflict: bool,
    /// The model asked a clarifying question.
    pub clarification: bool,
    /// The task expects bb7 to refuse the answer's edits (`expect.refusal`).
    pub must_refuse: bool,
    /// bb7 refused the answer's edits: the turn ended with `diff_error` and every file
    /// of the task is byte for byte as it was.
    pub refused: bool,
    /// The model's calls bb7 handled: the tool results it returned in its requests
    /// (retrieval steps, clarifying questions, the failed edits of a local retry) and
    /// the edit calls or SEARCH/REPLACE blocks of the answer that stood, as bb7 planned
    /// them. Counted from what bb7 sent and recorded, never from the trace's answers.
    pub tool_calls: usize,
    /// Milliseconds of the turn: recorded model time on replay, wall time live.
    pub latency_ms: u64,
    /// Milliseconds bb7 itself took: from the `send` to the end of the review and
    /// apply, less the time the model endpoints took to answer (on replay they answer
    /// at once, so this is bb7's own overhead beside the recorded `latency_ms`).
    pub overhead_ms: u64,
    /// Three parts of `overhead_ms`: before the first request, after the last answer,
    /// and the review's apply.
    pub overhead: Overhead,
    /// USD of the turn (dropped attempts included).
    pub cost: f64,
    /// The provider that answered.
    pub provider: Option<String>,
    /// Why a hybrid turn fell back.
    pub fallback_reason: Option<String>,
}

/// The endpoints and settings every task of a mode runs with.
pub struct Runner {
    /// `local`, `remote` or `hybrid_auto`.
    pub mode: String,
    /// The `local` endpoint.
    pub local: EvalEndpoint,
    /// The `remote` endpoint.
    pub remote: EvalEndpoint,
    /// Config keys of every task (the endpoints, models, the user's settings).
    pub config: serde_json::Map<String, Value>,
    /// Latency is the trace's (replay) rather than the wall clock's.
    pub replay: bool,
    /// The bb7 binary to run.
    pub exe: PathBuf,
}

/// The envelope of a request line.
#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    req: &'a Action,
    request_id: &'a str,
}

/// The fields the eval reads of a reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ReplyView {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    code: Option<String>,
    message: Option<String>,
    files: Vec<ReviewFileView>,
    applied: Vec<String>,
    conflicts: Vec<String>,
    events: Vec<Event>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ReviewFileView {
    path: String,
    disk_hash: Option<String>,
    hunks: Vec<HunkView>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HunkView {
    hunk_id: String,
}

/// A protocol connection to a `bb7 serve` child.
struct Conn {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next: u64,
}

impl Conn {
    fn start(exe: &Path, home: &Path, project: &Path) -> Result<Conn, String> {
        let mut child = tokio::process::Command::new(exe)
            .arg("serve")
            .current_dir(project)
            .env_clear()
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("bb7 started without pipes".into());
        };
        Ok(Conn {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next: 0,
        })
    }

    async fn send(&mut self, req: &Action) -> Result<String, String> {
        self.next += 1;
        let id = format!("eval{}", self.next);
        let mut line = serde_json::to_string(&Line {
            req,
            request_id: &id,
        })
        .map_err(|e| e.to_string())?;
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("bb7 stopped: {e}"))?;
        Ok(id)
    }

    async fn next_for(&mut self, id: &str) -> Result<Value, String> {
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(|e| format!("bb7 stopped: {e}"))?
                .ok_or("bb7 stopped")?;
            let msg: Value = serde_json::from_str(&line).map_err(|e| format!("bad line: {e}"))?;
            if msg.get("request_id").and_then(Value::as_str) == Some(id) {
                return Ok(msg);
            }
        }
    }

    /// Sends `req` and returns its reply; an `error` reply is an `Err` with its code.
    async fn call(&mut self, req: Action) -> Result<ReplyView, String> {
        let id = self.send(&req).await?;
        let reply: ReplyView = serde_json::from_value(self.next_for(&id).await?)
            .map_err(|e| format!("bad reply: {e}"))?;
        if reply.kind == "error" {
            return Err(format!(
                "{}: {}",
                reply.code.as_deref().unwrap_or("error"),
                reply.message.as_deref().unwrap_or("")
            ));
        }
        Ok(reply)
    }

    async fn stop(mut self) {
        let _ = self.send(&Action::Shutdown(params::NoParams {})).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

impl Runner {
    /// The model the replay config gives provider `p` (`local`, `remote`).
    fn model_of(&self, p: &str) -> Option<String> {
        self.config
            .get("providers")
            .and_then(|ps| ps.get(p))
            .and_then(|e| e.get("model"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// A failed result when `trace` does not bind this run (another mode, an exchange
    /// of another model or of none): its answers are not this configuration's, so
    /// nothing is replayed.
    fn refuse(&self, task: &Task, trace: &Trace) -> Option<(TaskResult, Trace)> {
        if !self.replay {
            return None;
        }
        let failures =
            super::verify::check_binding(&trace.mode, &self.mode, &trace.exchanges, |p| {
                self.model_of(p)
            });
        if failures.is_empty() {
            return None;
        }
        let result = TaskResult {
            task: task.id.clone(),
            mode: self.mode.clone(),
            language: task.language.clone(),
            tags: task.tags.clone(),
            must_refuse: task.expect.refusal,
            outcome: "failed".into(),
            failures,
            ..TaskResult::default()
        };
        let empty = Trace {
            task: task.id.clone(),
            mode: self.mode.clone(),
            source: None,
            date: None,
            server: None,
            exchanges: Vec::new(),
        };
        Some((result, empty))
    }

    /// Runs `task` replaying `trace` (or live when `None`); returns its result and the
    /// exchanges it made (the trace to record).
    pub async fn run(&self, task: &Task, trace: Option<&Trace>) -> (TaskResult, Trace) {
        if let Some(refused) = trace.and_then(|t| self.refuse(task, t)) {
            return refused;
        }
        let exchanges: Vec<Exchange> = trace.map(|t| t.exchanges.clone()).unwrap_or_default();
        self.local.load(exchanges.clone());
        self.remote.load(exchanges);
        let mut result = TaskResult {
            task: task.id.clone(),
            mode: self.mode.clone(),
            language: task.language.clone(),
            tags: task.tags.clone(),
            must_refuse: task.expect.refusal,
            ..TaskResult::default()
        };
        let started = Instant::now();
        let mut seen = Observed::new();
        let run =
            tokio::time::timeout(TASK_TIMEOUT, self.drive(task, &mut result, &mut seen)).await;
        match run {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                result.outcome = "failed".into();
                result.failures.push(e);
            }
            Err(_) => {
                result.outcome = "failed".into();
                result
                    .failures
                    .push("the task took longer than 300 s".into());
            }
        }
        // A recording keeps answers bb7 gave up on (a local timeout): wait for them.
        self.local.settle(TASK_TIMEOUT).await;
        self.remote.settle(TASK_TIMEOUT).await;
        let mut served = self.local.served();
        served.extend(self.remote.served());
        served.sort_by_key(|e| e.order);
        if !self.replay {
            mark_stalls(&mut served, self.local_timeout_ms(task));
        }
        if let (true, Some(trace)) = (self.replay, trace) {
            let unused = self.local.unused() + self.remote.unused();
            result.failures.extend(super::verify::check_requests(
                &trace.exchanges,
                &served,
                unused,
                |p| self.model_of(p),
            ));
        }
        let answering: u64 = served.iter().map(|e| e.answer_ms).sum();
        let end = seen.applied.or(seen.ended);
        let bb7_ms = end.map_or(0, |end| end.duration_since(seen.sent).as_millis() as u64);
        result.overhead_ms = bb7_ms.saturating_sub(answering);
        result.overhead = super::observe::overhead(&seen, &served);
        result.tool_calls = super::observe::tool_calls(&served, seen.planned_edits);
        result.latency_ms = if self.replay {
            served.iter().map(|e| e.latency_ms).sum()
        } else {
            started.elapsed().as_millis() as u64
        };
        result.success = result.failures.is_empty();
        let servers: Vec<String> = [&self.local, &self.remote]
            .iter()
            .filter_map(|e| e.upstream_url())
            .collect();
        let recorded = Trace {
            task: task.id.clone(),
            mode: self.mode.clone(),
            source: Some("recorded".into()),
            date: Some(crate::chat::ids::now_rfc3339()),
            server: Some(servers.join(", ")),
            exchanges: served,
        };
        (result, recorded)
    }

    /// The `hybrid_remote_on_timeout_ms` a `hybrid_auto` task runs with (0: none).
    fn local_timeout_ms(&self, task: &Task) -> u64 {
        if self.mode != "hybrid_auto" {
            return 0;
        }
        task.config
            .get("hybrid_remote_on_timeout_ms")
            .or_else(|| self.config.get("hybrid_remote_on_timeout_ms"))
            .and_then(Value::as_u64)
            .unwrap_or(crate::turn::route::DEFAULT_LOCAL_TIMEOUT_MS)
    }

    async fn drive(
        &self,
        task: &Task,
        result: &mut TaskResult,
        seen: &mut Observed,
    ) -> Result<(), String> {
        let tmp =
            tempfile::tempdir().map_err(|e| format!("cannot make a scratch directory: {e}"))?;
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        let config_dir = home.join(".config").join("bb7");
        std::fs::create_dir_all(&config_dir).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
        for (rel, content) in &task.files {
            write(&project, rel, content)?;
        }
        let mut config = self.config.clone();
        config.insert("agent_mode".into(), Value::String(self.mode.clone()));
        config.extend(task.config.clone());
        let text = serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?;
        std::fs::write(config_dir.join("config.json"), text).map_err(|e| e.to_string())?;

        let mut conn = Conn::start(&self.exe, &home, &project)?;
        let outcome = self.converse(&mut conn, task, &project, result, seen).await;
        conn.stop().await;
        outcome?;
        let ended = super::verify::Ended {
            outcome: &result.outcome,
            conflict: result.conflict,
            clarification: result.clarification,
            failed: !result.failures.is_empty(),
        };
        let verdict = super::verify::check_outcome(task, &project, ended);
        result.refused = verdict.refused;
        result.failures.extend(verdict.failures);
        Ok(())
    }

    async fn converse(
        &self,
        conn: &mut Conn,
        task: &Task,
        project: &Path,
        result: &mut TaskResult,
        seen: &mut Observed,
    ) -> Result<(), String> {
        conn.call(Action::Bb7Init(params::Init {
            project_root: Some(project.to_string_lossy().into_owned()),
        }))
        .await?;
        conn.call(Action::ChatNew(params::ChatNew::default()))
            .await?;
        if task.tools.is_some() {
            conn.call(Action::SaveChatSettings(params::SaveChatSettings {
                model: None,
                reasoning_effort: None,
                tools: task.tools.clone(),
                edit_format: None,
                agent_mode: None,
            }))
            .await?;
        }
        let context: Vec<String> = match &task.context {
            Some(list) => list.clone(),
            None => task.files.keys().cloned().collect(),
        };
        for rel in context {
            let content = task.files.get(&rel).cloned().unwrap_or_default();
            conn.call(Action::ContextAdd(params::ContextAdd {
                path: NonEmpty(rel),
                content,
                readonly: None,
            }))
            .await?;
        }
        *seen = Observed::new();
        let id = conn
            .send(&Action::Send(params::Send {
                content: task.prompt.clone(),
                chat_id: None,
                model: None,
                reasoning_effort: None,
                queue: false,
            }))
            .await?;
        loop {
            let msg = conn.next_for(&id).await?;
            let Ok(msg) = serde_json::from_value::<TurnMessage>(msg) else {
                continue;
            };
            match msg {
                TurnMessage::Clarification { question_id, .. } => {
                    result.clarification = true;
                    let answer = task
                        .clarify_answer
                        .clone()
                        .unwrap_or_else(|| "no_user_answer".into());
                    conn.call(Action::Clarify(params::Clarify {
                        question_id: NonEmpty(question_id),
                        answer,
                    }))
                    .await?;
                }
                TurnMessage::ToolApproval { approval_id, .. } => {
                    conn.call(Action::ToolApprove(params::ToolApprove {
                        approval_id: NonEmpty(approval_id),
                        approved: true,
                    }))
                    .await?;
                }
                TurnMessage::Done {
                    usage,
                    changes,
                    provider,
                    fallback_reason,
                    ..
                } => {
                    seen.ended = Some(Instant::now());
                    result.outcome = "done".into();
                    result.cost = usage.cost;
                    result.provider = provider;
                    result.fallback_reason = fallback_reason;
                    if !changes.is_empty() {
                        review(conn, task, project, result).await?;
                        seen.applied = Some(Instant::now());
                    }
                    seen.planned_edits = planned_edits(conn).await?;
                    return Ok(());
                }
                TurnMessage::DiffError { usage, .. } => {
                    seen.ended = Some(Instant::now());
                    result.outcome = "diff_error".into();
                    result.cost = usage.cost;
                    seen.planned_edits = planned_edits(conn).await?;
                    return Ok(());
                }
                TurnMessage::Error { message, .. } => {
                    seen.ended = Some(Instant::now());
                    result.outcome = "error".into();
                    result.failures.push(format!("the turn failed: {message}"));
                    seen.planned_edits = planned_edits(conn).await?;
                    return Ok(());
                }
                _ => {}
            }
        }
    }
}

/// A local answer recorded slower than the run's timeout is replayed after that long,
/// so its replay times out as the live run did.
fn mark_stalls(served: &mut [Exchange], timeout_ms: u64) {
    if timeout_ms == 0 {
        return;
    }
    for e in served
        .iter_mut()
        .filter(|e| e.provider == "local" && e.latency_ms >= timeout_ms)
    {
        e.stall_ms = e.latency_ms;
    }
}

/// Edit calls and blocks bb7 planned in the chat's turn, from its trace of the turn
/// (`edits.proposed`): what bb7 made of the answer that stood.
async fn planned_edits(conn: &mut Conn) -> Result<u64, String> {
    let page = conn
        .call(Action::EventsGet(params::EventsGet {
            chat_id: None,
            after: None,
            follow: None,
        }))
        .await?;
    Ok(page
        .events
        .iter()
        .filter(|e| e.kind == EventKind::EditsProposed)
        .filter_map(|e| e.data.count)
        .sum())
}

/// Reviews the answer as the task says, after the user's own edits.
async fn review(
    conn: &mut Conn,
    task: &Task,
    project: &Path,
    result: &mut TaskResult,
) -> Result<(), String> {
    for (rel, content) in &task.user_edits {
        write(project, rel, content)?;
    }
    let pending = conn
        .call(Action::ReviewGet(params::ReviewGet { path: None }))
        .await?;
    for file in pending.files {
        let ids: Vec<String> = file.hunks.iter().map(|h| h.hunk_id.clone()).collect();
        result.hunks += ids.len();
        let decisions: Vec<Decision> = match &task.review {
            Review::AcceptAll => vec![Decision::Accept; ids.len()],
            Review::Hunks(per_file) => per_file.get(&file.path).cloned().unwrap_or_default(),
        };
        let (mut accept, mut reject) = (Vec::new(), Vec::new());
        for (i, id) in ids.into_iter().enumerate() {
            match decisions.get(i) {
                Some(Decision::Accept) => accept.push(id),
                _ => reject.push(id),
            }
        }
        let applied = conn
            .call(Action::ReviewApply(params::ReviewApply {
                path: NonEmpty(file.path.clone()),
                accept: HunkSelection::Ids(accept),
                reject: HunkSelection::Ids(reject),
                expected_disk_hash: Some(file.disk_hash.clone()),
                reasons: None,
                take: None,
            }))
            .await;
        match applied {
            Ok(r) => {
                result.accepted += r.applied.len();
                result.conflict |= !r.conflicts.is_empty();
            }
            Err(e) if e.starts_with("conflict") => result.conflict = true,
            Err(e) => return Err(format!("review of {}: {e}", file.path)),
        }
    }
    Ok(())
}

/// Writes a task file under `root`, creating directories. Errors: a path that leaves
/// the scratch project, or the write's.
fn write(root: &Path, rel: &str, content: &str) -> Result<(), String> {
    let path = Path::new(rel);
    if path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!("task file {rel} leaves the project"));
    }
    let full = root.join(path);
    if let Some(dir) = full.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{rel}: {e}"))?;
    }
    std::fs::write(&full, content).map_err(|e| format!("{rel}: {e}"))
}
