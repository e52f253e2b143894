//! Questions to the user on the terminal (tool approvals, clarifications, the
//! `.gitignore` offer). They are only asked when they can be seen and answered: stdin
//! and stderr (where the question is printed) both terminals; otherwise the caller
//! takes the safe default.

use std::io::{BufRead, IsTerminal, Write};

/// Whether questions can be asked: stdin is a terminal to answer on and stderr one to
/// show the question on. `bb7 init >/dev/null 2>&1` typed at a terminal must not wait
/// for an answer to a question nobody sees.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Prints `question` on stderr and reads one line from stdin (without its line end);
/// `None` at end of input. Blocking: call it from a blocking thread in async code.
pub fn read_answer(question: &str) -> Option<String> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}");
    let _ = err.flush();
    drop(err);
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

/// Whether an answer means yes (`y`, `yes`, any case).
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Asks a yes/no question on the terminal off the async threads; `false` at end of
/// input.
pub async fn confirm(question: String) -> bool {
    tokio::task::spawn_blocking(move || read_answer(&question).is_some_and(|a| is_yes(&a)))
        .await
        .unwrap_or(false)
}

/// Asks a free-text question on the terminal off the async threads; `None` at end of
/// input or for an empty answer.
pub async fn ask_text(question: String) -> Option<String> {
    tokio::task::spawn_blocking(move || read_answer(&question))
        .await
        .ok()
        .flatten()
        .filter(|a| !a.trim().is_empty())
}
