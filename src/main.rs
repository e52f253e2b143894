//! The `bb7` binary: with no arguments it serves the stdio protocol (PROTOCOL.md).

use clap::{Parser, Subcommand};

/// bb7: a focused LLM chat sidecar for editors.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the line-delimited JSON protocol on stdin/stdout (the default).
    Serve,
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
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let result =
                runtime.block_on(bb7::server::serve(tokio::io::stdin(), tokio::io::stdout()));
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
    }
}
