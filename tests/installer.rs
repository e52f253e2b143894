//! scripts/install.sh against a release folder served on 127.0.0.1: the archive is built
//! from the debug `bb7` in the layout dist-workspace.toml makes
//! (`bb7-<target>.tar.xz` holding `bb7-<target>/bb7`, with `<archive>.sha256`).

mod installer_support;

use installer_support::{release, serve, target};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

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
