//! `bb7 eval`: runs a task set against each routing mode (`local`, `remote`,
//! `hybrid_auto`) and prints the metrics side by side, a table on a terminal or JSON
//! with `--json`. `--replay DIR` answers every model request from recorded traces on a
//! local endpoint (offline, CI); `--record DIR` runs live through a forwarding
//! endpoint and stores each task's exchanges as a trace; without either it runs live.

mod budget;
mod metrics;
mod observe;
mod run;
mod serve;
mod task;
mod verify;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::{Config, GlobalState};
use crate::front::client::{Failure, Res};
use crate::llm::providers::{Endpoint, Providers};
use crate::project::UserDirs;
use metrics::ModeMetrics;
use run::{Runner, TaskResult};
use serve::{EvalEndpoint, Upstream};

/// The modes in the order they are printed.
pub const MODES: [&str; 3] = ["local", "remote", "hybrid_auto"];

/// The arguments of `bb7 eval`.
#[derive(Debug, Clone, clap::Args)]
pub struct EvalArgs {
    /// Directory of task files.
    #[arg(long, default_value = "eval/tasks")]
    pub tasks: PathBuf,
    /// Modes to run (repeat for several; default all three).
    #[arg(long, value_parser = MODES)]
    pub mode: Vec<String>,
    /// Only these task ids (repeat for several).
    #[arg(long = "task", value_name = "ID")]
    pub only: Vec<String>,
    /// Answer from the traces in DIR (DIR/<mode>/<task>.json) instead of a model.
    #[arg(long, value_name = "DIR", conflicts_with = "record")]
    pub replay: Option<PathBuf>,
    /// Run live and store every task's model exchanges as traces in DIR.
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// On replay: the model the local provider is configured with; a trace whose
    /// local answers name another is refused.
    #[arg(long, value_name = "MODEL", default_value = "local-model")]
    pub local_model: String,
    /// On replay: the model the remote provider is configured with (likewise).
    #[arg(long, value_name = "MODEL", default_value = "remote-model")]
    pub remote_model: String,
    /// Print the metrics and every task's result as JSON.
    #[arg(long)]
    pub json: bool,
    /// USD a live run may cost: a run expected to cost more (an estimate per task and
    /// mode) is refused before anything is sent; the config's max_cost_per_day (what
    /// is left of it today) limits it too.
    #[arg(long, value_name = "USD")]
    pub budget: Option<f64>,
}

/// What `--json` prints.
#[derive(Serialize)]
struct Report<'a> {
    modes: &'a [ModeMetrics],
    tasks: &'a [TaskResult],
}

