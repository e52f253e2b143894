//! The validation gate of `hybrid_auto` (config `hybrid_validate_command`): a scratch
//! copy of the project, with a proposal's files written into it, in which the user's
//! command runs. The command never runs in the project itself, and nothing of the
//! copy is kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::paths::PROTECTED_DIRS;

/// How long the command may run before it is stopped (and counts as failed).
pub const VALIDATE_TIMEOUT: Duration = Duration::from_secs(300);

/// Most bytes of project files copied into the scratch directory; a larger project
/// is not validated (the check fails, so the turn moves to the remote provider).
pub const MAX_COPY_BYTES: u64 = 1024 * 1024 * 1024;

/// What the command said about a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validation {
    /// The command exited 0.
    pub passed: bool,
    /// One line for the debug log, the event trace and the `attempt` message: the
    /// exit status, the time limit, or why the copy or the start failed. Never the
    /// command's output.
    pub detail: String,
    /// The proposal's files that the command runs or reads
    /// ([`super::command_files`]): when any, the command did not run at all.
    pub not_run_for: Vec<String>,
}

impl Validation {
    fn failed(detail: impl Into<String>) -> Validation {
        Validation {
            passed: false,
            detail: detail.into(),
            not_run_for: Vec::new(),
        }
    }
}

/// Copies the project at `root` into a new temporary directory (the files a walk that
/// honours `.gitignore` finds, without `.git/`, `.bb7/` and the other protected
/// directories, and without symlinks, so nothing in the copy leads back into the
/// project), writes `writes` (project-relative path → content) over it, and runs
/// `command` with `sh -c` there, its stdin, stdout and stderr closed, in its own
/// process group; it is stopped after `timeout`, and every process it started (those
/// that left the group too, [`super::descendants`]) is killed when it ends; confined ([`super::confine`]) to
/// writing in the copy, a private `TMPDIR` beside it and the user's `writable`
/// directories. The directory is removed afterwards. When `writes` changes a file
/// the command runs or reads ([`super::command_files`]) nothing runs: the check fails
/// naming those files. `owner` names the check for [`kill_running_for`] (the turn's
/// request id).
pub fn validate(
    owner: &str,
    root: &Path,
    writes: &BTreeMap<String, String>,
    command: &str,
    writable: &[PathBuf],
    timeout: Duration,
) -> Validation {
    let changed = super::command_files::changed_files_run(command, root, writes);
    if !changed.is_empty() {
        return Validation {
            passed: false,
            detail: format!(
                "not run: the local edits change {}, which the validation command runs or reads",
                changed.join(", ")
            ),
            not_run_for: changed,
        };
    }
    sweep_stale();
    use std::os::unix::fs::PermissionsExt;
    // 0700: the copy holds what the project's own modes may hide from other users.
    let scratch = match tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => return Validation::failed(format!("cannot make a scratch directory: {e}")),
    };
    let (copy, tmp) = (scratch.path().join("project"), scratch.path().join("tmp"));
    for dir in [&copy, &tmp] {
        if let Err(e) = std::fs::create_dir(dir) {
            return Validation::failed(format!("cannot make a scratch directory: {e}"));
        }
    }
    if let Err(e) = copy_project(root, &copy) {
        return Validation::failed(e);
    }
    for (rel, content) in writes {
        if Path::new(rel).is_absolute() || rel.split('/').any(|c| c == "..") {
            return Validation::failed(format!("refused path {rel}"));
        }
        let to = copy.join(rel);
        let written = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| std::fs::write(&to, content));
        if let Err(e) = written {
            return Validation::failed(format!("cannot write {rel} into the copy: {e}"));
        }
    }
    let mut allowed = vec![scratch.path().to_path_buf()];
    allowed.extend(writable.iter().cloned());
    let confinement = match super::confine::Confinement::new(&allowed) {
        Ok(c) => c,
        Err(e) => return Validation::failed(e),
    };
    run(owner, &copy, &tmp, command, confinement, timeout)
}

/// The scratch copies' name prefix in the temporary directory; the PID of the bb7
/// that made one follows, so a later bb7 knows a crashed one's copy.
const PREFIX: &str = "bb7-validate-";

