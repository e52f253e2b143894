//! scripts/install.sh as a new user runs it, against a fake release on 127.0.0.1: piped
//! from curl into a fresh HOME whose PATH lacks the target directory, over an older bb7,
//! twice, pinned to a version, on a platform without an archive, with a tampered archive
//! (nothing left behind, not even in $TMPDIR), and uninstalled. Every case runs under each
//! POSIX shell found here (`sh`, `dash`, `busybox sh`): the script must need no bash.

mod installer_support;

use installer_support::{serve, small_release as release, target};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh")
}

fn on_path(name: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join(name).is_file())
}

/// The shells to run the script with: `sh` always, then dash and busybox where installed.
fn shells() -> Vec<&'static str> {
    let mut found = vec!["sh"];
    if on_path("dash") {
        found.push("dash");
    }
    if on_path("busybox") {
        found.push("busybox sh");
    }
    found
}

/// A new user's environment: HOME and TMPDIR of their own, a system PATH (plus `extra`
/// first), nothing else inherited.
struct User {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    tmpdir: PathBuf,
    path: String,
}

impl User {
    fn new(extra: Option<&Path>) -> User {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let tmpdir = tmp.path().join("tmp");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&tmpdir).unwrap();
        let mut path = "/usr/local/bin:/usr/bin:/bin".to_string();
        if let Some(dir) = extra {
            path = format!("{}:{path}", dir.display());
        }
        User {
            _tmp: tmp,
            home,
            tmpdir,
            path,
        }
    }

    /// Runs `sh -c LINE` (LINE may name "$1"…) as this user.
    fn run(&self, line: &str, args: &[&str]) -> Output {
        Command::new("sh")
            .arg("-c")
            .arg(line)
            .arg("sh")
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmpdir)
            .env("PATH", &self.path)
            .output()
            .unwrap()
    }

    /// Runs the script with `shell` and `args`.
    fn install(&self, shell: &str, args: &[&str]) -> Output {
        let line = format!("{shell} \"$0\" \"$@\"");
        Command::new("sh")
            .arg("-c")
            .arg(line)
            .arg(script())
            .args(args)
            .env_clear()
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmpdir)
            .env("PATH", &self.path)
            .output()
            .unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn fake_bb7(path: &Path, version: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\necho \"bb7 {version}\"\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn bb7_version(path: &Path) -> String {
    let out = Command::new(path).arg("--version").output().unwrap();
    assert!(out.status.success(), "{} --version", path.display());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn piped_from_curl_into_a_fresh_home_it_installs_and_says_how_to_reach_it() {
    let tmp = tempfile::tempdir().unwrap();
    let rel = release(tmp.path());
    std::fs::copy(script(), rel.join("install.sh")).unwrap();
    let url = serve(rel);
    for shell in shells() {
        let user = User::new(None);
        let bin = user.home.join(".local/bin");
        assert!(!bin.exists());
        // No --to: the default directory, ~/.local/bin, made as needed.
        let line = format!("curl -fsSL \"$1/install.sh\" | {shell}");
        let out = user.run(
            &format!("BB7_DOWNLOAD_URL=\"$1\" && export BB7_DOWNLOAD_URL && {line}"),
            &[&url],
        );
        let err = stderr(&out);
        assert!(out.status.success(), "{shell}: {err}");
        assert!(err.contains("installed bb7"), "{shell}: {err}");
        assert!(
            err.contains(&format!("{} is not on your PATH", bin.display())),
            "{shell}: {err}"
        );
        assert!(err.contains("export PATH="), "{shell}: {err}");
        assert_eq!(
            bb7_version(&bin.join("bb7")),
            format!("bb7 {}", env!("CARGO_PKG_VERSION"))
        );
        // No shell profile touched, nothing left in TMPDIR, only bb7 in the directory.
        assert_eq!(entries(&user.home), vec![".local".to_string()], "{shell}");
        assert!(entries(&user.tmpdir).is_empty(), "{shell}");
        assert_eq!(entries(&bin), vec!["bb7".to_string()], "{shell}");

        // --help through the pipe, where the script has no file name.
        let out = user.run(
            &format!("curl -fsSL \"$1/install.sh\" | {shell} -s -- --help"),
            &[&url],
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(text.contains("--uninstall"), "{shell}: {text}");
    }
}

#[test]
fn over_an_older_bb7_and_twice_it_replaces_and_warns_of_one_earlier_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    let url = serve(release(tmp.path()));
    for shell in shells() {
        let scratch = tempfile::tempdir().unwrap();
        let earlier = scratch.path().join("earlier");
        fake_bb7(&earlier.join("bb7"), "0.0.8");
        let user = User::new(Some(&earlier));
        let bin = user.home.join("bin");
        fake_bb7(&bin.join("bb7"), "0.0.9");
        let path = format!("{}:{}", user.path, bin.display());
        let user = User { path, ..user };
        let args = [url.as_str(), "--to", bin.to_str().unwrap()];
        let line = format!(
            "BB7_DOWNLOAD_URL=\"$1\" && export BB7_DOWNLOAD_URL && shift && {shell} \"{}\" \"$@\"",
            script().display()
        );
        let out = user.run(&line, &args);
        let err = stderr(&out);
        assert!(out.status.success(), "{shell}: {err}");
        assert!(
            err.contains(&format!(
                "replaced bb7 0.0.9 with {}",
                env!("CARGO_PKG_VERSION")
            )),
            "{shell}: {err}"
        );
        assert!(
            err.contains(&format!(
                "warning: {} comes first on your PATH (bb7 0.0.8)",
                earlier.join("bb7").display()
            )),
            "{shell}: {err}"
        );
        // Again: the same result, nothing else in the directory.
        let out = user.run(&line, &args);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(stderr(&out).contains("installed bb7"), "{shell}");
        assert_eq!(entries(&bin), vec!["bb7".to_string()], "{shell}");
        assert_eq!(
            bb7_version(&bin.join("bb7")),
            format!("bb7 {}", env!("CARGO_PKG_VERSION"))
        );
        assert!(entries(&user.tmpdir).is_empty(), "{shell}");
    }
}

#[test]
fn a_version_or_tag_pin_fetches_that_release() {
    let tmp = tempfile::tempdir().unwrap();
    let rel = release(tmp.path());
    // A repository laid out as GitHub's, holding only v0.0.7.
    let site = tmp.path().join("site");
    let folder = site.join("me/bb7/releases/download/v0.0.7");
    std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
    std::fs::rename(rel, &folder).unwrap();
    let repo = format!("{}/me/bb7", serve(site));
    for shell in shells() {
        let user = User::new(None);
        let bin = user.home.join("bin");
        for pin in ["0.0.7", "v0.0.7"] {
            let line = format!(
                "BB7_REPOSITORY=\"$1\" && export BB7_REPOSITORY && shift && {shell} \"{}\" \"$@\"",
                script().display()
            );
            let out = user.run(
                &line,
                &[&repo, "--to", bin.to_str().unwrap(), "--version", pin],
            );
            let err = stderr(&out);
            assert!(out.status.success(), "{shell} {pin}: {err}");
            assert!(
                err.contains(&format!("downloading {repo}/releases/download/v0.0.7/")),
                "{shell} {pin}: {err}"
            );
        }
        // A version without a release says which one it looked for.
        let line = format!(
            "BB7_REPOSITORY=\"$1\" && export BB7_REPOSITORY && shift && {shell} \"{}\" \"$@\"",
            script().display()
        );
        let out = user.run(
            &line,
            &[&repo, "--to", bin.to_str().unwrap(), "--version", "9.9.9"],
        );
        let err = stderr(&out);
        assert!(!out.status.success(), "{shell}: {err}");
        assert!(err.contains("no release v9.9.9"), "{shell}: {err}");
        assert!(err.contains("nothing installed"), "{shell}: {err}");
        let out = user.install(shell, &["--version", "latest"]);
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("not a version: latest"),
            "{shell}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_tampered_archive_leaves_nothing_not_even_in_tmpdir() {
    let tmp = tempfile::tempdir().unwrap();
    let root = release(tmp.path());
    let archive = root.join(format!("bb7-{}.tar.xz", target()));
    let mut bytes = std::fs::read(&archive).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&archive, bytes).unwrap();
    let url = serve(root);
    for shell in shells() {
        let user = User::new(None);
        let bin = user.home.join("bin");
        let line = format!(
            "BB7_DOWNLOAD_URL=\"$1\" && export BB7_DOWNLOAD_URL && shift && {shell} \"{}\" \"$@\"",
            script().display()
        );
        let out = user.run(&line, &[&url, "--to", bin.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{shell}: {err}");
        assert!(err.contains("checksum mismatch"), "{shell}: {err}");
        assert!(err.contains("nothing installed"), "{shell}: {err}");
        assert!(entries(&bin).is_empty(), "{shell}: {:?}", entries(&bin));
        assert!(
            entries(&user.tmpdir).is_empty(),
            "{shell}: {:?}",
            entries(&user.tmpdir)
        );
    }
}

#[test]
fn without_the_archives_sha256_file_it_reads_sha256_sum_and_without_both_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let root = release(tmp.path());
    let archive = format!("bb7-{}.tar.xz", target());
    let sums = root.join(format!("{archive}.sha256"));
    let line = std::fs::read_to_string(&sums).unwrap();
    std::fs::remove_file(&sums).unwrap();
    // dist's sha256.sum: one "<hex>  <name>" line per archive, this one not first.
    let other = format!("{}  bb7-other.tar.xz\n", "0".repeat(64));
    std::fs::write(root.join("sha256.sum"), format!("{other}{line}")).unwrap();
    let url = serve(root.clone());
    let install = |user: &User, shell: &str| {
        let line = format!(
            "BB7_DOWNLOAD_URL=\"$1\" && export BB7_DOWNLOAD_URL && shift && {shell} \"{}\" \"$@\"",
            script().display()
        );
        user.run(
            &line,
            &[&url, "--to", user.home.join("bin").to_str().unwrap()],
        )
    };
    for shell in shells() {
        let user = User::new(None);
        let out = install(&user, shell);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(user.home.join("bin/bb7").exists(), "{shell}");
    }
    // A sha256.sum naming another hash for the archive: refused.
    let hex = line.split_whitespace().next().unwrap().to_string();
    std::fs::write(
        root.join("sha256.sum"),
        format!(
            "{}  {archive}\n",
            hex.replace(&hex[..1], if &hex[..1] == "a" { "b" } else { "a" })
        ),
    )
    .unwrap();
    for shell in shells() {
        let user = User::new(None);
        let out = install(&user, shell);
        assert!(!out.status.success(), "{shell}");
        assert!(
            stderr(&out).contains("checksum mismatch"),
            "{shell}: {}",
            stderr(&out)
        );
        assert!(!user.home.join("bin/bb7").exists(), "{shell}");
    }
    // Neither file: nothing can be verified, nothing installed.
    std::fs::remove_file(root.join("sha256.sum")).unwrap();
    for shell in shells() {
        let user = User::new(None);
        let out = install(&user, shell);
        let err = stderr(&out);
        assert!(!out.status.success(), "{shell}: {err}");
        assert!(err.contains("cannot verify the archive"), "{shell}: {err}");
        assert!(!user.home.join("bin/bb7").exists(), "{shell}");
        assert!(entries(&user.tmpdir).is_empty(), "{shell}");
    }
}

#[test]
fn a_platform_without_an_archive_is_named_and_windows_said_plainly() {
    for (system, machine, words) in [
        ("FreeBSD", "amd64", "no prebuilt bb7 for FreeBSD amd64"),
        ("Linux", "riscv64", "no prebuilt bb7 for Linux riscv64"),
        (
            "MINGW64_NT-10.0-19045",
            "x86_64",
            "bb7 does not run on Windows",
        ),
    ] {
        let fake = tempfile::tempdir().unwrap();
        let uname = fake.path().join("uname");
        std::fs::write(
            &uname,
            format!("#!/bin/sh\ncase \"$1\" in -m) echo {machine} ;; *) echo {system} ;; esac\n"),
        )
        .unwrap();
        std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).unwrap();
        for shell in shells() {
            let user = User::new(Some(fake.path()));
            let bin = user.home.join("bin");
            let out = user.install(shell, &["--to", bin.to_str().unwrap()]);
            let err = stderr(&out);
            assert!(!out.status.success(), "{shell}: {err}");
            assert!(err.contains(words), "{shell}: {err}");
            let fix = if system == "Linux" || system == "FreeBSD" {
                "cargo install --locked bb7"
            } else {
                "WSL"
            };
            assert!(err.contains(fix), "{shell}: {err}");
            assert!(!bin.join("bb7").exists());
        }
    }
}

#[test]
fn without_xz_for_gnu_tar_it_says_what_to_install_before_downloading() {
    let gnu = Command::new("tar")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU tar"));
    if !gnu {
        return;
    }
    // A PATH of the tools the script uses, without xz.
    let tools = tempfile::tempdir().unwrap();
    for tool in [
        "sh",
        "dash",
        "busybox",
        "uname",
        "curl",
        "mktemp",
        "awk",
        "tr",
        "sha256sum",
        "tar",
        "mkdir",
        "cp",
        "chmod",
        "mv",
        "rm",
        "cat",
        "grep",
    ] {
        let found = ["/usr/local/bin", "/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.is_file());
        if let Some(p) = found {
            std::os::unix::fs::symlink(p, tools.path().join(tool)).unwrap();
        }
    }
    for shell in shells() {
        let user = User::new(None);
        let user = User {
            path: tools.path().display().to_string(),
            ..user
        };
        let bin = user.home.join("bin");
        // Nothing listens here: the refusal must come before any download.
        let out = user.run(
            &format!(
                "BB7_DOWNLOAD_URL=http://127.0.0.1:9 {shell} \"{}\" --to \"$1\"",
                script().display()
            ),
            &[bin.to_str().unwrap()],
        );
        let err = stderr(&out);
        assert!(!out.status.success(), "{shell}: {err}");
        assert!(err.contains("xz is needed"), "{shell}: {err}");
        assert!(!err.contains("downloading"), "{shell}: {err}");
    }
}

#[test]
fn uninstall_removes_the_binary_and_names_what_it_keeps() {
    for shell in shells() {
        let user = User::new(None);
        let bin = user.home.join("bin");
        fake_bb7(&bin.join("bb7"), "0.1.0");
        let out = user.install(shell, &["--to", bin.to_str().unwrap(), "--uninstall"]);
        let err = stderr(&out);
        assert!(out.status.success(), "{shell}: {err}");
        assert!(
            err.contains(&format!("removed {}", bin.join("bb7").display())),
            "{shell}: {err}"
        );
        assert!(err.contains("~/.config/bb7/"), "{shell}: {err}");
        assert!(!bin.join("bb7").exists());
        // Again: nothing to remove, said so, not an error.
        let out = user.install(shell, &["--to", bin.to_str().unwrap(), "--uninstall"]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("no bb7 in"),
            "{shell}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn the_default_directory_is_the_one_dists_installer_uses() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("dist-workspace.toml"))
            .unwrap();
    let dist: toml::Table = toml::from_str(&text).unwrap();
    let paths = dist["dist"]["install-path"].as_array().unwrap();
    assert_eq!(
        paths.last().and_then(|p| p.as_str()),
        Some("~/.local/bin"),
        "dist's install-path falls back to ~/.local/bin"
    );
    assert_eq!(paths[0].as_str(), Some("$XDG_BIN_HOME/"));
    let script = std::fs::read_to_string(script()).unwrap();
    assert!(
        script.contains("DIR=\"${XDG_BIN_HOME:-${HOME:?set BB7_INSTALL_DIR or HOME}/.local/bin}\""),
        "scripts/install.sh's default directory"
    );
}

#[test]
fn shellcheck_finds_nothing_where_it_is_installed() {
    if !on_path("shellcheck") {
        return;
    }
    let out = Command::new("shellcheck")
        .args(["-s", "sh"])
        .arg(script())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn ctrl_c_while_downloading_stops_the_installer_and_removes_the_download() {
    use std::os::unix::process::CommandExt;
    // A server that accepts and never answers: the download hangs until interrupted.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    for shell in shells() {
        let user = User::new(None);
        let bin = user.home.join("bin");
        let mut argv: Vec<&str> = shell.split(' ').collect();
        let program = argv.remove(0);
        let mut cmd = Command::new(program);
        cmd.args(&argv)
            .arg(script())
            .args(["--to", bin.to_str().unwrap()])
            .env_clear()
            .env("HOME", &user.home)
            .env("TMPDIR", &user.tmpdir)
            .env("PATH", &user.path)
            .env("BB7_DOWNLOAD_URL", &url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            // Its own process group, as a terminal's foreground job, with SIGINT's default
            // action whatever this test inherited (a shell cannot trap a signal ignored
            // when it started).
            .process_group(0);
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        // The download has started once its folder exists (polls counted: a hang guard).
        let mut polls = 0;
        while entries(&user.tmpdir).is_empty() {
            polls += 1;
            if polls >= 6000 {
                unsafe {
                    libc::kill(-(child.id() as i32), libc::SIGKILL);
                }
                panic!("{shell}: the installer never started downloading");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Ctrl-C: SIGINT to the whole foreground group (the shell and its curl).
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGINT);
        }
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(!out.status.success(), "{shell}: {err}");
        assert!(
            !err.contains("could not download"),
            "{shell} carried on after Ctrl-C: {err}"
        );
        assert!(
            entries(&user.tmpdir).is_empty(),
            "{shell}: {:?}",
            entries(&user.tmpdir)
        );
        assert!(!bin.join("bb7").exists(), "{shell}");
    }
}
