//! The `bb7` binary: it serves the stdio protocol (docs/PROTOCOL.md) when stdin is not
//! a terminal or with `bb7 serve`; subcommands run one action from a shell (see
//! `bb7 --help`). `bb7` alone on a terminal prints the help.

use std::io::IsTerminal;
use std::path::PathBuf;

use bb7::cli::Command;
use clap::{CommandFactory, Parser};

/// What `bb7 --help` ends with: the exit statuses and the environment.
const AFTER_HELP: &str = "\
Exit status:
  0    done (also when there was nothing to do: nothing to apply, no changes)
  1    failed; the message on stderr names the cause (the server's own error)
  2    the command line was wrong (unknown option, missing argument)
  3    conflict: your edits overlap the change; that file was left untouched
       (`bb7 review` takes hunks one by one, --force lets the change win)
  4    the chat is held by a process that does not answer (a bb7 holder serves
       the commands beside it): close it there; `bb7 unlock --force ID` (the
       id the message names) or the same command again with --take-over takes
       it anyway (the old holder then refuses its next save)
  5    `bb7 ask`: the server cut the answer at its token limit (finish_reason
       \"length\"); what came is saved, but it is incomplete
  130  stopped with Ctrl-C (the partial answer is kept)
  141  the output was closed (`bb7 ask … 2>&1 | head`): bb7 stopped writing

Environment:
  OPENROUTER_API_KEY  the API key (or api_key in ~/.config/bb7/config.json)
  NO_COLOR            no colour, as with --color never";

/// bb7: a focused LLM chat sidecar for editors.
#[derive(Parser)]
#[command(version, about, long_about = None, after_help = AFTER_HELP)]
struct Cli {
    /// Project root (default: the nearest directory at or above the current one that
    /// holds .bb7/).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Chat to use for this command only (an id from `bb7 chats`); the active chat
    /// stays as it is. `bb7 log --chat` without an id shows the chat's spend.
    #[arg(long, global = true, num_args = 0..=1, default_missing_value = "")]
    chat: Option<String>,
    /// Take the chat over when another bb7 process (an editor, a running `bb7 ask`)
    /// holds it, as `bb7 unlock --force ID` does: that process then refuses its next
    /// save and writes nothing more to the chat. A holder that answers is taken from
    /// too (without --take-over it would serve the command instead).
    #[arg(long, global = true)]
    take_over: bool,
    /// Colour the output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, default_value_t = bb7::cli::render::ColorChoice::Auto)]
    color: bb7::cli::render::ColorChoice,
    #[command(subcommand)]
    command: Option<Command>,
}

fn main() -> std::process::ExitCode {
    // bb7 started again as the validation command's runner (project::validate_runner).
    if let Some(code) = bb7::project::validate_runner::dispatch() {
        return code;
    }
    // An editor starts `bb7` without arguments on a pipe: serve at once, without
    // building the command line's parser (every subcommand's arguments).
    if std::env::args_os().len() == 1 && !std::io::stdin().is_terminal() {
        bb7::debug_log::init_from_env();
        return serve();
    }
    let mut cli = Cli::parse();
    // `--chat` without an id: `bb7 log --chat` asks for the active chat's spend.
    if cli.chat.as_deref() == Some("") {
        cli.chat = None;
        if let Some(Command::Log { chat, .. }) = &mut cli.command {
            *chat = true;
        }
    }
    let command = match cli.command {
        Some(c) => c,
        // On a terminal nobody types JSON: show what bb7 can do instead of waiting.
        None if std::io::stdin().is_terminal() => {
            let _ = Cli::command().print_help();
            return std::process::ExitCode::SUCCESS;
        }
        None => Command::Serve,
    };
    bb7::debug_log::init_from_env();
    bb7::cli::render::init_color(cli.color);
    if let Command::Serve = command {
        return serve();
    }
    if let Command::Acp { login } = command {
        if login {
            return match bb7::acp::login() {
                Ok(done) => {
                    eprintln!("bb7: {done}");
                    std::process::ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("bb7: {e}");
                    std::process::ExitCode::FAILURE
                }
            };
        }
        return acp();
    }
    quiet_on_closed_output();
    let Some(runtime) = runtime() else {
        return std::process::ExitCode::FAILURE;
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let opts = bb7::cli::Options {
        root: cli.root,
        cwd,
        chat: cli.chat,
        take_over: cli.take_over,
    };
    let result = runtime.block_on(bb7::cli::run(command, opts));
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("bb7: {}", f.message);
            std::process::ExitCode::from(f.status)
        }
    }
}

/// A reader that went away (`bb7 ask … 2>&1 | head`) is no failure of bb7. Rust ignores
/// SIGPIPE, so a print to the closed pipe panics ("failed printing to stderr: Broken
/// pipe"); that panic ends the command quietly with status 141, what a shell reports
/// for a process ended by SIGPIPE (128 + 13). SIGPIPE itself stays ignored: `bb7 chat`
/// also serves guests on a socket, whose writes must fail, not kill it.
fn quiet_on_closed_output() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// The async runtime; `None` (with the reason on stderr) when it cannot start.
fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            eprintln!("bb7: cannot start the async runtime: {e}");
            None
        }
    }
}

/// The stdio server (docs/PROTOCOL.md) until `shutdown`, the end of stdin or SIGTERM.
fn serve() -> std::process::ExitCode {
    let Some(runtime) = runtime() else {
        return std::process::ExitCode::FAILURE;
    };
    let result = runtime.block_on(bb7::server::serve_stdio());
    // Background work (streams) must not keep the process alive after shutdown.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(code) => std::process::ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("bb7: reading stdin failed: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `bb7 acp`: the Agent Client Protocol on stdin/stdout until the client closes stdin.
fn acp() -> std::process::ExitCode {
    let Some(runtime) = runtime() else {
        return std::process::ExitCode::FAILURE;
    };
    let result = runtime.block_on(bb7::acp::serve_stdio());
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bb7: acp: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
