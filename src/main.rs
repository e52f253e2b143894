//! The `bb7` binary: with no arguments it serves the stdio protocol (PROTOCOL.md);
//! subcommands run one action from a shell (see `bb7 --help`).

use std::path::PathBuf;

use bb7::cli::Command;
use clap::Parser;

/// bb7: a focused LLM chat sidecar for editors.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Project root (default: the current directory).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Chat to use (an id from `bb7 chats`) instead of the active one.
    #[arg(long, global = true)]
    chat: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    bb7::debug_log::init_from_env();
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
    let command = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let result =
                runtime.block_on(bb7::server::serve(tokio::io::stdin(), tokio::io::stdout()));
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
        other => other,
    };
    let root = cli
        .root
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let opts = bb7::cli::Options {
        root,
        chat: cli.chat,
    };
    let result = runtime.block_on(bb7::cli::run(command, opts));
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(bb7::cli::Failure(msg)) => {
            eprintln!("bb7: {msg}");
            std::process::ExitCode::FAILURE
        }
    }
}
