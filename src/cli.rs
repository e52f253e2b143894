//! One-shot commands for shells, Kakoune and Helix (`bb7 ask`, `bb7 add`, …). Each
//! runs the stdio server in-process on in-memory pipes and speaks the protocol to it,
//! so the command line does exactly what an editor session does.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use crate::review::hunks::unified_diff;

/// A protocol session with an in-process server.
pub struct Client {
    input: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next: u64,
}

/// A failed command: the message for stderr.
#[derive(Debug)]
pub struct Failure(pub String);

type Res<T> = Result<T, Failure>;

impl Client {
    /// Starts a server on in-memory pipes.
    pub fn start() -> Client {
        let (client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        tokio::spawn(crate::server::serve(server_in, server_out));
        Client {
            input: client_in,
            lines: BufReader::new(client_out).lines(),
            next: 0,
        }
    }

    /// Sends `req`; calls `each` for stream messages; returns the final reply.
    pub async fn stream(&mut self, mut req: Value, mut each: impl FnMut(&Value)) -> Res<Value> {
        self.next += 1;
        let id = format!("cli{}", self.next);
        req["request_id"] = json!(id);
        let line = format!("{req}\n");
        self.input
            .write_all(line.as_bytes())
            .await
            .map_err(|e| Failure(format!("bb7 stopped: {e}")))?;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(|e| Failure(format!("bb7 stopped: {e}")))?
                .ok_or_else(|| Failure("bb7 stopped".into()))?;
            let msg: Value =
                serde_json::from_str(&line).map_err(|e| Failure(format!("bad reply: {e}")))?;
            if msg["request_id"] != id.as_str() {
                continue;
            }
            match msg["type"].as_str() {
                Some("chunk" | "thinking") => each(&msg),
                _ => return Ok(msg),
            }
        }
    }

    /// Sends `req` and returns its reply; an `error` reply is a [`Failure`].
    pub async fn call(&mut self, req: Value) -> Res<Value> {
        let r = self.stream(req, |_| {}).await?;
        if r["type"] == "error" {
            return Err(Failure(r["message"].as_str().unwrap_or("error").to_owned()));
        }
        Ok(r)
    }
}

/// The subcommands of `bb7` (`bb7 --help` shows these doc comments).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Serve the line-delimited JSON protocol on stdin/stdout (the default).
    Serve,
    /// Create .bb7/ in the project root.
    Init,
    /// Start a chat and make it active; prints its id.
    New {
        /// Chat name.
        name: Option<String>,
    },
    /// List the project's chats (* marks the active one).
    Chats,
    /// Add files (or path:start:end sections) to the active chat's context.
    Add {
        /// Files, or path:start:end for a section.
        #[arg(required = true)]
        paths: Vec<String>,
        /// The model may read but not change them.
        #[arg(long)]
        readonly: bool,
    },
    /// Remove a file from the active chat's context.
    Remove {
        /// File.
        path: String,
    },
    /// Ask the model; the answer streams to stdout, changed files are listed on stderr.
    Ask {
        /// The message; read from stdin when absent.
        message: Vec<String>,
        /// Model to use (kept for later turns).
        #[arg(long)]
        model: Option<String>,
        /// Show the model's reasoning on stderr.
        #[arg(long)]
        thinking: bool,
    },
    /// Show the statuses of context and output files (M, A, !A, S, R).
    Status,
    /// Show the model's pending changes as unified diffs.
    Diff {
        /// Only this file.
        path: Option<String>,
    },
    /// Write the model's pending changes to your files (all M and A files, or one).
    Apply {
        /// Only this file.
        path: Option<String>,
    },
    /// Discard the model's pending changes to a file.
    Reject {
        /// File.
        path: String,
    },
}

/// Options shared by every command.
#[derive(Debug, Clone)]
pub struct Options {
    /// Project root (default: the current directory).
    pub root: PathBuf,
    /// Chat to select first.
    pub chat: Option<String>,
}