/// Removes the scratch copies that a bb7 no longer running left behind (killed before
/// it could remove them), when this user owns them. Called at start and before each
/// validation; errors are ignored (another bb7 may be removing the same copy).
pub fn sweep_stale() {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        let alive = pid > 0
            && (unsafe { libc::kill(pid, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM));
        if meta.is_dir() && meta.uid() == uid && !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The validation commands running now, each one's wrapper (the runner) by
/// the turn it checks, and the turns cancelled before their check started: each tree
/// is killed when bb7 stops ([`kill_running`]) or its own turn is cancelled
/// ([`kill_running_for`]), never another turn's.
static RUNNING: std::sync::Mutex<Running> = std::sync::Mutex::new(Running {
    wrappers: Vec::new(),
    cancelled: std::collections::VecDeque::new(),
});

/// See [`RUNNING`].
struct Running {
    /// (owner, wrapper PID).
    wrappers: Vec<(String, i32)>,
    /// Owners cancelled while no check of theirs ran, newest last, at most
    /// [`MAX_CANCELLED`]: a check that starts later for one of them does not run.
    cancelled: std::collections::VecDeque<String>,
}

/// How many cancelled owners [`RUNNING`] remembers; a cancel of a turn whose plan
/// needs no check leaves its owner there until pushed out.
const MAX_CANCELLED: usize = 64;

fn running() -> std::sync::MutexGuard<'static, Running> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills every running validation command with all its descendants, those that left
/// its process group included (at shutdown, so no check outlives bb7), then its
/// wrapper.
pub fn kill_running() {
    let wrappers: Vec<i32> = running().wrappers.iter().map(|(_, w)| *w).collect();
    for w in wrappers {
        super::descendants::kill_below(w, w);
    }
}

/// Kills the validation command of `owner` (the turn's request id) as
/// [`kill_running`] does, and only that one; when none runs yet, a check that would
/// start for `owner` later does not run (it fails as cancelled).
pub fn kill_running_for(owner: &str) {
    let wrappers: Vec<i32> = {
        let mut r = running();
        let mine: Vec<i32> = r
            .wrappers
            .iter()
            .filter(|(o, _)| o == owner)
            .map(|(_, w)| *w)
            .collect();
        if mine.is_empty() && !r.cancelled.iter().any(|o| o == owner) {
            if r.cancelled.len() >= MAX_CANCELLED {
                r.cancelled.pop_front();
            }
            r.cancelled.push_back(owner.to_owned());
        }
        mine
    };
    for w in wrappers {
        super::descendants::kill_below(w, w);
    }
}

/// Whether environment variable `name` is one the validation command must not see:
/// bb7's own keys and the model providers' (their API keys and tokens).
fn withheld(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "BB7_",
        "OPENROUTER_",
        "OPENAI_",
        "ANTHROPIC_",
        "GEMINI_",
        "GOOGLE_API",
        "MISTRAL_",
        "GROQ_",
        "DEEPSEEK_",
        "XAI_",
        "TOGETHER_",
        "AZURE_OPENAI",
        "COHERE_",
        "FIREWORKS_",
        "HF_",
        "HUGGINGFACE_",
        "OLLAMA_",
        "LLAMA_",
        "PERPLEXITY_",
        "CEREBRAS_",
    ];
    let upper = name.to_ascii_uppercase();
    PREFIXES.iter().any(|p| upper.starts_with(p))
        || [
            "_API_KEY",
            "_TOKEN",
            "_SECRET",
            "_SECRET_KEY",
            "_ACCESS_KEY",
        ]
        .iter()
        .any(|s| upper.ends_with(s))
}

/// Copies the regular files of `root` a walk finds into `to`.
fn copy_project(root: &Path, to: &Path) -> Result<(), String> {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(e.file_type().is_some_and(|t| t.is_dir()) && PROTECTED_DIRS.contains(&name.as_ref()))
        })
        .build();
    let mut bytes = 0u64;
    for entry in walker.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let dest = to.join(rel);
        if kind.is_dir() {
            std::fs::create_dir_all(&dest).map_err(|e| format!("cannot copy the project: {e}"))?;
        } else if kind.is_file() {
            bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
            if bytes > MAX_COPY_BYTES {
                return Err(format!(
                    "the project is over {} MiB, too large to copy",
                    MAX_COPY_BYTES / (1024 * 1024)
                ));
            }
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot copy the project: {e}"))?;
            }
            std::fs::copy(entry.path(), &dest)
                .map_err(|e| format!("cannot copy {}: {e}", rel.display()))?;
        }
    }
    Ok(())
}

/// Where bb7's own file cannot be found, the shell that runs the user's command
/// (`$1`) and stays until bb7 has killed what the command left. It prints the
/// command's exit status (128 + the signal number for a killed one) and waits for its
/// stdin to close. Everywhere else bb7 itself is the wrapper
/// ([`super::validate_runner`]), which also ends the check when bb7 dies. The
/// library's unit tests use the shell too: their binary is no bb7.
const WRAPPER: &str = "sh -c \"$1\" sh </dev/null >/dev/null 2>&1; echo \"$?\"; read _";

