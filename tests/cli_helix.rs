//! The Helix recipe (editors/helix/README.md) works as written: this test reads the
//! `:sh` commands of its key map and the lines of its shell blocks from the README and
//! runs exactly those through `sh -c`, with `bb7` on PATH and a fake model.

mod cli_support;
mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use cli_support::lossy;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const README: &str = include_str!("../editors/helix/README.md");
const LIB: &str = "pub fn parse(s: &str) -> u32 {\n    s.parse().unwrap()\n}\n\npub fn twice(n: u32) -> u32 {\n    n * 2\n}\n";

/// The fenced blocks of `lang` in the README, in order, as lists of lines.
fn blocks(lang: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in README.lines() {
        match &mut current {
            None if line.trim() == format!("```{lang}") => current = Some(Vec::new()),
            Some(b) if line.trim() == "```" => {
                out.push(std::mem::take(b));
                current = None;
            }
            Some(b) => b.push(line.to_owned()),
            None => {}
        }
    }
    out
}

/// Key → the shell command of its first `:sh` in the key map.
fn keymap() -> HashMap<String, String> {
    let mut keys = HashMap::new();
    for line in &blocks("toml")[0] {
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        // Helix's `:sh` returns before the command ends and `:reload-all` discards
        // unsaved changes: no key may run both (editors/helix/README.md).
        assert!(
            !(value.contains(":sh ") && value.contains(":reload")),
            "{key} reloads after :sh: {value}"
        );
        let Some(start) = value.find("\":sh ").map(|i| i + 5) else {
            continue;
        };
        let rest = &value[start..];
        let end = rest.find("\"").unwrap();
        keys.insert(key.trim().to_owned(), rest[..end].to_owned());
    }
    keys
}

struct Shell {
    path: String,
    env: common::Env,
}

impl Shell {
    #[track_caller]
    fn run(&self, dir: &Path, cmd: &str) -> (String, String) {
        let o = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(dir)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.env.home)
            .env("XDG_CONFIG_HOME", self.env.home.join(".config"))
            .output()
            .unwrap();
        let (out, err) = (lossy(&o.stdout), lossy(&o.stderr));
        assert!(o.status.success(), "`{cmd}` failed:\n{out}{err}");
        (out, err)
    }

    #[track_caller]
    fn key(&self, keys: &HashMap<String, String>, key: &str) -> (String, String) {
        let cmd = keys[key].replace("%{buffer_name}", "src/lib.rs");
        self.run(&self.env.project, &cmd)
    }
}

fn edits_two_lines(fake: &FakeModel) {
    fake.push_sse(response(
        "",
        "parse() unwraps; two changes.",
        vec![(
            "edit_file",
            json!({"path": "src/lib.rs", "edits": [
                {"old_string": "s.parse().unwrap()", "new_string": "s.parse().unwrap_or(0)"},
                {"old_string": "n * 2", "new_string": "n + n"}]}),
        )],
    ));
}

#[test]
fn the_helix_recipe_runs_as_documented() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/lib.rs", LIB);
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_bb7")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = Shell { path, env };
    let env = &sh.env;
    let keys = keymap();
    let sh_blocks = blocks("sh");
    let (asking, reviewing) = (&sh_blocks[0], &sh_blocks[1]);
    let subdir = env.project.join("src");

    sh.key(&keys, "i");
    sh.key(&keys, "a");
    sh.key(&keys, "a"); // adding again refreshes (and may not fail)
    assert!(sh.key(&keys, "s").0.contains("src/lib.rs"));

    // Asking, from a subdirectory.
    edits_two_lines(&fake);
    let (out, _) = sh.run(&subdir, &asking[0]);
    assert!(out.contains("two changes"), "{out}");
    fake.push_sse(response(
        "",
        "",
        vec![("read_file", json!({"path": "src/lib.rs"}))],
    ));
    fake.push_sse(response("", "It is loaded nowhere.", vec![]));
    let (out, err) = sh.run(&subdir, &asking[1]);
    assert!(out.contains("loaded nowhere"), "{out}");
    assert!(err.contains("Read src/lib.rs"), "{err}");
    assert_eq!(sh.run(&subdir, &asking[2]).0, "It is loaded nowhere.\n");
    assert!(sh.key(&keys, "d").0.contains("+    s.parse().unwrap_or(0)"));

    // Reviewing: accept the first hunk, reject the other.
    let (listing, _) = sh.run(&env.project, &reviewing[0]);
    assert!(
        listing.contains("unwrap_or(0)") && listing.contains("n + n"),
        "{listing}"
    );
    sh.run(&env.project, &reviewing[1]);
    sh.run(&env.project, &reviewing[2]);
    let first = LIB.replace("s.parse().unwrap()", "s.parse().unwrap_or(0)");
    assert_eq!(env.read("src/lib.rs"), first);

    // Apply another answer, list checkpoints, undo the last one.
    fake.push_sse(response(
        "",
        "Doubled.",
        vec![(
            "edit_file",
            json!({"path": "src/lib.rs", "edits": [{"old_string": "n * 2", "new_string": "2 * n"}]}),
        )],
    ));
    sh.run(&subdir, &asking[0]);
    sh.key(&keys, "p");
    assert_eq!(env.read("src/lib.rs"), first.replace("n * 2", "2 * n"));
    assert_eq!(sh.key(&keys, "c").0.lines().count(), 2);
    sh.key(&keys, "u");
    assert_eq!(env.read("src/lib.rs"), first);
    // `u` again undoes the apply before it (the accepted hunk), never re-applies.
    sh.key(&keys, "u");
    assert_eq!(env.read("src/lib.rs"), LIB);
    // `r` on the file in context makes it read-only for the model.
    let (_, err) = sh.key(&keys, "r");
    assert!(err.contains("now read-only"), "{err}");
}
