//! `bb7 chat`: lines typed while an answer streams. Each question is sent at once with
//! `queue: true` (docs/PROTOCOL.md, "Extension: queue while streaming") and answered
//! after the answers before it, in order. While the answer streams the terminal does
//! not echo what is typed (the text would land inside the answer): the line being
//! typed is drawn below the answer instead (`chat_typing.rs`), and once Enter is
//! pressed it shows dimmed on stderr as `bb7: queued (N): …`. `/queue` lists the
//! queued questions, `/unqueue N` drops the Nth and `/unqueue` every one not yet
//! started (`cancel` with its request id); any other slash command is refused until
//! the answer ends, since most of them change the context or files the running answer
//! was asked over.

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

use super::chat_typing::{self, Keys, Typed};
use super::render::{Waiting, paint_err, style};
use super::session::Session;
use super::terminal;
use crate::protocol::action::Action;
use crate::protocol::params::{self, RequestId};

/// How long the reader waits for a line before it looks whether to stop, in ms.
const POLL_MS: i32 = 50;

/// Reads the terminal key by key while an answer streams, echo off. Dropped, it stops
/// reading and restores the terminal; [`TypeAhead::finish`] gives back the line not
/// yet ended by Enter, for the line editor.
pub(super) struct TypeAhead {
    lines: mpsc::UnboundedReceiver<Typed>,
    stop: Arc<AtomicBool>,
    /// The reader thread; it ends with the line typed and not sent.
    reader: Option<std::thread::JoinHandle<String>>,
    saved: Option<libc::termios>,
    /// The terminal's settings while it reads (no echo, key by key).
    quiet: libc::termios,
    /// The settings while it waits between answers: no echo, line by line, so keys
    /// typed meanwhile stay in the terminal for the line editor (Tab completes there).
    between: libc::termios,
    /// Asks the reader to leave the terminal alone (a question reads it), and the
    /// reader's answer that it does.
    pause: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
    /// Request ids of the queued questions, the next to start first, with their text.
    pub(super) queued: Vec<(String, String)>,
    /// The line being typed, as the reader last told it.
    draft: String,
    /// Whether `draft` is drawn below the answer now.
    shown: bool,
}

impl TypeAhead {
    /// Starts reading stdin when it is a terminal, `draft` already typed (what was
    /// typed and not sent during the answer before); `None` otherwise.
    pub(super) fn start(draft: String) -> Option<TypeAhead> {
        let fd = std::io::stdin().as_raw_fd();
        // SAFETY: isatty, tcgetattr and tcsetattr only read or write the termios
        // struct given for the process's own stdin.
        let (saved, quiet, between) = unsafe {
            if libc::isatty(fd) != 1 {
                return None;
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) != 0 {
                return None;
            }
            // Key by key (the line is read, and shown, as it is typed); Ctrl-C still
            // interrupts (ISIG is left on).
            let mut quiet = t;
            quiet.c_lflag &= !(libc::ECHO | libc::ECHONL | libc::ICANON);
            quiet.c_cc[libc::VMIN] = 1;
            quiet.c_cc[libc::VTIME] = 0;
            libc::tcsetattr(fd, libc::TCSANOW, &quiet);
            let mut between = t;
            between.c_lflag &= !(libc::ECHO | libc::ECHONL);
            between.c_lflag |= libc::ICANON;
            (t, quiet, between)
        };
        let (tx, lines) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let keys = Keys::with_draft(draft.clone());
        let (pause, paused) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let hold = (pause.clone(), paused.clone());
        let reader = std::thread::spawn(move || read_keys(fd, &halt, &hold, &tx, keys));
        Some(TypeAhead {
            lines,
            stop,
            reader: Some(reader),
            saved: Some(saved),
            quiet,
            between,
            pause,
            paused,
            queued: Vec::new(),
            draft,
            shown: false,
        })
    }

    /// Draws the line being typed below the answer, when there is one and it is not
    /// drawn; while the waiting indicator shows (it draws on that row), the line is
    /// drawn after its spinner, which goes on.
    pub(super) fn show(&mut self, waiting: &mut Waiting) {
        if waiting.active() {
            waiting.beside(&self.draft);
            return;
        }
        if self.shown || self.draft.is_empty() || !chat_typing::drawable() {
            return;
        }
        chat_typing::draw(&self.draft);
        self.shown = true;
    }

    /// `true` before a question of the answer (a tool approval, a clarification) reads
    /// the terminal: the reader stops reading (once it says so) and the terminal is as
    /// the user had it, echo on; `false` after, to read on.
    pub(super) fn hold(&mut self, on: bool) {
        match (on, self.saved) {
            (true, Some(t)) => self.park(t),
            _ => self.resume(),
        }
    }

    /// The answer ended: keys typed from now on (after its end shows) are left in the
    /// terminal, line by line, for the line editor or the next answer's reader.
    pub(super) fn pause(&mut self) {
        self.park(self.between);
    }

    /// Reads the terminal again (the next queued answer starts, a question was
    /// answered); nothing when it reads already.
    pub(super) fn resume(&mut self) {
        if self.pause.load(Ordering::SeqCst) {
            // SAFETY: the settings made in `start` for the same fd.
            unsafe { libc::tcsetattr(std::io::stdin().as_raw_fd(), libc::TCSANOW, &self.quiet) };
            self.pause.store(false, Ordering::SeqCst);
        }
    }

