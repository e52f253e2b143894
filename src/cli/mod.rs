//! One-shot commands for shells, Kakoune and Helix (`bb7 ask`, `bb7 add`, …). Each
//! runs the stdio server in-process on in-memory pipes and speaks the protocol to it
//! (docs/PROTOCOL.md), so the command line does exactly what an editor session does.

mod approval;
mod archive;
pub mod args;
mod ask;
mod attach;
mod chat;
mod chat_answers;
mod chat_peer;
mod chat_prompt;
mod chat_queue;
mod chat_suspend;
mod chat_typing;
// The in-process client and root discovery live a floor down, shared with `bb7 acp`.
use crate::front::client;
mod context;
pub mod eval;
mod export;
mod fork;
mod info;
mod invisible;
pub mod mcp;
pub mod prompt;
mod reasoning;
pub mod render;
mod review;
pub use crate::front::root;
mod session;
mod spend;
pub mod terminal;

use std::path::PathBuf;
use std::time::Duration;

use crate::error::ErrorCode;
use crate::protocol::action::Action;

use crate::protocol::params;
use crate::protocol::replies::{Ack, Opened};
pub use args::{Command, ToolsMode};
pub use client::{Client, Failure, Res, Titled, exit};
use session::{Session, active_in_index, project_store};

/// Options shared by every command.
#[derive(Debug, Clone)]
pub struct Options {
    /// Project root given with `--root`; `None` finds it from the current directory.
    pub root: Option<PathBuf>,
    /// The directory relative paths are resolved against.
    pub cwd: PathBuf,
    /// Chat to use for this command only (`--chat`).
    pub chat: Option<String>,
    /// Take the chat over from a process that holds it (`--take-over`).
    pub take_over: bool,
}