/// The wrapper's command line for the user's `command`: the runner
/// ([`super::validate_runner`]) on every Unix, else `sh -c WRAPPER`.
fn wrapper(command: &str) -> Command {
    #[cfg(not(test))]
    if let Some(exe) = runner_exe() {
        let mut cmd = Command::new(exe);
        cmd.arg(super::validate_runner::ARG).arg(command);
        return cmd;
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(WRAPPER).arg("bb7-validate").arg(command);
    cmd
}

/// This very binary. On Linux `/proc/self/exe`, which names it even when its file was
/// replaced since it started (proc(5)); elsewhere the path the OS reports
/// (`_NSGetExecutablePath` on macOS, `sysctl` `KERN_PROC_PATHNAME` on FreeBSD, through
/// [`std::env::current_exe`]), `None` when it reports none.
#[cfg(not(test))]
fn runner_exe() -> Option<std::path::PathBuf> {
    if cfg!(target_os = "linux") {
        Some("/proc/self/exe".into())
    } else {
        std::env::current_exe().ok()
    }
}

/// Runs `command` in `dir`, confined, with `tmp` as its `TMPDIR`, and waits at most
/// `timeout` for it; then kills every process it left. A check whose `owner` was
/// cancelled before it started does not run.
fn run(
    owner: &str,
    dir: &Path,
    tmp: &Path,
    command: &str,
    confinement: super::confine::Confinement,
    timeout: Duration,
) -> Validation {
    use std::os::unix::process::CommandExt;
    let mut cmd = wrapper(command);
    cmd.current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| !k.to_str().is_none_or(withheld)))
        .env("TMPDIR", tmp)
        .process_group(0);
    // SAFETY: the closure makes one prctl(2) call in the forked child before exec.
    unsafe {
        cmd.pre_exec(super::descendants::become_subreaper);
    }
    confinement.install(&mut cmd);
    let cancelled = |r: &mut Running| {
        let at = r.cancelled.iter().position(|o| o == owner);
        at.map(|i| r.cancelled.remove(i)).is_some()
    };
    if cancelled(&mut running()) {
        return Validation::failed("the turn was cancelled");
    }
    let child = cmd.spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Validation::failed(format!("cannot start the check: {e}")),
    };
    let wrapper = child.id() as i32;
    // A cancel between the check above and here finds no wrapper yet: it is seen now.
    let cancelled_now = {
        let mut r = running();
        r.wrappers.push((owner.to_owned(), wrapper));
        cancelled(&mut r)
    };
    let result = if cancelled_now {
        Validation::failed("the turn was cancelled")
    } else {
        wait(&mut child, timeout)
    };
    // Everything beneath the wrapper goes, whatever the command left running, then
    // the wrapper itself (its stdin closed, and killed should it not read it).
    super::descendants::kill_below(wrapper, wrapper);
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    running().wrappers.retain(|(_, w)| *w != wrapper);
    result
}

/// Waits at most `timeout` for the wrapper to print the command's exit status.
fn wait(child: &mut std::process::Child, timeout: Duration) -> Validation {
    use std::io::BufRead;
    let stdout = child.stdout.take();
    let (tx, rx) = std::sync::mpsc::channel();
    // The line arrives when the command ends; the reader ends at the latest when the
    // wrapper is killed after a timeout.
    std::thread::spawn(move || {
        let mut line = String::new();
        if let Some(out) = stdout {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let _ = tx.send(line);
    });
    match rx.recv_timeout(timeout) {
        Ok(line) => match line.trim().parse::<i32>() {
            Ok(0) => Validation {
                passed: true,
                detail: "exit status 0".into(),
                not_run_for: Vec::new(),
            },
            Ok(n) => Validation::failed(format!("exit status {n}")),
            Err(_) => Validation::failed("the command was stopped"),
        },
        Err(_) => Validation::failed(format!("did not finish within {} s", timeout.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command sees the proposal in a copy; the project itself is never touched,
    /// and a failing or hanging command fails the check.
    #[test]
    fn the_command_runs_on_a_copy_with_the_proposal() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "old\n").unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref\n").unwrap();
        let writes = BTreeMap::from([("a.txt".to_owned(), "new\n".to_owned())]);
        let ok = validate(
            "test",
            root,
            &writes,
            "grep -q new a.txt && test ! -e .git && echo x > made.txt",
            &[],
            VALIDATE_TIMEOUT,
        );
        assert!(ok.passed, "{ok:?}");
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "old\n"
        );
        assert!(!root.join("made.txt").exists());
        let bad = validate(
            "test",
            root,
            &writes,
            "grep -q old a.txt",
            &[],
            VALIDATE_TIMEOUT,
        );
        assert!(!bad.passed);
        let slow = validate(
            "test",
            root,
            &writes,
            "sleep 30",
            &[],
            Duration::from_millis(200),
        );
        assert!(
            !slow.passed && slow.detail.contains("did not finish"),
            "{slow:?}"
        );
    }
}
