//! `bb7 chat`: lines typed while an answer streams. Each question is sent at once with
//! `queue: true` (docs/PROTOCOL.md, "Extension: queue while streaming") and answered
//! after the answers before it, in order. While the answer streams the terminal does
//! not echo what is typed (the text would land inside the answer); a line is shown,
//! dimmed on stderr as `bb7: queued (N): …`, once Enter is pressed. `/unqueue` drops
//! every queued question not yet started (`cancel` with its request id); any other
//! slash command is refused until the answer ends, since most of them change the
//! context or files the running answer was asked over.

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

use super::render::{paint_err, style};
use super::session::Session;
use super::terminal;
use crate::protocol::action::Action;
use crate::protocol::params::{self, RequestId};

/// How long the reader waits for a line before it looks whether to stop, in ms.
const POLL_MS: i32 = 50;

/// Reads whole lines from the terminal while an answer streams, echo off. Dropped, it
/// stops reading and restores the terminal; a line not yet ended by Enter stays in the
/// terminal's buffer for the line editor.
pub(super) struct TypeAhead {
    lines: mpsc::UnboundedReceiver<String>,
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
    saved: Option<libc::termios>,
    /// Request ids of the queued questions, the next to start first, with their text.
    pub(super) queued: Vec<(String, String)>,
}

impl TypeAhead {
    /// Starts reading stdin when it is a terminal; `None` otherwise.
    pub(super) fn start() -> Option<TypeAhead> {
        let fd = std::io::stdin().as_raw_fd();
        // SAFETY: isatty, tcgetattr and tcsetattr only read or write the termios
        // struct given for the process's own stdin.
        let saved = unsafe {
            if libc::isatty(fd) != 1 {
                return None;
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) != 0 {
                return None;
            }
            let mut quiet = t;
            quiet.c_lflag &= !(libc::ECHO | libc::ECHONL);
            quiet.c_lflag |= libc::ICANON;
            libc::tcsetattr(fd, libc::TCSANOW, &quiet);
            t
        };
        let (tx, lines) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let reader = std::thread::spawn(move || read_lines(fd, &halt, &tx));
        Some(TypeAhead {
            lines,
            stop,
            reader: Some(reader),
            saved: Some(saved),
            queued: Vec::new(),
        })
    }

    /// Handles one typed line: a question is queued, `/unqueue` drops the queue, any
    /// other command is refused with a note.
    pub(super) async fn take(&mut self, s: &mut Session, line: String) {
        let text = line.trim();
        if text.is_empty() {
            return;
        }
        if text == "/unqueue" {
            self.unqueue(s).await;
            return;
        }
        if text.starts_with('/') {
            note(&format!(
                "{} waits for the answer to end (or Ctrl-C to stop it); only /unqueue \
                 runs meanwhile",
                terminal::err(text)
            ));
            return;
        }
        let sent =
            s.c.send(&Action::Send(params::Send {
                content: text.to_owned(),
                chat_id: None,
                model: None,
                reasoning_effort: None,
                queue: true,
            }))
            .await;
        match sent {
            Ok(id) => {
                s.c.keep(&id);
                self.queued.push((id, text.to_owned()));
                note(&format!(
                    "queued ({}): {}",
                    self.queued.len(),
                    terminal::err(text)
                ));
            }
            Err(f) => note(&format!("not queued: {}", terminal::err(&f.message))),
        }
    }

    /// `/unqueue`: cancels every queued question (the server ends each with
    /// `cancelled`, whose lines the client then skips).
    pub(super) async fn unqueue(&mut self, s: &mut Session) {
        let n = self.queued.len();
        for (id, _) in self.queued.drain(..) {
            s.c.forget(&id);
            let _ =
                s.c.send(&Action::Cancel(params::Cancel {
                    target_request_id: RequestId(id),
                }))
                .await;
        }
        note(&format!("dropped {n} queued question(s)"));
    }
}

impl TypeAhead {
    /// Stops reading and gives back the lines typed but not yet taken (Enter pressed
    /// as the answer ended, or right after Ctrl-C): the line editor runs them next, so
    /// no typed line is lost.
    pub(super) fn finish(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let mut left = Vec::new();
        while let Ok(l) = self.lines.try_recv() {
            if !l.trim().is_empty() {
                left.push(l);
            }
        }
        left
    }
}

impl Drop for TypeAhead {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        if let Some(t) = self.saved.take() {
            // SAFETY: writes back the termios read in `start` for the same fd.
            unsafe {
                libc::tcsetattr(std::io::stdin().as_raw_fd(), libc::TCSANOW, &t);
            }
        }
    }
}

/// The next typed line, or never when there is no reader (a `select!` branch that
/// stays pending).
pub(super) async fn next_line(typed: Option<&mut TypeAhead>) -> Option<String> {
    match typed {
        Some(t) => t.lines.recv().await,
        None => std::future::pending().await,
    }
}

/// A dimmed `bb7:` line on stderr.
pub(super) fn note(text: &str) {
    eprintln!("{}", paint_err(style::DIM, &format!("bb7: {text}")));
}

/// The reader thread: in canonical mode stdin is readable only once a whole line is
/// there, so polling never takes a half-typed line from the line editor.
fn read_lines(fd: i32, stop: &AtomicBool, tx: &mpsc::UnboundedSender<String>) {
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack, its count given.
        let ready = unsafe { libc::poll(&mut p, 1, POLL_MS) };
        if ready <= 0 || p.revents & libc::POLLIN == 0 {
            if ready < 0 || p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                return;
            }
            continue;
        }
        // SAFETY: reads at most buf.len() bytes into buf.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return;
        }
        let got = String::from_utf8_lossy(&buf[..n as usize]);
        for l in got.lines() {
            if tx.send(l.to_owned()).is_err() {
                return;
            }
        }
    }
}