/// Runs one command; writes results to stdout and notes to stderr.
pub async fn run(cmd: Command, opts: Options) -> Res<()> {
    let mut c = Client::start();
    let root = opts.root.to_string_lossy().into_owned();
    if let Command::Init = cmd {
        c.call(json!({"action": "bb7_init", "project_root": root}))
            .await?;
        eprintln!("bb7: initialized in {root}");
        return Ok(());
    }
    // A root without .bb7/ is refused by `init`; only `chats` can fall back to the
    // global chats of global-only mode.
    match c
        .call(json!({"action": "init", "project_root": root}))
        .await
    {
        Ok(_) => {}
        Err(Failure(m)) if m.starts_with("Not initialized") => {
            if !matches!(cmd, Command::Chats) {
                return Err(Failure(
                    "not initialized: run `bb7 init` in the project root".into(),
                ));
            }
            c.call(json!({"action": "init", "project_root": ""}))
                .await?;
        }
        Err(e) => return Err(e),
    }
    if let Some(id) = &opts.chat {
        c.call(json!({"action": "chat_select", "id": id})).await?;
    }
    let out = &mut std::io::stdout().lock();
    let w = |out: &mut std::io::StdoutLock, s: &str| {
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    };
    match cmd {
        Command::Init | Command::Serve => {}
        Command::New { name } => {
            let r = c.call(json!({"action": "chat_new", "name": name})).await?;
            w(out, &format!("{}\n", r["id"].as_str().unwrap_or("")));
        }
        Command::Chats => {
            let r = c.call(json!({"action": "chat_list"})).await?;
            let active = c.call(json!({"action": "chat_active"})).await?;
            for ch in r["chats"].as_array().into_iter().flatten() {
                let mark = if ch["id"] == active["id"] { "*" } else { " " };
                let lock = if ch["locked"] == true {
                    "  (open elsewhere)"
                } else {
                    ""
                };
                w(
                    out,
                    &format!(
                        "{mark} {}  {}  {}{lock}\n",
                        ch["id"].as_str().unwrap_or(""),
                        ch["created"].as_str().unwrap_or(""),
                        ch["name"].as_str().unwrap_or("")
                    ),
                );
            }
        }
        Command::Add { paths, readonly } => {
            ensure_chat(&mut c).await?;
            for p in paths {
                add(&mut c, &opts.root, &p, readonly).await?;
                eprintln!("bb7: added {p}");
            }
        }
        Command::Remove { path } => {
            active(&mut c).await?;
            c.call(json!({"action": "context_remove", "path": path}))
                .await?;
            eprintln!("bb7: removed {path}");
        }
        Command::Ask {
            message,
            model,
            thinking,
        } => {
            let mut message = message.join(" ");
            if message.trim().is_empty() {
                let mut buf = String::new();
                let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf);
                message = buf;
            }
            ensure_chat(&mut c).await?;
            let mut req = json!({"action": "send", "content": message});
            if let Some(m) = model {
                req["model"] = json!(m);
            }
            let mut ended_line = true;
            let mut thinking_open = false;
            let r = c
                .stream(req, |m| {
                    let text = m["content"].as_str().unwrap_or("");
                    if m["type"] == "chunk" {
                        if thinking_open {
                            eprintln!();
                            thinking_open = false;
                        }
                        w(out, text);
                        ended_line = text.ends_with('\n');
                    } else if thinking {
                        eprint!("{text}");
                        thinking_open = !text.ends_with('\n');
                    }
                })
                .await?;
            if thinking_open {
                eprintln!();
            }
            if !ended_line {
                w(out, "\n");
            }
            match r["type"].as_str() {
                Some("done") => {
                    for ch in r["changes"].as_array().into_iter().flatten() {
                        eprintln!("bb7: {}", ch["description"].as_str().unwrap_or(""));
                    }
                    let u = &r["usage"];
                    eprintln!(
                        "bb7: {} tokens, ${:.4}",
                        u["total_tokens"].as_u64().unwrap_or(0),
                        u["cost"].as_f64().unwrap_or(0.0)
                    );
                }
                Some("diff_error") => {
                    let errors: Vec<&str> = r["errors"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    return Err(Failure(format!(
                        "the model's edits could not be applied, nothing was written:\n  {}",
                        errors.join("\n  ")
                    )));
                }
                _ => return Err(Failure(r["message"].as_str().unwrap_or("error").to_owned())),
            }
        }
        Command::Status => {
            active(&mut c).await?;
            let r = c.call(json!({"action": "get_file_statuses"})).await?;
            for f in r["files"].as_array().into_iter().flatten() {
                let range = match (f["start_line"].as_u64(), f["end_line"].as_u64()) {
                    (Some(s), Some(e)) => format!(":{s}-{e}"),
                    _ => String::new(),
                };
                let mut status = f["status"].as_str().unwrap_or("").to_owned();
                if status.is_empty() && f["readonly"] == true {
                    status = "R".into();
                }
                w(
                    out,
                    &format!("{status:<3} {}{range}\n", f["path"].as_str().unwrap_or("")),
                );
            }
        }
        Command::Diff { path } => {
            active(&mut c).await?;
            let r = c.call(json!({"action": "get_file_statuses"})).await?;
            for f in r["files"].as_array().into_iter().flatten() {
                let p = f["path"].as_str().unwrap_or("");
                if f["has_output"] != true || path.as_deref().is_some_and(|want| want != p) {
                    continue;
                }
                let old = f["context_content"].as_str().unwrap_or("");
                let new = f["output_content"].as_str().unwrap_or("");
                w(out, &unified_diff(p, old, new));
            }
        }
        Command::Apply { path } => {
            active(&mut c).await?;
            let r = c.call(json!({"action": "get_file_statuses"})).await?;
            let mut applied = 0;
            for f in r["files"].as_array().into_iter().flatten() {
                let p = f["path"].as_str().unwrap_or("").to_owned();
                let st = f["status"].as_str().unwrap_or("");
                let wanted = match &path {
                    Some(want) => want == &p && f["has_output"] == true,
                    None => st == "M" || st == "A",
                };
                if st == "!A" && path.is_none() {
                    eprintln!(
                        "bb7: skipped {p}: it exists locally (apply it by name to overwrite)"
                    );
                }
                if wanted {
                    c.call(json!({"action": "apply_file", "path": p})).await?;
                    eprintln!("bb7: applied {p}");
                    applied += 1;
                }
            }
            if applied == 0 {
                return Err(Failure("no output to apply".into()));
            }
        }
        Command::Reject { path } => {
            active(&mut c).await?;
            c.call(json!({"action": "output_delete", "path": path}))
                .await?;
            eprintln!("bb7: rejected the output of {path}");
        }
    }
    let _ = c.call(json!({"action": "shutdown"})).await;
    Ok(())
}