/// Runs one command; writes results to stdout and notes to stderr.
pub async fn run(cmd: Command, opts: Options) -> Res<()> {
    // The eval runs its own bb7 processes in scratch projects; it needs no project.
    if let Command::Eval(args) = cmd {
        return eval::eval(args).await;
    }
    let root = match &opts.root {
        Some(r) => r.clone(),
        None if matches!(cmd, Command::Init) => opts.cwd.clone(),
        None => root::discover(&opts.cwd),
    };
    let fresh = || Session {
        c: Client::start(),
        root: root.clone(),
        cwd: opts.cwd.clone(),
        guest: false,
        reads_only: reads_only(&cmd),
        in_chat: false,
        typed_ahead: Vec::new(),
        typed_draft: String::new(),
        holder_pid: None,
        show_thinking: false,
    };
    let mut s = fresh();
    let restore = match &opts.chat {
        Some(_) => Some(active_in_index(&s.root)),
        None => None,
    };
    let mut result = dispatch(&mut s, cmd.clone(), &opts).await;
    // A command that only reads, failed as the guest of a holder: the holder may have
    // quit under it (a `bb7 ask` that printed its answer and is ending). Nothing it
    // sent changed the chat, so it runs once more on its own, which reads the chat
    // from disk or joins the process that holds it now.
    if result.is_err() && s.reads_only && s.guest {
        s = fresh();
        result = dispatch(&mut s, cmd, &opts).await;
    }
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

/// Whether `cmd` only reads the chat (`status`, `diff`, `show`, `log`, `checkpoints`,
/// a review listing): such a command reads a held chat whose holder does not answer
/// as it is on disk, without its lock.
fn reads_only(cmd: &Command) -> bool {
    match cmd {
        Command::Status
        | Command::Diff { .. }
        | Command::Show { .. }
        | Command::Log { .. }
        | Command::Export { .. }
        | Command::Checkpoints => true,
        Command::Review {
            accept,
            reject,
            all,
            take,
            ..
        } => accept.is_empty() && reject.is_empty() && take.is_empty() && !all,
        _ => false,
    }
}

/// `bb7 unlock [ID]` and `--take-over`: takes chat `id` (default: the project's active
/// chat) from the process holding it, then makes it active here. Returns the id.
/// Without `force` a holder that still runs keeps the chat: the failure names its PID
/// (exit status 4), since what it has not saved yet would not be saved (it refuses its
/// next save once the chat is taken, docs/ARCHITECTURE.md, invariant 7).
async fn unlock(s: &mut Session, id: Option<String>, force: bool) -> Res<String> {
    let Some(id) = id.or_else(|| active_in_index(&s.root)) else {
        return Err(Failure::new(
            "no active chat to unlock: name one (`bb7 unlock ID`, ids in `bb7 chats`)",
        ));
    };
    let pid = project_store(&s.root)
        .and_then(|st| st.chat_dir(&id).ok())
        .and_then(|dir| crate::project::lock::holder(&dir));
    if let Some(pid) = pid
        && !force
    {
        return Err(Failure::server(
            Some(ErrorCode::Locked),
            format!(
                "chat {id} is held by a running process (PID {pid}: an editor or a running \
                 `bb7`); close the chat there first. `bb7 unlock --force {id}` takes it anyway: \
                 that process then refuses its next save and writes nothing more to the \
                 chat, so what it had not saved stays unsaved"
            ),
        ));
    }
    s.c.call::<Ack>(Action::ChatForceUnlock(params::ForceUnlock {
        id: params::NonEmpty(id.clone()),
        scope: params::Scope::default(),
        // The holder was weighed above: a live one is taken only on --force.
        force: None,
        careful: Some(!force),
    }))
    .await?;
    s.select(&id).await?;
    match pid {
        Some(pid) => eprintln!("bb7: took chat {id} over from PID {pid}"),
        None => eprintln!("bb7: chat {id} is not held elsewhere; it is active here"),
    }
    Ok(id)
}

async fn dispatch(s: &mut Session, cmd: Command, opts: &Options) -> Res<()> {
    let root = s.root.to_string_lossy().into_owned();
    if let Command::Init = cmd {
        let made =
            s.c.call::<Ack>(Action::Bb7Init(params::Init {
                project_root: Some(root.clone()),
            }))
            .await;
        match made {
            Ok(_) => {}
            // Already done is not a failure (nor a "conflict", status 3).
            Err(f)
                if f.is(ErrorCode::Conflict)
                    && crate::project::Project::is_initialized(&s.root) =>
            {
                eprintln!("bb7: already initialized in {root}");
                return Ok(());
            }
            Err(f) => return Err(f),
        }
        info::offer_gitignore(&s.root).await?;
        // Last, so an editor showing the final line of output shows this one.
        eprintln!("bb7: initialized in {root}");
        return Ok(());
    }
    // `init` refuses a directory without `.bb7/`; only `chats` and `models` fall back
    // to global-only mode (an empty root), as the reference plugin does.
    let global_ok = matches!(
        cmd,
        Command::Chats
            | Command::Archive { .. }
            | Command::Unarchive { .. }
            | Command::Models { .. }
            | Command::Mcp { .. }
    );
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
    for w in init.config_warnings.iter() {
        eprintln!("bb7: warning: {w}");
    }
    if let Some(e) = &init.config_error {
        if matches!(
            cmd,
            Command::Ask { .. } | Command::Chat { .. } | Command::Models { .. }
        ) {
            return Err(Failure::new(e.clone()));
        }
        eprintln!("bb7: warning: {e}");
    }
    if let Command::Unlock { id, force } = &cmd {
        let id = id.clone().or_else(|| opts.chat.clone());
        return unlock(s, id, *force).await.map(|_| ());
    }
    if opts.take_over
        && let Some(id) = opts.chat.clone().or_else(|| active_in_index(&s.root))
    {
        unlock(s, Some(id), true).await?;
    }
    if let Some(id) = &opts.chat {
        s.select(id).await?;
    }
    match cmd {
        Command::Unlock { .. } => Ok(()),
        Command::Init | Command::Serve => Ok(()),
        Command::New { name } => info::new_chat(s, name).await,
        Command::Chats => info::chats(s).await,
        Command::Archive { which } => archive::set(s, which.as_deref(), true).await,
        Command::Unarchive { which } => archive::set(s, Some(&which), false).await,
        Command::Use { which } => {
            let id = info::resolve_chat(s, &which).await?;
            s.select(&id).await?;
            // Through a holder the selection is that process's; the index says it too.
            if let Some(store) = project_store(&s.root) {
                let _ = store.set_active(Some(&id));
            }
            eprintln!("bb7: chat {id} is active");
            Ok(())
        }
        Command::Add {
            paths,
            readonly,
            run,
            git_diff,
            diagnostics,
        } => {
            if let Some(cmd) = run {
                attach::add_run(s, &cmd, false).await?;
            }
            if let Some(rev) = git_diff {
                attach::add_git_diff(s, Some(rev.as_str()).filter(|r| !r.is_empty())).await?;
            }
            if let Some(file) = diagnostics {
                attach::add_diagnostics(s, &file).await?;
            }
            let (resources, paths): (Vec<String>, Vec<String>) =
                paths.into_iter().partition(|p| p.starts_with(mcp::PREFIX));
            for r in &resources {
                mcp::add(s, r).await?;
            }
            if paths.is_empty() {
                return Ok(());
            }
            // A directory adds its text files, as `/add` does in `bb7 chat`.
            let paths = context::expand(s, &paths)?;
            context::add(s, &paths, readonly).await
        }
        Command::Remove { path } => context::remove(s, &path).await,
        Command::Ask {
            message,
            model,
            thinking,
            tools,
            refresh,
            mode,
        } => {
            if let Some(m) = &model {
                info::warn_unknown_model(s, m).await;
            }
            let opts = ask::AskOptions {
                model,
                thinking,
                tools,
                refresh,
                in_chat: false,
                mode,
            };
            ask::ask(s, message, opts).await
        }
        Command::Chat { model, thinking } => {
            s.show_thinking = thinking;
            chat::chat(s, model).await
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
            take,
        } => {
            let d = review::Decisions {
                accept,
                reject,
                all,
                take,
                confirm_take: false,
            };
            review::review(s, path, d).await
        }
        Command::Checkpoints => review::checkpoints(s).await,
        Command::Rollback {
            id,
            last,
            scoped,
            force,
        } => match (id, last) {
            (Some(id), false) => review::rollback(s, id, scoped, force).await,
            _ => review::undo(s, force).await,
        },
        Command::Models {
            refresh,
            reset_tools,
        } => info::models(s, refresh, reset_tools).await,
        Command::Show { last } => info::show(s, last).await,
        Command::Export {
            format,
            redact,
            no_redact,
            which,
        } => {
            let redact = (redact || no_redact).then_some(redact);
            export::export(s, format, redact, which).await
        }
        Command::Import { file } => export::import(s, file).await,
        Command::Log { today: true, .. } => spend::today(s).await,
        Command::Log { chat: true, .. } => spend::chat(s).await,
        Command::Log { .. } => info::log(s).await,
        Command::Mcp { cmd } => mcp::run(s, cmd).await,
        Command::Eval(_) => Ok(()),
        // `bb7 acp` is served by `main` (`acp::serve_stdio`), never as a command here.
        Command::Acp { .. } => Err(Failure::new(
            "bb7 acp serves ACP on stdin/stdout: run it as an agent",
        )),
    }
}
