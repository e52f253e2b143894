//! One source of truth for where bb7 is published: Cargo.toml's `repository`. Every file
//! that builds a download or project URL from it names the same repository, so a publisher
//! (or a fork) changes Cargo.toml and the places this test lists (README, Install).

use std::path::Path;

/// The files that spell the repository out (each at least once).
const USERS: &[&str] = &[
    "scripts/install.sh",
    "lua/bb7/install.lua",
    "README.md",
    "packaging/acp-registry/bb7/agent.json",
];

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// Every `https://github.com/OWNER/bb7` in `text` (a GitHub repository named bb7), with
/// its line number.
fn github_bb7_urls(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for (i, _) in line.match_indices("https://github.com/") {
            let rest = &line[i..];
            let end = rest
                .find(|c: char| c.is_whitespace() || "\"'`)<>]}".contains(c))
                .unwrap_or(rest.len());
            let url = &rest[..end];
            let parts: Vec<&str> = url.trim_end_matches('/').split('/').collect();
            // https: / "" / github.com / OWNER / NAME / ...
            if parts.get(4) == Some(&"bb7") {
                found.push((n + 1, parts[..5].join("/")));
            }
        }
    }
    found
}

#[test]
fn the_repository_is_a_github_url() {
    let repo = env!("CARGO_PKG_REPOSITORY");
    let parts: Vec<&str> = repo.split('/').collect();
    assert_eq!(parts.len(), 5, "https://github.com/OWNER/NAME: {repo}");
    assert_eq!(&parts[..3], ["https:", "", "github.com"], "{repo}");
    // dist's generated workflow publishes to this repository's GitHub releases, and the
    // installer, :BB7Install and the registry entry read them from there.
    assert_eq!(parts[4], "bb7", "{repo}");
}

#[test]
fn every_file_names_cargo_tomls_repository() {
    let repo = env!("CARGO_PKG_REPOSITORY");
    let mut wrong = Vec::new();
    for path in USERS {
        let urls = github_bb7_urls(&read(path));
        assert!(
            !urls.is_empty(),
            "{path} names no repository: the list is stale"
        );
        for (line, url) in urls {
            if url != repo {
                wrong.push(format!("{path}:{line}: {url}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "not Cargo.toml's repository ({repo}):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn another_repository_is_caught() {
    // The scan itself: a fork's URL in a copy of the installer is found and named.
    let text = read("scripts/install.sh").replace(
        env!("CARGO_PKG_REPOSITORY"),
        "https://github.com/someone/bb7",
    );
    let urls = github_bb7_urls(&text);
    assert!(!urls.is_empty());
    assert!(
        urls.iter()
            .all(|(_, u)| u == "https://github.com/someone/bb7"),
        "{urls:?}"
    );
    // Other projects' URLs (lazy.nvim, dist) are not taken for bb7's.
    assert!(
        github_bb7_urls(
            "see https://github.com/folke/lazy.nvim and https://github.com/axodotdev/cargo-dist"
        )
        .is_empty()
    );
}

#[test]
fn the_default_urls_are_built_from_it() {
    let repo = env!("CARGO_PKG_REPOSITORY");
    assert!(
        read("scripts/install.sh").contains(&format!("REPO_URL=\"${{BB7_REPOSITORY:-{repo}}}\"")),
        "scripts/install.sh: BB7_REPOSITORY overrides Cargo.toml's repository"
    );
    assert!(
        read("lua/bb7/install.lua").contains(&format!("M.repository = '{repo}'")),
        "lua/bb7/install.lua: M.repository"
    );
    let entry: serde_json::Value =
        serde_json::from_str(&read("packaging/acp-registry/bb7/agent.json")).unwrap();
    assert_eq!(entry["repository"], repo);
    let version = env!("CARGO_PKG_VERSION");
    for (platform, target) in entry["distribution"]["binary"].as_object().unwrap() {
        let archive = target["archive"].as_str().unwrap();
        assert!(
            archive.starts_with(&format!("{repo}/releases/download/v{version}/")),
            "{platform}: {archive}"
        );
    }
}
