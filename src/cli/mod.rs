//! One-shot commands for shells, Kakoune and Helix (`bb7 ask`, `bb7 add`, …). Each
//! runs the stdio server in-process on in-memory pipes and speaks the protocol to it
//! (docs/PROTOCOL.md), so the command line does exactly what an editor session does.

pub mod args;
mod ask;
mod client;
mod context;
mod info;
pub mod prompt;
mod review;
pub mod root;
pub mod terminal;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::ErrorCode;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::{Ack, ChatActive, Created, Opened};
pub use args::{Command, ToolsMode};
pub use client::{Client, Failure, Res};

use crate::chat::store::ChatStore;
use crate::project::Project;

/// Options shared by every command.
#[derive(Debug, Clone)]
pub struct Options {
    /// Project root given with `--root`; `None` finds it from the current directory.
    pub root: Option<PathBuf>,
    /// The directory relative paths are resolved against.
    pub cwd: PathBuf,
    /// Chat to use for this command only (`--chat`).
    pub chat: Option<String>,
}

/// A command's connection to the server and where it writes.
pub(crate) struct Session {
    c: Client,
    root: PathBuf,
    cwd: PathBuf,
}

impl Session {
    /// Writes `s` to stdout now (answers stream), without terminal control
    /// characters (see [`terminal`]).
    fn out(&self, s: &str) {
        let s = terminal::safe(s, terminal::Sink::Stdout);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    }

    /// A path as the user typed it, relative to the project root.
    fn path(&self, p: &str) -> String {
        root::project_path(&self.root, &self.cwd, p)
    }

    /// The active chat's id.
    async fn active(&mut self) -> Res<String> {
        let a: ChatActive = self.c.call(Action::ChatActive(params::NoParams {})).await?;
        a.id.map(String::from).ok_or_else(|| {
            Failure::new("no active chat: run `bb7 new`, or pass --chat ID (see `bb7 chats`)")
        })
    }

    /// The active chat, or a new one when none is active.
    async fn ensure_chat(&mut self) -> Res<String> {
        if let Ok(id) = self.active().await {
            return Ok(id);
        }
        let r: Created = self
            .c
            .call(Action::ChatNew(params::ChatNew::default()))
            .await?;
        let id = r.id.into_owned();
        eprintln!("bb7: started chat {id}");
        Ok(id)
    }
}

/// Runs one command; writes results to stdout and notes to stderr.
pub async fn run(cmd: Command, opts: Options) -> Res<()> {
    let root = match &opts.root {
        Some(r) => r.clone(),
        None if matches!(cmd, Command::Init) => opts.cwd.clone(),
        None => root::discover(&opts.cwd),
    };
    let mut s = Session {
        c: Client::start(),
        root,
        cwd: opts.cwd.clone(),
    };
    let restore = match &opts.chat {
        Some(_) => Some(active_in_index(&s.root)),
        None => None,
    };
    let result = dispatch(&mut s, cmd, &opts).await;
    // Ends the server in order, so the chat's lock is released and nothing is left
    // half-written; a server that does not answer in time is dropped with the runtime.
    let shutdown = s.c.call::<Ack>(Action::Shutdown(params::NoParams {}));
    let _ = tokio::time::timeout(Duration::from_secs(5), shutdown).await;
    // `--chat` addresses a chat for this command only: the project's active chat stays
    // what it was for later commands and editors.
    if let Some(previous) = restore
        && let Some(store) = project_store(&s.root)
    {
        let _ = store.set_active(previous.as_deref());
    }
    result
}

/// The project's chat store, when `root` holds `.bb7/`.
fn project_store(root: &Path) -> Option<ChatStore> {
    let root = root.canonicalize().ok()?;
    Project::is_initialized(&root).then(|| ChatStore::new(Project { root }.state_dir(), false))
}

/// The active chat recorded in the project's index.
fn active_in_index(root: &Path) -> Option<String> {
    project_store(root).and_then(|s| s.read_index().active_chat_id)
}

async fn dispatch(s: &mut Session, cmd: Command, opts: &Options) -> Res<()> {
    let root = s.root.to_string_lossy().into_owned();
    if let Command::Init = cmd {
        s.c.call::<Ack>(Action::Bb7Init(params::Init {
            project_root: Some(root.clone()),
        }))
        .await?;
        info::offer_gitignore(&s.root).await?;
        // Last, so an editor showing the final line of output shows this one.
        eprintln!("bb7: initialized in {root}");
        return Ok(());
    }
    // `init` refuses a directory without `.bb7/`; only `chats` and `models` fall back
    // to global-only mode (an empty root), as the reference plugin does.
    let global_ok = matches!(cmd, Command::Chats | Command::Models { .. });
    let init: Opened = match s
        .c
        .call(Action::Init(params::Init {
            project_root: Some(root),
        }))
        .await
    {
        Ok(reply) => reply,
        Err(f) if f.is(ErrorCode::NotInitialized) && global_ok => {
            s.c.call(Action::Init(params::Init {
                project_root: Some(String::new()),
            }))
            .await?
        }
        Err(f) if f.is(ErrorCode::NotInitialized) => {
            return Err(Failure::new(format!(
                "not initialized: no .bb7/ in {} or above; run `bb7 init` in the project root",
                opts.cwd.display()
            )));
        }
        Err(f) => return Err(f),
    };
    if init.global_only && !global_ok {
        return Err(Failure::new(format!(
            "not initialized: no .bb7/ in {} or above; run `bb7 init` in the project root",
            opts.cwd.display()
        )));
    }
    if let Some(e) = &init.config_error {
        if matches!(cmd, Command::Ask { .. } | Command::Models { .. }) {
            return Err(Failure::new(e.clone()));
        }
        eprintln!("bb7: warning: {e}");
    }
    if let Some(id) = &opts.chat {
        s.c.call::<Ack>(Action::ChatSelect(params::ChatRef {
            id: params::NonEmpty(id.clone()),
            scope: params::Scope::default(),
        }))
        .await?;
    }
    match cmd {
        Command::Init | Command::Serve => Ok(()),
        Command::New { name } => info::new_chat(s, name).await,
        Command::Chats => info::chats(s).await,
        Command::Add { paths, readonly } => context::add(s, &paths, readonly).await,
        Command::Remove { path } => context::remove(s, &path).await,
        Command::Ask {
            message,
            model,
            thinking,
            tools,
            refresh,
        } => {
            let opts = ask::AskOptions {
                model,
                thinking,
                tools,
                refresh,
            };
            ask::ask(s, message, opts).await
        }
        Command::Status => context::status(s).await,
        Command::Diff { path } => context::diff(s, path).await,
        Command::Apply { path, force } => context::apply(s, path, force).await,
        Command::Reject { path } => context::reject(s, &path).await,
        Command::Review {
            path,
            accept,
            reject,
            all,
        } => review::review(s, path, accept, reject, all).await,
        Command::Checkpoints => review::checkpoints(s).await,
        Command::Rollback { id, scoped, force } => review::rollback(s, id, scoped, force).await,
        Command::Models { refresh } => info::models(s, refresh).await,
        Command::Show { last } => info::show(s, last).await,
        Command::Log => info::log(s).await,
    }
}
