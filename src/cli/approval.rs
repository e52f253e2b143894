//! A tool approval asked on the terminal (`--tools ask`, docs/PROTOCOL.md
//! `tool_approval`) that the turn may end under: cancelled from another front-end
//! (the editor holding the chat cancels a guest's turn by its `peer:` id), or ended
//! by the server. The question is then withdrawn with a note, the turn's last message
//! is handled as usual, and the terminal is free again: the answer is read by polling
//! stdin, so no reader is left behind to take the next line typed.

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::signal::unix::Signal;

use super::prompt;
use super::session::Session;
use super::terminal;
use crate::front::client::Res;
use crate::protocol::events::TurnMessage;

/// How the question ended.
pub(super) enum Asked {
    /// The user answered: allowed or not.
    Answer(bool),
    /// Ctrl-C while it waited.
    Interrupted,
    /// The turn ended first, with this message (its last); the question is withdrawn.
    Ended(Box<TurnMessage>),
}

/// How often the reader looks whether the question was withdrawn, in ms.
const POLL_MS: i32 = 50;

/// Asks on the terminal whether the model may do `description` (refused without a
/// terminal), while reading request `id`'s stream for an end. Errors: the connection
/// to the server failed.
pub(super) async fn approve(
    s: &mut Session,
    id: &str,
    description: &str,
    sigint: &mut Signal,
) -> Res<Asked> {
    if !prompt::interactive() {
        eprintln!(
            "bb7: refused: {} (stdin is not a terminal to ask; use --tools auto)",
            terminal::err(description)
        );
        return Ok(Asked::Answer(false));
    }
    let question = format!(
        "bb7: the model asks: {}. Allow? [y/N] ",
        terminal::err(description)
    );
    let stop = Arc::new(AtomicBool::new(false));
    let halt = stop.clone();
    let mut reader = tokio::task::spawn_blocking(move || read_answer_until(&question, &halt));
    loop {
        tokio::select! {
            got = &mut reader => {
                let yes = got.ok().flatten().is_some_and(|a| prompt::is_yes(&a));
                if !yes {
                    eprintln!("bb7: refused");
                }
                return Ok(Asked::Answer(yes));
            }
            _ = sigint.recv() => {
                stop.store(true, Ordering::Relaxed);
                let _ = reader.await;
                eprintln!();
                return Ok(Asked::Interrupted);
            }
            m = s.c.next_stream(id) => {
                let m = m?;
                if !matches!(
                    m,
                    TurnMessage::Done { .. } | TurnMessage::Error { .. } | TurnMessage::DiffError { .. }
                ) {
                    continue;
                }
                stop.store(true, Ordering::Relaxed);
                let _ = reader.await;
                eprintln!();
                eprintln!(
                    "bb7: the question is withdrawn: the turn ended before it was answered"
                );
                return Ok(Asked::Ended(Box::new(m)));
            }
        }
    }
}

/// Prints `question` on stderr and reads one line from stdin (without its line end),
/// looking at `stop` between polls; `None` at end of input or once stopped. The
/// terminal is in canonical mode here: stdin is readable only once a whole line is.
fn read_answer_until(question: &str, stop: &AtomicBool) -> Option<String> {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}");
    let _ = err.flush();
    drop(err);
    let fd = std::io::stdin().as_raw_fd();
    let mut line = Vec::new();
    let mut buf = [0u8; 1024];
    let mut stops = super::chat_suspend::continued();
    while !stop.load(Ordering::Relaxed) {
        // Ctrl-Z then `fg` (src/cli/chat_suspend.rs): the shell wrote over the row, so
        // the question is asked again; the terminal kept what was typed before.
        let now = super::chat_suspend::continued();
        if now != stops {
            stops = now;
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{question}");
            let _ = err.flush();
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack, its count given.
        let ready = unsafe { libc::poll(&mut p, 1, POLL_MS) };
        if ready < 0 {
            // A signal (SIGTSTP, SIGCONT, SIGWINCH) is no answer: ask on.
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if ready == 0 {
            continue;
        }
        // SAFETY: reads at most buf.len() bytes into buf.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return None;
        }
        line.extend_from_slice(&buf[..n as usize]);
        if line.ends_with(b"\n") {
            let text = String::from_utf8_lossy(&line);
            return Some(text.trim_end_matches(['\n', '\r']).to_owned());
        }
    }
    None
}
