//! A SEARCH/REPLACE block whose path has an emoji at the end of a directory name
//! (`notes🚀/todo.md`) changes that file: the directory is kept, and nothing lands at
//! the project's root.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

fn block_answer(path_line: &str) -> String {
    format!(
        "Done.\n\n{path_line}\n```\n<<<<<<< SEARCH\nold line\n=======\nnew line\n>>>>>>> REPLACE\n```\n"
    )
}

#[test]
fn a_block_path_whose_directory_ends_in_an_emoji_keeps_the_directory() {
    for path_line in [
        "notes🚀/todo.md",
        "`notes🚀/todo.md`",
        "**notes 📝/todo.md**",
    ] {
        let (env, fake) = fake_env(json!({"edit_format": "blocks"}));
        let path = path_line.trim_matches(['`', '*']);
        project_with(&env, &[(path, "old line\n")]);
        fake.push_sse(response("", &block_answer(path_line), vec![]));
        ok(&env, &["ask", "change it"]);
        let diff = stdout(&ok(&env, &["diff"]));
        assert!(
            diff.contains(&format!("+++ b/{path}")),
            "{path_line}: {diff}"
        );
        ok(&env, &["apply"]);
        assert_eq!(env.read(path), "new line\n", "{path_line}");
        assert!(!env.project.join("todo.md").exists(), "{path_line}");
    }
}
