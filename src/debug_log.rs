//! Debug logging (invariant 1 in docs/ARCHITECTURE.md: stdout carries protocol lines only). With
//! `BB7_DEBUG=1` bb7 appends to `~/.bb7/debug.log`: actions, request ids, timings, error
//! codes, retries. Never message text, file content or the API key.

use std::fs::OpenOptions;
use std::sync::Mutex;

/// Starts logging to `~/.bb7/debug.log` when `BB7_DEBUG` is `1` or `true`. Returns the
/// log's path when logging started; failures to open the file leave logging off.
pub fn init_from_env() -> Option<std::path::PathBuf> {
    let on = std::env::var("BB7_DEBUG").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    if !on {
        return None;
    }
    let dirs = crate::project::UserDirs::from_env().ok()?;
    std::fs::create_dir_all(&dirs.state).ok()?;
    let path = dirs.state.join("debug.log");
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .try_init()
        .ok()?;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        pid = std::process::id(),
        "bb7 started"
    );
    Some(path)
}
