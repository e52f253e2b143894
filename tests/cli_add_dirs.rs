//! `/add DIR`, `bb7 add DIR` and globs add a directory's text files and skip binary and
//! non-UTF-8 files with one line naming them; a non-UTF-8 file named on its own is
//! refused by name, without a decoding error.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use serde_json::json;

/// A project with `docs/` holding two text files, a NUL-bearing binary, a Latin-1 file
/// and a damaged image (a PNG cut off after its signature).
fn project() -> common::Env {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("top.txt", "top\n")]);
    env.write("docs/a.md", "alpha\n");
    env.write("docs/z.md", "zulu\n");
    std::fs::write(env.project.join("docs/b.bin"), b"\x7fELF\x00\x01\x02").unwrap();
    std::fs::write(env.project.join("docs/latin1.txt"), b"caf\xe9\n").unwrap();
    std::fs::write(
        env.project.join("docs/pic.png"),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    )
    .unwrap();
    env
}

#[test]
fn bb7_add_of_a_directory_adds_its_text_files_and_names_the_skipped_ones() {
    let env = project();
    ok(&env, &["new"]);
    // The damaged image is reported and counted; every text file is still added.
    let err = fails(&env, &["add", "docs"]);
    assert!(
        err.contains("docs/pic.png is not a valid PNG image"),
        "{err}"
    );
    assert!(err.contains("1 of 3 not added"), "{err}");
    let skipped: Vec<&str> = err.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(skipped.len(), 1, "{err}");
    assert!(
        skipped[0].contains("skipped 2 files that are not text")
            && skipped[0].contains("docs/b.bin")
            && skipped[0].contains("docs/latin1.txt"),
        "{err}"
    );
    // The files after the first binary one (in sorted order) are added too.
    assert!(err.contains("added docs/a.md"), "{err}");
    assert!(err.contains("added docs/z.md"), "{err}");
    assert!(!err.contains("utf-8"), "{err}");
    let status = stdout(&ok(&env, &["status"]));
    assert!(
        status.contains("docs/a.md") && status.contains("docs/z.md"),
        "{status}"
    );
    assert!(
        !status.contains("b.bin") && !status.contains("latin1"),
        "{status}"
    );
}

#[test]
fn a_non_utf8_file_named_alone_is_refused_by_name() {
    let env = project();
    ok(&env, &["new"]);
    let err = fails(&env, &["add", "docs/latin1.txt"]);
    assert!(
        err.contains("cannot add docs/latin1.txt: it is not UTF-8 text"),
        "{err}"
    );
    assert!(!err.contains("invalid utf-8 sequence"), "{err}");
}

#[test]
fn slash_add_of_a_glob_in_bb7_chat_skips_binaries_and_adds_the_rest() {
    let env = project();
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("/add docs/*\r");
    t.expect("skipped 2 files that are not text");
    t.expect("not a valid PNG image");
    t.expect("added docs/z.md");
    t.expect("1 of 3 not added");
    t.expect("bb7> ");
    t.type_keys("/files\r");
    t.expect("docs/z.md");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());
    let status = stdout(&ok(&env, &["status"]));
    assert!(
        status.contains("docs/a.md") && status.contains("docs/z.md"),
        "{status}"
    );
}
