//! Which of a proposal's files the validation command itself would run or read as
//! instructions: the project files it runs (`./check.sh`, `sh ci/check.sh`, `python
//! tools/lint.py`), the files those scripts run in turn, and the build files of the
//! tools it calls (`make` reads `Makefile`, `cargo` runs `build.rs`, `npm` runs the scripts of
//! `package.json`, …, as each tool's own documentation says). The validation does not
//! run when the model changed one of them (README, "Local, remote and hybrid"): its
//! verdict would come from code the model wrote and no one reviewed.
//!
//! A heuristic on the command's text, not a parse of the shell: a command that reaches
//! a file by a name built at run time (`$(ls)`, globs), or runs one through a program
//! bb7 does not know (`xargs` with a list from a file), is not caught.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The build files a tool reads when the command calls it by that name.
const TOOL_FILES: &[(&str, &[&str])] = &[
    ("make", &["Makefile", "makefile", "GNUmakefile"]),
    ("gmake", &["Makefile", "makefile", "GNUmakefile"]),
    (
        "cargo",
        &[
            "Cargo.toml",
            "build.rs",
            ".cargo/config.toml",
            ".cargo/config",
            "rust-toolchain.toml",
            "rust-toolchain",
        ],
    ),
    ("npm", &["package.json", ".npmrc"]),
    ("npx", &["package.json", ".npmrc"]),
    ("yarn", &["package.json", ".yarnrc", ".yarnrc.yml"]),
    ("pnpm", &["package.json", ".npmrc"]),
    ("bun", &["package.json", "bunfig.toml"]),
    ("just", &["justfile", "Justfile", ".justfile"]),
    ("tox", &["tox.ini", "pyproject.toml", "setup.cfg"]),
    (
        "pytest",
        &[
            "conftest.py",
            "pytest.ini",
            "pyproject.toml",
            "setup.cfg",
            "tox.ini",
        ],
    ),
    ("go", &["go.mod"]),
    ("mvn", &["pom.xml"]),
    (
        "gradle",
        &[
            "build.gradle",
            "build.gradle.kts",
            "settings.gradle",
            "settings.gradle.kts",
        ],
    ),
    ("cmake", &["CMakeLists.txt"]),
    ("meson", &["meson.build"]),
    ("ninja", &["build.ninja"]),
    ("rake", &["Rakefile"]),
    ("bundle", &["Gemfile"]),
];

/// Programs that run the file named by their first argument that is not an option.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "fish", "source", ".", "python", "python3", "node", "deno",
    "bun", "perl", "ruby", "php", "lua", "tclsh", "Rscript", "awk", "make", "just",
];

/// Programs that run the command that follows them (`env X=1 ./check.sh`).
const WRAPPERS: &[&str] = &[
    "env", "exec", "time", "nice", "nohup", "timeout", "xargs", "command", "builtin", "eval",
];

/// How deep scripts naming scripts are followed (the command is depth 0).
const MAX_DEPTH: usize = 3;

/// Most bytes of one script read for the names it holds.
const MAX_SCRIPT_BYTES: u64 = 1024 * 1024;

/// The paths of `writes` (project-relative path → proposed content) that `command`,
/// run at `root`, would run or read as instructions, sorted. Scripts are read as
/// proposed when the proposal changes them, else from the project. A file the
/// command only reads as data (`grep x src/main.rs`) does not count: checking the
/// proposal's files is what the command is for.
pub fn changed_files_run(
    command: &str,
    root: &Path,
    writes: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut hits = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut queue = vec![(command.to_owned(), 0usize)];
    while let Some((text, depth)) = queue.pop() {
        for word in programs(&text) {
            let mut named: Vec<String> = vec![word.trim_start_matches("./").to_owned()];
            let tool = word.rsplit('/').next().unwrap_or(word);
            if let Some((_, files)) = TOOL_FILES.iter().find(|(t, _)| *t == tool) {
                named.extend(files.iter().map(|f| (*f).to_owned()));
            }
            for rel in named {
                if rel.is_empty() || rel.starts_with('/') || rel.split('/').any(|c| c == "..") {
                    continue;
                }
                if writes.contains_key(&rel) {
                    hits.insert(rel.clone());
                }
                if depth < MAX_DEPTH
                    && seen.insert(rel.clone())
                    && let Some(text) = script_text(root, &rel, writes)
                {
                    queue.push((text, depth + 1));
                }
            }
        }
    }
    hits.into_iter().collect()
}

/// The words of shell text that name a program run or a script an interpreter runs:
/// each simple command's first word (after variable assignments and wrappers such
/// as `env`), and, after an interpreter, its first argument that is no option.
fn programs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for simple in text.split(|c: char| ";&|()\n`{}".contains(c)) {
        let mut words = simple
            .split(|c: char| c.is_whitespace() || "'\"<>$".contains(c))
            .filter(|w| !w.is_empty());
        let mut after_interpreter = false;
        for w in words.by_ref() {
            if w.contains('=') && !after_interpreter {
                continue;
            }
            let name = w.rsplit('/').next().unwrap_or(w);
            if after_interpreter {
                if w.starts_with('-') {
                    continue;
                }
                out.push(w);
                break;
            }
            if WRAPPERS.contains(&name)
                || w.starts_with('-')
                || w.chars().all(|c| c.is_ascii_digit() || ".smhd".contains(c))
            {
                continue;
            }
            out.push(w);
            if INTERPRETERS.contains(&name) {
                after_interpreter = true;
                continue;
            }
            break;
        }
    }
    out
}

/// The text of `rel` as the command would see it: proposed, or else the project's
/// regular file (not over [`MAX_SCRIPT_BYTES`], UTF-8 only; binaries name nothing
/// we follow).
fn script_text(root: &Path, rel: &str, writes: &BTreeMap<String, String>) -> Option<String> {
    if let Some(text) = writes.get(rel) {
        return Some(text.clone());
    }
    let path = root.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SCRIPT_BYTES {
        return None;
    }
    String::from_utf8(std::fs::read(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripts named by the command, scripts those name, and a tool's build file
    /// count; a changed file the command never reaches does not.
    #[test]
    fn the_files_the_command_reaches() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("ci")).unwrap();
        std::fs::write(root.join("ci/check.sh"), "set -e\nsh ci/helper.sh\n").unwrap();
        let writes: BTreeMap<String, String> = [
            ("ci/helper.sh", "exit 0\n"),
            ("Makefile", "all:\n"),
            ("src/main.rs", "fn main() {}\n"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
        assert_eq!(
            changed_files_run("sh ./ci/check.sh && make test", root, &writes),
            vec!["Makefile".to_owned(), "ci/helper.sh".to_owned()]
        );
        assert!(changed_files_run("/usr/bin/true", root, &writes).is_empty());
        assert!(changed_files_run("grep -q x src/main.rs", root, &writes).is_empty());
        assert_eq!(
            changed_files_run("X=1 env Y=2 timeout 10 bash -e src/main.rs", root, &writes),
            vec!["src/main.rs".to_owned()]
        );
    }
}
