//! The runner of the validation command on every Unix: bb7 itself, started again as
//! `bb7 __validate-runner COMMAND` (from `/proc/self/exe` on Linux, the path
//! [`std::env::current_exe`] reports elsewhere) by [`super::scratch`], in the
//! command's process group, confined like the command; on Linux also a child
//! subreaper (prctl(2), `PR_SET_CHILD_SUBREAPER`). The watch below is portable: a
//! pipe's read end sees end-of-file once no process holds its write end (POSIX
//! read(2), pipe(7)), on Linux, macOS and the BSDs alike. It runs `sh -c COMMAND` with
//! stdin, stdout and stderr closed, prints the exit status (128 + the signal number
//! for a killed command) on its stdout, and watches its stdin, a pipe whose only
//! writer is the bb7 that started it: when that pipe ends — bb7 closed it after the
//! check, or bb7 died, even by SIGKILL, which no handler in bb7 can see — the runner
//! kills every process beneath it ([`super::descendants::kill_below`]: on Linux those
//! that left the group are orphaned up to it and found in `/proc`; elsewhere only
//! the group), then its group and itself. So no check
//! outlives the bb7 that started it (README, "Local, remote and hybrid").

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

/// The first argument that makes `bb7` the runner. Not a subcommand users see.
pub const ARG: &str = "__validate-runner";

/// Runs as the runner when the process was started as one (`bb7 __validate-runner
/// COMMAND`); `None` otherwise, and `main` goes on as usual.
pub fn dispatch() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(ARG)) {
        return None;
    }
    let command = args.next().unwrap_or_default();
    Some(run(command))
}

fn run(command: OsString) -> ExitCode {
    // Set again here: the spawn sets it before exec, and it must hold before the
    // command's first fork.
    let _ = super::descendants::become_subreaper();
    let me = std::process::id() as i32;
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 64];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // The pipe ended: everything beneath goes, then the group with the runner.
        super::descendants::kill_below(me, me);
        std::process::exit(0);
    });
    let status = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .arg("sh")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let code = match status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            s.code()
                .unwrap_or_else(|| 128 + s.signal().unwrap_or_default())
        }
        // As a shell reports a command it cannot run.
        Err(_) => 127,
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{code}");
    let _ = out.flush();
    drop(out);
    // bb7 kills what the command left and closes the pipe; the watcher then ends the
    // process.
    loop {
        std::thread::park();
    }
}
