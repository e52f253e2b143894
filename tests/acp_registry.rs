//! The ACP Registry entry (packaging/acp-registry/bb7/) passes the registry's checks,
//! run by tests/acp_registry_check.py (Python `jsonschema`, installed by .ci/run):
//! its schema, the id naming the folder, archives pinned to this version, a 16x16
//! currentColor icon. Broken copies are refused, so the check can fail.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the check on `dir`; returns (passed, printed problems).
fn check(dir: &Path) -> (bool, String) {
    let out = Command::new("python3")
        .arg(root().join("tests/acp_registry_check.py"))
        .arg(dir)
        .arg(root().join("tests/fixtures/acp-registry/agent.schema.json"))
        .arg(env!("CARGO_PKG_VERSION"))
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named"),
        "install jsonschema (python3 -m pip install jsonschema): {stderr}"
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &stderr,
    )
}

/// A copy of the entry in a folder named `bb7`, with `edit` applied to its agent.json
/// text and `icon` replacing the icon when given.
fn copy(tmp: &Path, edit: impl Fn(String) -> String, icon: Option<&str>) -> PathBuf {
    let dir = tmp.join("bb7");
    std::fs::create_dir_all(&dir).unwrap();
    let src = root().join("packaging/acp-registry/bb7");
    let json = std::fs::read_to_string(src.join("agent.json")).unwrap();
    std::fs::write(dir.join("agent.json"), edit(json)).unwrap();
    let svg = match icon {
        Some(svg) => svg.to_string(),
        None => std::fs::read_to_string(src.join("icon.svg")).unwrap(),
    };
    std::fs::write(dir.join("icon.svg"), svg).unwrap();
    dir
}

#[test]
fn the_entry_passes_the_registry_checks() {
    let (ok, out) = check(&root().join("packaging/acp-registry/bb7"));
    assert!(ok, "{out}");
}

#[test]
fn the_entry_runs_bb7_acp_from_each_release_archive() {
    let text =
        std::fs::read_to_string(root().join("packaging/acp-registry/bb7/agent.json")).unwrap();
    let entry: serde_json::Value = serde_json::from_str(&text).unwrap();
    let binary = entry["distribution"]["binary"].as_object().unwrap();
    // The platforms dist-workspace.toml builds; Windows is not one (README, Install).
    let mut platforms: Vec<&str> = binary.keys().map(String::as_str).collect();
    platforms.sort_unstable();
    assert_eq!(
        platforms,
        [
            "darwin-aarch64",
            "darwin-x86_64",
            "linux-aarch64",
            "linux-x86_64"
        ]
    );
    let dist = std::fs::read_to_string(root().join("dist-workspace.toml")).unwrap();
    for (_, target) in binary {
        let archive = target["archive"].as_str().unwrap();
        let name = archive.rsplit('/').next().unwrap();
        let triple = name
            .strip_prefix("bb7-")
            .and_then(|n| n.strip_suffix(".tar.xz"))
            .unwrap();
        assert!(
            dist.contains(&format!("\"{triple}\"")),
            "{triple} is a dist target"
        );
        assert_eq!(
            target["cmd"],
            format!("./bb7-{triple}/bb7"),
            "dist's archive layout"
        );
        assert_eq!(target["args"], serde_json::json!(["acp"]));
    }
}

/// A change to agent.json's text.
type Edit = Box<dyn Fn(String) -> String>;

#[test]
fn broken_entries_are_refused() {
    let version = env!("CARGO_PKG_VERSION");
    let cases: Vec<(&str, Edit, Option<&str>)> = vec![
        (
            "uses /latest/",
            Box::new(move |j: String| {
                j.replace(&format!("/download/v{version}/"), "/latest/download/")
            }),
            None,
        ),
        (
            "schema: distribution/binary",
            Box::new(|j: String| j.replace("\"darwin-x86_64\"", "\"macos-x86_64\"")),
            None,
        ),
        (
            "is not the crate's",
            Box::new(move |j: String| j.replace(version, "9.9.9")),
            None,
        ),
        (
            "hardcoded colour",
            Box::new(|j| j),
            Some(
                r##"<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><path fill="#ff0000" d="M0 0h16v16H0z"/></svg>"##,
            ),
        ),
        (
            "not 16x16",
            Box::new(|j| j),
            Some(
                r#"<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24"><path fill="currentColor" d="M0 0h24v24H0z"/></svg>"#,
            ),
        ),
    ];
    for (want, edit, icon) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = copy(tmp.path(), edit, icon);
        let (ok, out) = check(&dir);
        assert!(!ok, "{want}: accepted");
        assert!(out.contains(want), "{want}: {out}");
    }
}
