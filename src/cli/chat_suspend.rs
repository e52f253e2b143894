//! Ctrl-Z and `fg` in `bb7 chat`. The terminal is left as the shell expects it while
//! bb7 is stopped, and set back as bb7 had it once the shell continues it: a shell
//! restores its own modes for itself, but gives a continued job the terminal in
//! whatever state it is (bash keeps no modes per job), so an answer that streamed with
//! echo off (src/cli/chat_queue.rs) would go on with echo on and the typed text inside
//! the answer.
//!
//! At the prompt, Ctrl-Z is a key of the line editor, which runs in raw mode: it is
//! bound here to end the read, keeping the text typed so far; the session stops, and
//! once continued it reads again with the prompt drawn anew and that text in place.
//! (The line editor's own suspend sets raw mode back before the process has stopped,
//! so after `fg` it read in the shell's cooked mode with no prompt shown.) While an
//! answer streams or a command runs, the terminal sends SIGTSTP: it is caught, the
//! terminal's modes from the start of the session are set, the process stops with the
//! default action of SIGTSTP (the shell sees an ordinary stop), and on SIGCONT the
//! modes of the moment it stopped are set again. The classic pattern of programs that
//! own the terminal (vi, less: POSIX `sigaction`, "SIGTSTP").

use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, OnceLock};

use rustyline::history::DefaultHistory;
use rustyline::{
    Cmd, ConditionalEventHandler, Editor, Event, EventContext, EventHandler, Helper, KeyEvent,
    RepeatCount,
};

/// The terminal's modes when the session started: what the shell gets back while
/// bb7 is stopped.
static SHELL_MODES: OnceLock<libc::termios> = OnceLock::new();

/// The modes of the terminal on stdin, when it is one.
fn modes() -> Option<libc::termios> {
    let fd = std::io::stdin().as_raw_fd();
    // SAFETY: isatty and tcgetattr only read into the termios struct given.
    unsafe {
        if libc::isatty(fd) != 1 {
            return None;
        }
        let mut t: libc::termios = std::mem::zeroed();
        (libc::tcgetattr(fd, &mut t) == 0).then_some(t)
    }
}

fn set_modes(t: &libc::termios) {
    // SAFETY: writes a termios read earlier by `modes` for the same fd. TCSADRAIN
    // lets what was written go out under the modes it was written with.
    unsafe {
        libc::tcsetattr(std::io::stdin().as_raw_fd(), libc::TCSADRAIN, t);
    }
}

/// Remembers the terminal's modes and catches SIGTSTP for the rest of the session.
/// Call once, at the prompt (cooked modes), before anything changes them. Nothing
/// happens without a terminal on stdin.
pub(super) fn watch() {
    let Some(t) = modes() else {
        return;
    };
    let _ = SHELL_MODES.set(t);
    let Ok(mut tstp) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(libc::SIGTSTP))
    else {
        return;
    };
    tokio::spawn(async move {
        while tstp.recv().await.is_some() {
            // The whole process stops here; blocking this worker until it is
            // continued costs nothing.
            stop();
        }
    });
}

/// How many times the process was stopped and continued: a question waiting for its
/// answer draws itself again when this changes (src/cli/approval.rs).
static CONTINUED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The count of stops the process came back from so far.
pub(super) fn continued() -> u64 {
    CONTINUED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Stops the process as SIGTSTP's default action does, the shell's terminal modes
/// set meanwhile; returns once continued, with the modes of before set again.
pub(super) fn stop() {
    let now = modes();
    if let Some(shell) = SHELL_MODES.get() {
        set_modes(shell);
    }
    // SAFETY: the default action is put in place for one raise and the catching
    // action set back after it; `old` is the action tokio's signal registry
    // installed, written back unchanged.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGTSTP, &dfl, &mut old) == 0 {
            libc::raise(libc::SIGTSTP);
            libc::sigaction(libc::SIGTSTP, &old, std::ptr::null_mut());
        }
    }
    if let Some(t) = now {
        set_modes(&t);
    }
    CONTINUED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// The text before and after the cursor when Ctrl-Z ended a read.
pub(super) type Typed = Arc<Mutex<Option<(String, String)>>>;

/// Ctrl-Z at the prompt: keeps the line and ends the read (as Ctrl-C does, which
/// the reader tells apart by the kept line).
pub(super) struct SuspendKey(pub(super) Typed);

impl ConditionalEventHandler for SuspendKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let (line, pos) = (ctx.line(), ctx.pos());
        if let Ok(mut kept) = self.0.lock() {
            *kept = Some((line[..pos].to_owned(), line[pos..].to_owned()));
        }
        Some(Cmd::Interrupt)
    }
}

/// Binds Ctrl-Z in `editor` to end the read, keeping the line in `typed`.
pub(super) fn bind<H: Helper>(editor: &mut Editor<H, DefaultHistory>, typed: &Typed) {
    let key = SuspendKey(typed.clone());
    editor.bind_sequence(
        KeyEvent::ctrl('Z'),
        EventHandler::Conditional(Box::new(key)),
    );
}

/// Whether Ctrl-Z ended the read (a line is kept), not Ctrl-C.
pub(super) fn kept(typed: &Typed) -> bool {
    typed.lock().is_ok_and(|k| k.is_some())
}

/// Reads a line at `prompt`, with the line Ctrl-Z left (`kept`, taken from the reader's
/// [`Typed`]) in place and the cursor where it was.
pub(super) fn readline<H: Helper>(
    editor: &mut Editor<H, DefaultHistory>,
    prompt: &str,
    kept: Option<(String, String)>,
) -> rustyline::Result<String> {
    match &kept {
        Some((left, right)) => editor.readline_with_initial(prompt, (left, right)),
        None => editor.readline(prompt),
    }
}
