//! The validation command opens no socket (src/project/confine_seccomp.rs; README,
//! "Local, remote and hybrid"): a script the command runs tries to connect to a Unix
//! socket the test listens on outside the scratch copy, to send a UDP datagram to a
//! loopback port the test listens on, and to connect to the running bb7's own holder
//! socket, found by the real project's absolute path; it also tries `io_uring_setup(2)`,
//! which could make a socket past the filter, a datagram `socketpair(2)` sending to a
//! datagram socket at a path (refused), and a stream pair, which must work. Each attempt is written down by the
//! script (so the test knows it was made and how it failed), and the listeners see
//! nothing. Skipped, with a note, where the kernel has no seccomp.

mod common;

use std::io::ErrorKind;
use std::os::unix::net::{UnixDatagram, UnixListener};

use common::fake_model::*;
use common::{Bb7, Env};
use serde_json::json;

/// Each attempt prints `NAME ok` or `NAME errno=N` to `report`; `found=N` counts the
/// holder sockets it found, so an empty search cannot pass for a refusal.
const PROBE: &str = r#"
import ctypes, glob, os, socket, sys
report, unix_path, udp_port, project, dgram_path = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
lines = []
def attempt(name, f):
    try:
        f()
        lines.append(name + " ok")
    except OSError as e:
        lines.append("%s errno=%d" % (name, e.errno))
def unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"leak", ("127.0.0.1", udp_port))
def pair():
    a, b = socket.socketpair()
    a.send(b"x")
    assert b.recv(1) == b"x"
def dgram_pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"leak", dgram_path)
attempt("unix", lambda: unix(unix_path))
attempt("udp", udp)
attempt("socketpair", pair)
attempt("dgram_pair", dgram_pair)
def io_uring():
    # io_uring_setup(2) is number 425 on x86_64 and aarch64 alike.
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    if libc.syscall(425, 4, params) < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
attempt("io_uring", io_uring)
holders = glob.glob(os.path.join(project, ".bb7", "**", "holder.sock"), recursive=True)
lines.append("found=%d" % len(holders))
for h in holders:
    attempt("holder", lambda: unix(h))
open(report, "w").write("\n".join(lines) + "\n")
"#;

/// Whether this kernel filters system calls: `/proc/self/status` has a `Seccomp:` line
/// only where it was built with seccomp (proc(5)).
fn kernel_has_seccomp() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
        .unwrap_or(false)
}

#[test]
fn the_validation_command_reaches_no_unix_socket_no_udp_port_and_no_holder() {
    if !kernel_has_seccomp() {
        eprintln!("skipped: this kernel has no seccomp, the socket filter is not installed");
        return;
    }
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("import socket")
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        eprintln!("skipped: no python3 to run the probe");
        return;
    }
    let env = Env::new();
    let (local, remote) = (FakeModel::start(), FakeModel::start());
    let out = env.home.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let probe = env.home.join("probe.py");
    std::fs::write(&probe, PROBE).unwrap();
    // Outside the scratch copy and the project, as `$SSH_AUTH_SOCK` would be.
    let unix_path = env.home.join("agent.sock");
    let unix_listener = UnixListener::bind(&unix_path).unwrap();
    unix_listener.set_nonblocking(true).unwrap();
    // A datagram socket at a path (as /dev/log is), which a datagram pair could reach.
    let dgram_path = env.home.join("log.sock");
    let dgram = UnixDatagram::bind(&dgram_path).unwrap();
    dgram.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let report = out.join("report");
    env.write_config(json!({
        "providers": {
            "local": {"base_url": local.url, "model": "qwen2.5-coder:14b"},
            "remote": {"base_url": remote.url, "model": "anthropic/claude-sonnet-4.5", "api_key": "rk"}
        },
        "agent_mode": "hybrid_auto",
        "hybrid_validate_command": format!(
            "python3 {} {} {} {} {} {}",
            probe.display(),
            report.display(),
            unix_path.display(),
            udp_port,
            env.project.display(),
            dgram_path.display()
        ),
        "hybrid_validate_writable": [out],
        "retry_backoff_ms": 10
    }));
    local.push_sse(response(
        "",
        "local edit",
        vec![("write_file", json!({"path": "src/a.txt", "content": "a\n"}))],
    ));
    remote.push_sse(response("", "remote answer", vec![]));
    let mut b = Bb7::spawn(&env.home, &env.project, &[("BB7_DEBUG", "0")]);
    b.ok(json!({"action": "bb7_init", "project_root": env.project}));
    b.ok(json!({"action": "chat_new"}));
    // The holder socket is bound right after the reply to `chat_new`: one more round trip.
    b.ok(json!({"action": "ping"}));
    let end = b.turn("change it");
    assert_eq!(end["type"], "done", "{end}");

    let report = std::fs::read_to_string(&report).expect("the probe ran and wrote its report");
    let eacces = format!("errno={}", libc::EACCES);
    let line = |name: &str| -> Vec<&str> {
        report
            .lines()
            .filter(|l| l.split(' ').next() == Some(name))
            .collect()
    };
    assert_eq!(line("unix"), [format!("unix {eacces}")], "{report}");
    assert_eq!(line("udp"), [format!("udp {eacces}")], "{report}");
    assert_eq!(line("socketpair"), ["socketpair ok"], "{report}");
    assert_eq!(
        line("dgram_pair"),
        [format!("dgram_pair {eacces}")],
        "{report}"
    );
    assert_eq!(line("io_uring"), [format!("io_uring {eacces}")], "{report}");
    assert!(
        report.lines().any(|l| l == "found=1"),
        "the probe found the running bb7's holder socket: {report}"
    );
    assert_eq!(line("holder"), [format!("holder {eacces}")], "{report}");

    match unix_listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the Unix listener was reached: {other:?}"),
    }
    let mut buf = [0u8; 16];
    match udp.recv_from(&mut buf) {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a datagram arrived: {other:?}"),
    }
    match dgram.recv(&mut buf) {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("a datagram reached the Unix path: {other:?}"),
    }
}
