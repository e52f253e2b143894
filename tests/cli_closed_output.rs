//! `bb7 … 2>&1 | head`: when the reader of bb7's output goes away, bb7 stops with the
//! documented status 141 (`bb7 --help`, "Exit status"), never a panic (101).

mod cli_support;
mod common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

use cli_support::*;
use common::fake_env;
use serde_json::json;

#[test]
fn output_to_a_closed_pipe_ends_with_status_141_not_a_panic() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors; each is owned once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fresh descriptors from pipe, owned here only.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // The reader is gone before bb7 writes anything, as `head` after its lines.
    drop(read);
    let mut child = command(&env, &env.project, &["rollback", "--last"])
        .stdout(Stdio::from(write.try_clone().unwrap()))
        .stderr(Stdio::from(write))
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let status = common::wait_with_timeout(&mut child);
    assert_eq!(status.code(), Some(141), "{status:?}");
}