async fn active(c: &mut Client) -> Res<String> {
    let a = c.call(json!({"action": "chat_active"})).await?;
    a["id"].as_str().map(str::to_owned).ok_or_else(|| {
        Failure("no active chat: run `bb7 new`, or pass --chat ID (see `bb7 chats`)".into())
    })
}

/// The active chat, or a new one when none is active.
async fn ensure_chat(c: &mut Client) -> Res<String> {
    if let Ok(id) = active(c).await {
        return Ok(id);
    }
    let r = c.call(json!({"action": "chat_new"})).await?;
    let id = r["id"].as_str().unwrap_or("").to_owned();
    eprintln!("bb7: started chat {id}");
    Ok(id)
}

async fn add(c: &mut Client, root: &std::path::Path, spec: &str, readonly: bool) -> Res<()> {
    let (path, range) = match spec.rsplitn(3, ':').collect::<Vec<_>>().as_slice() {
        [e, s, p] if s.parse::<u64>().is_ok() && e.parse::<u64>().is_ok() => (
            (*p).to_owned(),
            Some((s.parse::<u64>().unwrap_or(1), e.parse::<u64>().unwrap_or(1))),
        ),
        _ => (spec.to_owned(), None),
    };
    let abs = if std::path::Path::new(&path).is_absolute() {
        PathBuf::from(&path)
    } else {
        root.join(&path)
    };
    let content =
        std::fs::read_to_string(&abs).map_err(|e| Failure(format!("cannot read {path}: {e}")))?;
    let req = match range {
        Some((s, e)) => {
            json!({"action": "context_add_section", "path": path, "content": content, "start_line": s, "end_line": e})
        }
        None => {
            json!({"action": "context_add", "path": path, "content": content, "readonly": readonly})
        }
    };
    c.call(req).await.map(|_| ())
}
