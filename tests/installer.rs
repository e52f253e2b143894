//! scripts/install.sh against a release folder served on 127.0.0.1: the archive is built
//! from the debug `bb7` in the layout dist-workspace.toml makes
//! (`bb7-<target>.tar.xz` holding `bb7-<target>/bb7`, with `<archive>.sha256`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-musl",
        ("linux", "aarch64") => "aarch64-unknown-linux-musl",
        ("macos", "x86_64") => "x86_64-apple-darwin",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        other => panic!("no release target for {other:?}"),
    }
}

/// A release folder: the archive of the debug binary and its checksum file.
fn release(dir: &Path) -> PathBuf {
    let name = format!("bb7-{}", target());
    let stage = dir.join("stage").join(&name);
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_bb7"), stage.join("bb7")).unwrap();
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
fn serve(root: PathBuf) -> String {
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

fn install(url: &str, dir: &Path) -> Output {
    Command::new("sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh"))
        .arg("--to")
        .arg(dir)
        .env("BB7_DOWNLOAD_URL", url)
        .env_remove("BB7_INSTALL_DIR")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn installs_the_served_archive_into_the_chosen_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let url = serve(release(tmp.path()));
    let dir = tmp.path().join("my bin");
    let out = install(&url, &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("installed bb7"), "{}", stderr(&out));
    let version = Command::new(dir.join("bb7"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success());
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
}

#[test]
fn bb7_repository_points_at_a_forks_releases() {
    let tmp = tempfile::tempdir().unwrap();
    let release = release(tmp.path());
    // A fork's release folder as GitHub lays it out: REPO/releases/download/vX.Y.Z/.
    let site = tmp.path().join("site");
    let folder = site.join(format!(
        "me/bb7/releases/download/v{}",
        env!("CARGO_PKG_VERSION")
    ));
    std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
    std::fs::rename(release, &folder).unwrap();
    let repo = format!("{}/me/bb7/", serve(site));
    let dir = tmp.path().join("bin");
    let out = Command::new("sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh"))
        .arg("--to")
        .arg(&dir)
        .env("BB7_REPOSITORY", &repo)
        .env_remove("BB7_DOWNLOAD_URL")
        .env_remove("BB7_INSTALL_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("downloading {repo}releases/download/v")),
        "{}",
        stderr(&out)
    );
    assert!(dir.join("bb7").exists());
}

#[test]
fn a_tampered_archive_is_refused_and_nothing_installed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = release(tmp.path());
    let archive = root.join(format!("bb7-{}.tar.xz", target()));
    let mut bytes = std::fs::read(&archive).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();
    let url = serve(root);
    let dir = tmp.path().join("bin");
    let out = install(&url, &dir);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("checksum mismatch"), "{err}");
    assert!(err.contains("nothing installed"), "{err}");
    assert!(!dir.join("bb7").exists());
}

#[test]
fn an_unreachable_server_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let dir = tmp.path().join("bin");
    let out = install(&url, &dir);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("could not download"), "{err}");
    assert!(err.contains(&url), "{err}");
    assert!(!dir.join("bb7").exists());
}

#[test]
fn the_installer_and_the_readme_name_this_version() {
    let version = env!("CARGO_PKG_VERSION");
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh"))
            .unwrap();
    assert!(
        script.contains(&format!("VERSION=\"${{BB7_VERSION:-{version}}}\"")),
        "scripts/install.sh's default version"
    );
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let pinned: Vec<&str> = readme
        .match_indices("/releases/download/v")
        .map(|(i, _)| &readme[i..])
        .collect();
    assert!(!pinned.is_empty());
    for p in pinned {
        assert!(
            p.starts_with(&format!("/releases/download/v{version}/")),
            "README: {}",
            &p[..40]
        );
    }
}
