//! The validation command opens no socket (README, "Local, remote and hybrid"): on
//! Linux a seccomp filter refuses `socket(2)` of every family, so the command cannot
//! connect to a Unix socket by its path (bb7's own holder socket, an SSH agent), send
//! a UDP datagram, or reach a TCP port; `socketpair(2)` still joins its own processes.
//!
//! The command is a Python script that tries each and writes what happened into the
//! directory `hybrid_validate_writable` opens to it; the test reads that record, and
//! its listeners say whether anything arrived.

mod common;

use common::Bb7;
use common::validation::{SRC, hybrid_project};
use serde_json::{Value, json};
use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::Path;

/// Whether this kernel offers seccomp filters (the `Seccomp:` line of
/// /proc/self/status, proc(5)).
fn seccomp_offered() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
        .unwrap_or(false)
}

/// The script: each attempt's outcome (`"ok"` or the errno's name) by name, written
/// to `out/result.json`; the holder sockets under `project` are tried too.
fn script(out: &Path, unix_path: &Path, udp_port: u16, project: &Path) -> String {
    format!(
        r#"
import errno, glob, json, socket
def attempt(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b'{{"action":"ping"}}\n')
def udp_send():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"secret", ("127.0.0.1", {udp_port}))
def pair():
    a, b = socket.socketpair()
    a.sendall(b"x")
    assert b.recv(1) == b"x"
result = {{
    "unix": attempt(lambda: unix_connect("{unix}")),
    "udp": attempt(udp_send),
    "tcp": attempt(lambda: socket.create_connection(("127.0.0.1", {udp_port}), 2)),
    "socketpair": attempt(pair),
    "holders": [attempt(lambda p=p: unix_connect(p)) for p in glob.glob("{project}/.bb7/**/holder.sock", recursive=True)],
}}
json.dump(result, open("{out}/result.json", "w"))
"#,
        unix = unix_path.display(),
        project = project.display(),
        out = out.display(),
    )
}

#[test]
fn the_command_opens_no_socket_but_a_socketpair() {
    if !seccomp_offered() {
        eprintln!("skipped: this kernel offers no seccomp filters");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unix_path = dir.path().join("agent.sock");
    let listener = UnixListener::bind(&unix_path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let script_path = dir.path().join("probe.py");
    let (env, _local, _remote, out) =
        hybrid_project(|_| format!("python3 {}", script_path.display()), 1);
    std::fs::write(
        &script_path,
        script(&out, &unix_path, udp_port, &env.project),
    )
    .unwrap();
    let mut b = Bb7::spawn(&env.home, &env.project, &[("BB7_DEBUG", "0")]);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    env.add(&mut b, "src/main.rs", SRC);
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");
    let record = std::fs::read_to_string(out.join("result.json"))
        .unwrap_or_else(|e| panic!("the probe wrote no record ({e}); the turn ended {end}"));
    let result: Value = serde_json::from_str(&record).unwrap();
    eprintln!("{result}");
    assert_eq!(result["unix"], "EACCES", "a Unix socket by path: {result}");
    assert_eq!(result["udp"], "EACCES", "a UDP datagram: {result}");
    assert_eq!(result["tcp"], "EACCES", "a TCP connection: {result}");
    assert_eq!(result["socketpair"], "ok", "a socketpair: {result}");
    for holder in result["holders"].as_array().unwrap() {
        assert_eq!(holder, "EACCES", "bb7's holder socket: {result}");
    }
    let mut conn = listener.accept();
    if let Ok((stream, _)) = conn.as_mut() {
        let mut got = String::new();
        let _ = stream.read_to_string(&mut got);
        panic!("the command reached the Unix socket: {got:?}");
    }
    let mut buf = [0u8; 64];
    assert!(udp.recv(&mut buf).is_err(), "a datagram arrived");
}
