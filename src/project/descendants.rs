//! Every descendant of a process, found and killed, including those that left its
//! process group (`setsid`, a double fork). On Linux the validation command's wrapper
//! shell is made a child subreaper (prctl(2), `PR_SET_CHILD_SUBREAPER`): a process
//! orphaned beneath it is re-parented to it instead of to init, so the tree under the
//! wrapper, read from `/proc/<pid>/stat` (proc(5)), holds every process the command
//! started until the wrapper itself goes. Elsewhere only the process group is killed.

/// Most rounds of [`kill_below`]: each round kills what the previous one's victims
/// left (their orphans come up to the subreaper); a fork loop faster than the rounds
/// is cut off there rather than holding bb7.
const MAX_ROUNDS: usize = 200;

/// Makes the calling process a child subreaper. Only system calls: safe between
/// `fork` and `exec` (`CommandExt::pre_exec`). The attribute survives `execve`.
pub fn become_subreaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes a plain integer argument.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sends SIGKILL to every live descendant of `root` (not `root` itself), round after
/// round until none is left, and to `group`'s process group. Returns how many
/// processes were signalled. Errors of single processes (one already gone) are
/// ignored: the next round sees what is still there.
pub fn kill_below(root: i32, group: i32) -> usize {
    let mut killed = 0;
    // The tree first: the group holds `root`, whose death would send the orphans
    // beneath it to init, out of reach.
    for _ in 0..MAX_ROUNDS {
        let live = descendants(root);
        if live.is_empty() {
            break;
        }
        for pid in &live {
            // SAFETY: as above, for one process id.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        killed += live.len();
        // A killed process's orphans come up to the subreaper as it exits.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // SAFETY: kill(2) with a negated process group id has no memory effects.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
    killed
}

/// The live (not zombie) descendants of `root`, from each process's parent in
/// `/proc/<pid>/stat`. Empty where there is no `/proc`.
pub fn descendants(root: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, parent, live)
    let table: Vec<(i32, i32, bool)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The name in parentheses may hold spaces and parentheses: the fields
            // after it start after the last ')'.
            let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
            let state = rest.next()?;
            let parent = rest.next()?.parse().ok()?;
            Some((pid, parent, !matches!(state, "Z" | "X" | "x")))
        })
        .collect();
    let mut seen = std::collections::HashSet::from([root]);
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, p, live) in &table {
            if p == parent && seen.insert(pid) {
                frontier.push(pid);
                if live {
                    found.push(pid);
                }
            }
        }
    }
    found
}
