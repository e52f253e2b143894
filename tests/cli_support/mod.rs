//! Running the one-shot `bb7` commands as a shell user would: in a directory, with a
//! temporary HOME, stdin from a pipe, and the outputs captured.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use crate::common::Env;

/// A `bb7` command in `dir` with the environment's HOME and config.
pub fn command(env: &Env, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bb7"));
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .env("HOME", &env.home)
        .env("XDG_CONFIG_HOME", env.home.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `bb7 ARGS` in `dir` with `input` on stdin.
pub fn run_in(env: &Env, dir: &Path, args: &[&str], input: &str) -> Output {
    let mut child = command(env, dir, args).spawn().unwrap();
    use std::io::Write;
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

/// Runs `bb7 ARGS` in the project root with empty stdin.
pub fn bb7(env: &Env, args: &[&str]) -> Output {
    run_in(env, &env.project, args, "")
}

/// Runs `bb7 ARGS` in the project root and asserts it succeeded.
#[track_caller]
pub fn ok(env: &Env, args: &[&str]) -> Output {
    let o = bb7(env, args);
    assert!(
        o.status.success(),
        "bb7 {args:?} failed: {}{}",
        lossy(&o.stdout),
        lossy(&o.stderr)
    );
    o
}

/// Runs `bb7 ARGS` in the project root and asserts it failed; returns stderr.
#[track_caller]
pub fn fails(env: &Env, args: &[&str]) -> String {
    let o = bb7(env, args);
    assert!(
        !o.status.success(),
        "bb7 {args:?} should fail: {}{}",
        lossy(&o.stdout),
        lossy(&o.stderr)
    );
    lossy(&o.stderr)
}

pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn stdout(o: &Output) -> String {
    lossy(&o.stdout)
}

pub fn stderr(o: &Output) -> String {
    lossy(&o.stderr)
}

/// `bb7 init` and `bb7 add` of these files (written first).
pub fn project_with(env: &Env, files: &[(&str, &str)]) {
    for (p, c) in files {
        env.write(p, c);
    }
    ok(env, &["init"]);
    let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
    let mut args = vec!["add"];
    args.extend(paths);
    ok(env, &args);
}

/// Starts `bb7 ARGS` in `dir` without waiting (stdin closed).
pub fn spawn(env: &Env, dir: &Path, args: &[&str]) -> Child {
    let mut cmd = command(env, dir, args);
    cmd.stdin(Stdio::null());
    cmd.spawn().unwrap()
}

/// A pseudo-terminal pair (master, slave), for a child whose stdin is a terminal.
pub fn pty() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the given integers; the name,
    // termios and winsize pointers may be null.
    let r = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty failed");
    // Close-on-exec: a child gets the slave only as the descriptors it is given, and
    // never the master, which would keep the terminal open after the test drops it.
    for fd in [m, s] {
        // SAFETY: fcntl on descriptors this function owns.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(m),
            std::os::fd::OwnedFd::from_raw_fd(s),
        )
    }
}

/// Collects what is written to the terminal whose master is `master`, until every
/// slave is closed; join the handle for the text.
pub fn read_screen(master: &std::fs::File) -> std::thread::JoinHandle<String> {
    use std::io::Read;
    let mut screen = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Ends with an error (EIO) once the last slave is closed.
        while let Ok(n @ 1..) = screen.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    })
}

/// A `bb7` process on a pseudo-terminal that is its controlling terminal (so Ctrl-C
/// typed on it interrupts it), with everything it writes collected.
pub struct Terminal {
    master: std::fs::File,
    child: Child,
    seen: std::sync::Arc<std::sync::Mutex<String>>,
    /// How much of `seen` earlier `expect`s consumed.
    read_to: usize,
}

