//! The `bb7` binary: with no arguments it serves the stdio protocol (PROTOCOL.md);
//! subcommands run one action from a shell (see `bb7 --help`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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

#[derive(Subcommand)]
enum Command {
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

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
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
        Command::Init => bb7::cli::Command::Init,
        Command::New { name } => bb7::cli::Command::New { name },
        Command::Chats => bb7::cli::Command::Chats,
        Command::Add { paths, readonly } => bb7::cli::Command::Add { paths, readonly },
        Command::Remove { path } => bb7::cli::Command::Remove { path },
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
            bb7::cli::Command::Ask {
                message,
                model,
                thinking,
            }
        }
        Command::Status => bb7::cli::Command::Status,
        Command::Diff { path } => bb7::cli::Command::Diff { path },
        Command::Apply { path } => bb7::cli::Command::Apply { path },
        Command::Reject { path } => bb7::cli::Command::Reject { path },
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