/// Runs the eval. Errors: no tasks, a broken task or trace file, a mode whose provider
/// is not configured (live), or no local port; and, after the report is printed, any
/// task that failed (exit status 1), so that CI need not read the report.
pub async fn eval(args: EvalArgs) -> Res<()> {
    let mut tasks = task::load_tasks(&args.tasks).map_err(Failure::new)?;
    if !args.only.is_empty() {
        tasks.retain(|t| args.only.contains(&t.id));
    }
    if tasks.is_empty() {
        return Err(Failure::new(format!(
            "no tasks in {}",
            args.tasks.display()
        )));
    }
    let modes: Vec<String> = if args.mode.is_empty() {
        MODES.iter().map(|m| m.to_string()).collect()
    } else {
        args.mode.clone()
    };
    let exe = std::env::current_exe()
        .map_err(|e| Failure::new(format!("cannot find the bb7 binary: {e}")))?;
    let (local, remote, config) = match &args.replay {
        Some(_) => replay_endpoints(&args.local_model, &args.remote_model).await?,
        None => {
            let endpoints = live_endpoints(&modes).await?;
            check_budget(&args, &tasks, &modes, &endpoints.2)?;
            endpoints
        }
    };
    let mut all_metrics = Vec::new();
    let mut all_results = Vec::new();
    for mode in &modes {
        let runner = Runner {
            mode: mode.clone(),
            local: local.clone(),
            remote: remote.clone(),
            config: config.clone(),
            replay: args.replay.is_some(),
            exe: exe.clone(),
        };
        let mut results = Vec::new();
        let mut missing = 0;
        for t in &tasks {
            let trace = match &args.replay {
                Some(dir) => match task::load_trace(dir, mode, &t.id).map_err(Failure::new)? {
                    Some(trace) => Some(trace),
                    None => {
                        missing += 1;
                        continue;
                    }
                },
                None => None,
            };
            let (result, recorded) = runner.run(t, trace.as_ref()).await;
            if !args.json {
                let mark = if result.success { "ok  " } else { "FAIL" };
                eprintln!("bb7 eval: {mark} {mode:<11} {}{}", t.id, failures(&result));
            }
            if let Some(dir) = &args.record {
                save_trace(dir, &recorded)?;
            }
            results.push(result);
        }
        all_metrics.push(metrics::summarize(mode, &results, missing));
        all_results.extend(results);
    }
    if args.json {
        let report = Report {
            modes: &all_metrics,
            tasks: &all_results,
        };
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::new(format!("cannot encode the report: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", metrics::table(&all_metrics));
    }
    let failed = all_results.iter().filter(|r| !r.success).count();
    if failed > 0 {
        return Err(Failure::new(format!(
            "{failed} of {} tasks failed",
            all_results.len()
        )));
    }
    Ok(())
}

/// Refuses a live run its budget cannot cover (`eval/budget.rs`); `config` is the run's,
/// naming the remote model as `default_model`.
fn check_budget(
    args: &EvalArgs,
    tasks: &[task::Task],
    modes: &[String],
    config: &serde_json::Map<String, Value>,
) -> Res<()> {
    let dirs = UserDirs::from_env().map_err(|e| Failure::new(e.message))?;
    let cfg = Config::load(&dirs.config).map_err(|e| Failure::new(e.message))?;
    let today = chrono::Local::now().date_naive();
    let limits = budget::Limits {
        flag: args.budget,
        day: cfg
            .max_cost_per_day
            .map(|l| (l, crate::project::usage_log::spent_on(&dirs.state, today))),
    };
    let model = config
        .get("default_model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    budget::check(tasks, modes, model, &dirs.state, &limits)
}

fn failures(r: &TaskResult) -> String {
    if r.failures.is_empty() {
        if r.must_refuse && r.refused {
            return " (refused as expected)".into();
        }
        String::new()
    } else {
        format!(": {}", r.failures.join("; "))
    }
}

type Endpoints = (EvalEndpoint, EvalEndpoint, serde_json::Map<String, Value>);

/// Replay endpoints and the config that names them and their models (no key
/// anywhere).
async fn replay_endpoints(local_model: &str, remote_model: &str) -> Res<Endpoints> {
    let local = EvalEndpoint::start("local", None)
        .await
        .map_err(Failure::new)?;
    let remote = EvalEndpoint::start("remote", None)
        .await
        .map_err(Failure::new)?;
    let config = json!({
        "providers": {
            "local": {"base_url": local.url, "model": local_model},
            "remote": {"base_url": remote.url, "model": remote_model}
        },
        "default_model": remote_model,
        "retry_backoff_ms": 10
    });
    Ok((local, remote, object(config)))
}

/// Forwarding endpoints for the user's providers, and a config of the user's own
/// settings that names them instead of the real servers (and holds no key).
async fn live_endpoints(modes: &[String]) -> Res<Endpoints> {
    let dirs = UserDirs::from_env().map_err(|e| Failure::new(e.message))?;
    let cfg = Config::load(&dirs.config).map_err(|e| Failure::new(e.message))?;
    let providers = Providers::from_config(&cfg);
    let needs_local = modes.iter().any(|m| m != "remote");
    if needs_local && providers.local.is_none() {
        return Err(Failure::new(
            "modes local and hybrid_auto need providers.local.base_url in ~/.config/bb7/config.json (or pass --mode remote)",
        ));
    }
    // The forwarding endpoints send the real keys: the same refusal as bb7's own.
    for e in std::iter::once(&providers.remote).chain(providers.local.as_ref()) {
        if let Some(risk) = crate::llm::url::cleartext_risk(&e.base_url, e.has_api_key())
            && !cfg.allow_insecure_http
        {
            return Err(Failure::new(format!(
                "refusing to record: {risk}; use https, or set allow_insecure_http"
            )));
        }
    }
    let upstream = |e: &Endpoint| Upstream {
        base_url: e.base_url.clone(),
        api_key: e.api_key().map(str::to_owned),
        headers: e.headers().to_vec(),
        anthropic: e.api == crate::config::ProviderApi::Anthropic,
    };
    let remote = EvalEndpoint::start("remote", Some(upstream(&providers.remote)))
        .await
        .map_err(Failure::new)?;
    let local = EvalEndpoint::start("local", providers.local.as_ref().map(upstream))
        .await
        .map_err(Failure::new)?;
    // The user's settings (diff_mode, hybrid_* …) without keys or endpoints.
    let raw: Value = std::fs::read(dirs.config.join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({}));
    let mut config = object(raw);
    for key in ["api_key", "base_url", "providers", "agent_mode"] {
        config.remove(key);
    }
    let mut local_entry = json!({"base_url": local.url});
    let remote_entry = json!({"base_url": remote.url, "api": providers.remote.api});
    if let Some(l) = &providers.local {
        local_entry["api"] = json!(l.api);
        if let Some(m) = &l.model {
            local_entry["model"] = json!(m);
        }
        if let Some(w) = l.context_window {
            local_entry["context_window"] = json!(w);
        }
    }
    let state = GlobalState::load(&dirs.state);
    config.insert(
        "providers".into(),
        json!({"local": local_entry, "remote": remote_entry}),
    );
    config.insert(
        "default_model".into(),
        json!(crate::config::model_for_new_chat(&cfg, &state)),
    );
    Ok((local, remote, config))
}

fn object(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// Writes `DIR/<mode>/<task>.json`.
fn save_trace(dir: &Path, trace: &task::Trace) -> Res<()> {
    let mode_dir = dir.join(&trace.mode);
    std::fs::create_dir_all(&mode_dir)
        .map_err(|e| Failure::new(format!("{}: {e}", mode_dir.display())))?;
    let path = mode_dir.join(format!("{}.json", trace.task));
    let text = serde_json::to_string_pretty(trace)
        .map_err(|e| Failure::new(format!("cannot encode a trace: {e}")))?;
    std::fs::write(&path, text + "\n").map_err(|e| Failure::new(format!("{}: {e}", path.display())))
}
