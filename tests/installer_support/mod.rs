//! A fake release for the installer tests: the debug `bb7` packed as dist-workspace.toml
//! names it (`bb7-<target>.tar.xz` holding `bb7-<target>/bb7`, with `<archive>.sha256`),
//! served over HTTP on 127.0.0.1.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The release target of this machine, as dist-workspace.toml names it.
pub fn target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-musl",
        ("linux", "aarch64") => "aarch64-unknown-linux-musl",
        ("macos", "x86_64") => "x86_64-apple-darwin",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        other => panic!("no release target for {other:?}"),
    }
}

/// A release folder (`dir`/release): the archive of the debug binary and its checksum file.
#[allow(dead_code)] // tests/installer_user.rs uses the small one
pub fn release(dir: &Path) -> PathBuf {
    packed(dir, &std::fs::read(env!("CARGO_BIN_EXE_bb7")).unwrap())
}

/// Like `release`, with a small `bb7` that runs the debug binary: the same layout in a
/// few bytes, for tests that install many times.
#[allow(dead_code)] // not every test file installs many times
pub fn small_release(dir: &Path) -> PathBuf {
    let script = format!("#!/bin/sh\nexec '{}' \"$@\"\n", env!("CARGO_BIN_EXE_bb7"));
    packed(dir, script.as_bytes())
}

fn packed(dir: &Path, bin: &[u8]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let name = format!("bb7-{}", target());
    let stage = dir.join("stage").join(&name);
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::write(stage.join("bb7"), bin).unwrap();
    std::fs::set_permissions(stage.join("bb7"), std::fs::Permissions::from_mode(0o755)).unwrap();
    for f in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
        std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(f), stage.join(f)).unwrap();
    }
    let out = dir.join("release");
    std::fs::create_dir_all(&out).unwrap();
    let archive = format!("{name}.tar.xz");
    // The fastest xz preset: the debug binary is large and the format is what matters.
    let status = Command::new("tar")
        .env("XZ_OPT", "-0")
        .arg("-cJf")
        .arg(out.join(&archive))
        .arg("-C")
        .arg(dir.join("stage"))
        .arg(&name)
        .status()
        .unwrap();
    assert!(status.success());
    let sum = Command::new("sha256sum")
        .arg("-b")
        .arg(&archive)
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(sum.status.success());
    std::fs::write(out.join(format!("{archive}.sha256")), sum.stdout).unwrap();
    out
}

/// Serves `root` over HTTP/1.0 on 127.0.0.1 until the test process ends; returns the base URL.
pub fn serve(root: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // Drain the headers so curl does not see a reset.
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/");
            let file = root.join(path.trim_start_matches('/'));
            let reply = match std::fs::read(&file) {
                Ok(body) if !path.contains("..") => {
                    let mut r = format!(
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend(body);
                    r
                }
                _ => b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&reply);
        }
    });
    url
}