impl Terminal {
    /// Starts `bb7 ARGS` in the project root on a new terminal.
    pub fn start(env: &Env, args: &[&str]) -> Terminal {
        use std::os::unix::process::CommandExt;
        let (master, slave) = pty();
        let mut cmd = command(env, &env.project, args);
        cmd.env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new session
        // whose controlling terminal is the pty on stdin, and the signals a terminal
        // sends back at their default action with none blocked, whatever the test
        // runner inherited (`nohup` ignores SIGHUP, and an ignored signal stays
        // ignored across exec: POSIX, "exec").
        unsafe {
            cmd.pre_exec(|| {
                for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let master = std::fs::File::from(master);
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = seen.clone();
        std::thread::spawn(move || {
            use std::io::Read;
            let mut buf = [0u8; 4096];
            // A read can end inside a character (the terminal hands over what was
            // written so far): its first bytes wait for the rest, or a `…` the test
            // expects would show as two replacement characters.
            let mut pending = Vec::new();
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
                let whole = complete_len(&pending);
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&pending[..whole]));
                pending.drain(..whole);
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&pending));
        });
        Terminal {
            master,
            child,
            seen,
            read_to: 0,
        }
    }

    /// Types `text` (a `\r` is Enter, `\x03` Ctrl-C, `\x04` Ctrl-D).
    pub fn type_keys(&mut self, text: &str) {
        use std::io::Write;
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits until `text` shows after what earlier calls consumed; returns everything
    /// shown up to and including it. The wait is bounded by the harness's hang guard
    /// (`common::TIMEOUT`): a first run on a loaded 2-core machine can take tens of
    /// seconds to show a prompt.
    #[track_caller]
    pub fn expect(&mut self, text: &str) -> String {
        let deadline = std::time::Instant::now() + crate::common::TIMEOUT;
        loop {
            {
                let seen = self.seen.lock().unwrap();
                if let Some(at) = seen[self.read_to..].find(text) {
                    let end = self.read_to + at + text.len();
                    let got = seen[self.read_to..end].to_owned();
                    self.read_to = end;
                    return got;
                }
                if std::time::Instant::now() > deadline {
                    panic!(
                        "{text:?} did not show; the terminal shows:\n{}",
                        &seen[self.read_to..]
                    );
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The process id of the program on the terminal.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything shown so far.
    pub fn screen(&self) -> String {
        self.seen.lock().unwrap().clone()
    }

    /// Waits for the process to end; its exit status.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        crate::common::wait_with_timeout(&mut self.child)
    }
}

/// How many of `bytes` end on a character boundary: all but the first bytes of a
/// UTF-8 character cut at the end (RFC 3629: a lead byte tells the length, 2 to 4).
fn complete_len(bytes: &[u8]) -> usize {
    let Some(back) = bytes.iter().rev().take(4).position(|&b| b & 0xC0 != 0x80) else {
        return bytes.len();
    };
    let lead = bytes.len() - 1 - back;
    let needs = match bytes[lead] {
        b if b >= 0xF0 => 4,
        b if b >= 0xE0 => 3,
        b if b >= 0xC0 => 2,
        _ => 1,
    };
    if bytes.len() - lead < needs {
        lead
    } else {
        bytes.len()
    }
}

/// A failed or finished test never leaves its `bb7` behind: killed if it still runs,
/// and reaped.
impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ten numbered lines, `l1` to `l10`.
pub const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

/// Scripts the model to change lines 2 and 9 of f.txt: two hunks.
pub fn two_hunks(fake: &crate::common::fake_model::FakeModel) {
    fake.push_sse(crate::common::fake_model::response(
        "",
        "Two changes.",
        vec![(
            "edit_file",
            serde_json::json!({"path": "f.txt", "edits": [
                {"old_string": "l2\n", "new_string": "TWO\n"},
                {"old_string": "l9\n", "new_string": "NINE\n"}]}),
        )],
    ));
}

/// Makes chat `id` held by a live process that serves no holder socket, as the
/// reference BB-7 holds a chat (its PID in the lock file, no OS lock): the process
/// to kill when done.
pub fn hold_without_socket(env: &Env, id: &str) -> Child {
    let holder = Command::new("sleep").arg("60").spawn().unwrap();
    std::fs::write(
        env.project.join(".bb7/chats").join(id).join("lock"),
        holder.id().to_string(),
    )
    .unwrap();
    holder
}

/// Hunk ids from `bb7 review`: the first word of each indented hunk line.
pub fn hunk_ids(review: &str) -> Vec<String> {
    review
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect()
}

/// Checkpoint ids in the order `bb7 checkpoints` lists them.
pub fn checkpoint_ids(env: &Env) -> Vec<String> {
    stdout(&ok(env, &["checkpoints"]))
        .lines()
        .filter(|l| l.starts_with("cp_"))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect()
}
