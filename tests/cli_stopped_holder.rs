//! A holder that is stopped (`bb7 chat` suspended with Ctrl-Z, an editor frozen in a
//! debugger) keeps its socket, whose connections the kernel still accepts, but never
//! answers: the commands beside it must not wait for it. Read-only ones read the chat
//! as it is on disk, the others exit 4 naming the holder (README, "One chat, many
//! front-ends").

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use serde_json::json;

const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";

/// Runs `bb7 ARGS` in the project, failing the test if it never ends (hang guard).
fn run(env: &common::Env, args: &[&str]) -> std::process::Output {
    let mut child = command(env, &env.project, args).spawn().unwrap();
    drop(child.stdin.take());
    let status = common::wait_with_timeout(&mut child);
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    std::process::Output {
        status,
        stdout: out.into_bytes(),
        stderr: err.into_bytes(),
    }
}

#[test]
fn commands_beside_a_stopped_holder_read_from_disk_or_exit_4_instead_of_waiting() {
    let (env, _fake) = fake_env(json!({}));
    env.write("f.txt", TEN);
    env.write("g.txt", TEN);
    let (mut editor, id) = env.with_chat();
    editor.ok(json!({"action": "context_add", "path": "f.txt", "content": TEN}));
    assert!(env.chat_dir(&id).join("holder.sock").exists());
    let pid = editor.child.id() as i32;
    // SAFETY: signals a child this test started; SIGCONT below resumes it.
    unsafe { libc::kill(pid, libc::SIGSTOP) };

    let o = run(&env, &["status"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("f.txt"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("read as it is on disk"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains(&pid.to_string()),
        "names the holder: {}",
        stderr(&o)
    );

    let o = run(&env, &["add", "g.txt"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("PID {pid}")), "{}", stderr(&o));

    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    // Resumed, the holder answers again and serves the change.
    ok(&env, &["add", "g.txt"]);
    let list = editor.ok(json!({"action": "context_list"}));
    assert!(list.to_string().contains("g.txt"), "{list}");
}
