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
  4    the chat is held by another bb7 process (an editor, a running `bb7 ask`):
       close it there; `bb7 unlock --force` or --take-over takes it anyway, and
       then both processes may save the chat and lose each other's messages
  130  stopped with Ctrl-C (the partial answer is kept)

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
    /// stays as it is.
    #[arg(long, global = true)]
    chat: Option<String>,
    /// Take the chat over when another bb7 process (an editor, a running `bb7 ask`)
    /// holds it, as `bb7 unlock --force` does: if that process goes on, both save the
    /// chat and each save overwrites the other's messages.
    #[arg(long, global = true)]
    take_over: bool,
    /// Colour the output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, default_value_t = bb7::cli::render::ColorChoice::Auto)]
    color: bb7::cli::render::ColorChoice,
    #[command(subcommand)]
    command: Option<Command>,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
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
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bb7: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Command::Serve = command {
        let result = runtime.block_on(async {
            bb7::server::serve(stdin_until_sigterm(), tokio::io::stdout()).await
        });
        // Background work (streams) must not keep the process alive after shutdown.
        runtime.shutdown_timeout(std::time::Duration::from_millis(100));
        return match result {
            Ok(code) => std::process::ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("bb7: reading stdin failed: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
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

/// Standard input that ends at SIGTERM, so a terminated bb7 shuts down as at end of
/// input: running turns save what they have and the process exits 0. Editors stop
/// their job with SIGTERM right after `shutdown`, and the reference plugin warns about
/// any other exit status.
fn stdin_until_sigterm() -> tokio::io::DuplexStream {
    let (reader, mut writer) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let mut stdin = tokio::io::stdin();
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::io::copy(&mut stdin, &mut writer) => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::io::copy(&mut stdin, &mut writer).await;
            }
        }
    });
    reader
}