    /// Stops the reader (once it says so) and sets the terminal to `t`.
    fn park(&mut self, t: libc::termios) {
        self.hide();
        self.pause.store(true, Ordering::SeqCst);
        // A hang guard only: the reader looks at least every POLL_MS.
        for _ in 0..200 {
            if self.paused.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // SAFETY: settings derived from the termios read in `start` for the same fd.
        unsafe { libc::tcsetattr(std::io::stdin().as_raw_fd(), libc::TCSANOW, &t) };
    }

    /// Erases the line being typed, before anything else is written.
    pub(super) fn hide(&mut self) {
        if self.shown {
            chat_typing::erase();
            self.shown = false;
        }
    }

    /// Handles what was typed: a changed line is drawn again (by the next
    /// [`TypeAhead::show`]); of a whole line, a question is queued, `/queue` lists the
    /// queue, `/unqueue [N]` drops from it, any other command is refused with a note.
    pub(super) async fn take(&mut self, s: &mut Session, typed: Typed) {
        self.hide();
        let line = match typed {
            Typed::Draft(d) => {
                self.draft = d;
                return;
            }
            Typed::Line(l) => {
                self.draft.clear();
                l
            }
        };
        let text = line.trim();
        if text.is_empty() {
            return;
        }
        if text == "/queue" {
            self.list();
            return;
        }
        if let Some(which) = text.strip_prefix("/unqueue")
            && (which.is_empty() || which.starts_with(' '))
        {
            self.unqueue_some(s, which.trim()).await;
            return;
        }
        if text.starts_with('/') {
            note(&format!(
                "{} waits for the answer to end (or Ctrl-C to stop it); only /queue and \
                 /unqueue run meanwhile",
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
            cancel(s, id).await;
        }
        note(&format!("dropped {n} queued question(s)"));
    }

    /// `/unqueue N` (1 is the next to start) drops that question; `/unqueue` every one.
    async fn unqueue_some(&mut self, s: &mut Session, which: &str) {
        if which.is_empty() {
            return self.unqueue(s).await;
        }
        let n = self.queued.len();
        match which.parse::<usize>() {
            Ok(i) if (1..=n).contains(&i) => {
                let (id, text) = self.queued.remove(i - 1);
                cancel(s, id).await;
                note(&format!(
                    "dropped queued question {i}: {}",
                    terminal::err(&text)
                ));
            }
            _ if n == 0 => note("nothing is queued"),
            _ => note(&format!(
                "no queued question {} (/queue lists 1 to {n})",
                terminal::err(which)
            )),
        }
    }

    /// `/queue`: the queued questions, numbered as `/unqueue N` takes them.
    fn list(&self) {
        if self.queued.is_empty() {
            return note("nothing is queued");
        }
        for (i, (_, text)) in self.queued.iter().enumerate() {
            note(&format!("queued ({}): {}", i + 1, terminal::err(text)));
        }
    }
}

/// Cancels queued request `id` on the server, its lines no longer kept.
async fn cancel(s: &mut Session, id: String) {
    s.c.forget(&id);
    let _ =
        s.c.send(&Action::Cancel(params::Cancel {
            target_request_id: RequestId(id),
        }))
        .await;
}

impl TypeAhead {
    /// Stops reading and gives back to `s` the lines typed but not yet taken (Enter
    /// pressed as the answer ended, or right after Ctrl-C), which the line editor runs
    /// next, and the line typed and not sent, which it starts with: no key is lost.
    pub(super) fn finish(mut self, s: &mut Session) {
        self.hide();
        self.stop.store(true, Ordering::Relaxed);
        let draft = self
            .reader
            .take()
            .and_then(|r| r.join().ok())
            .unwrap_or_default();
        let mut left = Vec::new();
        while let Ok(t) = self.lines.try_recv() {
            if let Typed::Line(l) = t
                && !l.trim().is_empty()
            {
                left.push(l);
            }
        }
        s.typed_ahead.extend(left);
        s.typed_draft = draft;
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

/// What was typed next, or never when there is no reader (a `select!` branch that
/// stays pending).
pub(super) async fn next_line(typed: Option<&mut TypeAhead>) -> Option<Typed> {
    match typed {
        Some(t) => t.lines.recv().await,
        None => std::future::pending().await,
    }
}

/// A dimmed `bb7:` line on stderr.
pub(super) fn note(text: &str) {
    // The waiting indicator may hold the row (with the typed line after it): the note
    // takes the row whole, in one write under the lock, and the spinner goes on below.
    let clear = if chat_typing::drawable() {
        "\r\x1b[2K"
    } else {
        ""
    };
    eprintln!("{clear}{}", paint_err(style::DIM, &format!("bb7: {text}")));
}

/// The reader thread: the keys, as they are typed, through `keys`; it ends (when told
/// to stop, or stdin closes) with the line typed and not sent.
/// While `hold.0` is set it reads nothing, and says so in `hold.1`.
fn read_keys(
    fd: i32,
    stop: &AtomicBool,
    hold: &(Arc<AtomicBool>, Arc<AtomicBool>),
    tx: &mpsc::UnboundedSender<Typed>,
    keys: Keys,
) -> String {
    let mut keys = keys;
    let mut buf = [0u8; 4096];
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        if hold.0.load(Ordering::SeqCst) {
            hold.1.store(true, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(POLL_MS as u64));
            continue;
        }
        hold.1.store(false, Ordering::SeqCst);
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack, its count given.
        let ready = unsafe { libc::poll(&mut p, 1, POLL_MS) };
        if ready <= 0 || p.revents & libc::POLLIN == 0 {
            if ready < 0 || p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                break;
            }
            continue;
        }
        // SAFETY: reads at most buf.len() bytes into buf.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        keys.feed(&buf[..n as usize], &mut out);
        for t in out.drain(..) {
            if tx.send(t).is_err() {
                return keys.draft().to_owned();
            }
        }
    }
    keys.into_draft()
}
