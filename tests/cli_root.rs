//! Where a command runs and what it says when something is wrong: root discovery from
//! a subdirectory, `--root`, `--chat` for one command only, a broken config, errors
//! that name the URL, retry notices, and `bb7` without arguments.

mod cli_support;
mod common;

use std::io::Write;
use std::process::Stdio;

use cli_support::*;
use common::fake_model::*;
use common::{Env, fake_env};
use serde_json::json;

#[test]
fn commands_find_the_project_from_a_subdirectory() {
    let (env, fake) = fake_env(json!({}));
    env.write("src/deep/lib.rs", "pub fn f() {}\n");
    env.write("README.md", "# readme\n");
    ok(&env, &["init"]);
    let sub = env.project.join("src/deep");
    let o = run_in(&env, &sub, &["add", "lib.rs", "../../README.md"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_in(&env, &sub, &["status"], "");
    assert_eq!(
        stdout(&o),
        "    src/deep/lib.rs\n    README.md\n",
        "{}",
        stderr(&o)
    );
    fake.push_sse(response(
        "",
        "Renamed.",
        vec![(
            "edit_file",
            json!({"path": "src/deep/lib.rs", "edits": [{"old_string": "fn f", "new_string": "fn g"}]}),
        )],
    ));
    let o = run_in(&env, &sub, &["ask", "rename f"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run_in(&env, &sub, &["apply", "lib.rs"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(env.read("src/deep/lib.rs"), "pub fn g() {}\n");
    assert!(!sub.join(".bb7").exists());

    // --root names the project from anywhere.
    let elsewhere = env.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let root = env.project.to_string_lossy().into_owned();
    let o = run_in(&env, &elsewhere, &["--root", &root, "status"], "");
    assert_eq!(
        stdout(&o),
        "    src/deep/lib.rs\n    README.md\n",
        "{}",
        stderr(&o)
    );
    // Without a project above, the error says where it looked.
    let o = run_in(&env, &elsewhere, &["status"], "");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not initialized"), "{}", stderr(&o));
    assert!(stderr(&o).contains("bb7 init"), "{}", stderr(&o));
}

#[test]
fn the_home_state_directory_is_not_a_project() {
    let (env, fake) = fake_env(json!({}));
    // A global chat creates ~/.bb7; a directory under home must not become a project.
    std::fs::create_dir_all(env.home.join(".bb7/chats")).unwrap();
    let dir = env.home.join("work/tool");
    std::fs::create_dir_all(&dir).unwrap();
    let o = run_in(&env, &dir, &["status"], "");
    assert!(stderr(&o).contains("not initialized"), "{}", stderr(&o));
    drop(fake);
}

#[test]
fn chat_addresses_a_chat_for_one_command_only() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", "a\n");
    ok(&env, &["init"]);
    let first = stdout(&ok(&env, &["new", "first"])).trim().to_owned();
    let second = stdout(&ok(&env, &["new", "second"])).trim().to_owned();
    ok(&env, &["--chat", &first, "add", "a.txt"]);
    fake.push_sse(response("", "From the first chat.", vec![]));
    let o = ok(&env, &["--chat", &first, "ask", "hello first"]);
    assert_eq!(stdout(&o), "From the first chat.\n");

    // The active chat is still the second one.
    let chats = stdout(&ok(&env, &["chats"]));
    let active: Vec<&str> = chats.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(active.len(), 1, "{chats}");
    assert!(active[0].contains(&second), "{chats}");
    assert_eq!(
        stdout(&ok(&env, &["status"])),
        "",
        "the second chat has no context"
    );
    assert_eq!(
        stdout(&ok(&env, &["--chat", &first, "status"])),
        "    a.txt\n"
    );
    let shown = stdout(&ok(&env, &["--chat", &first, "show"]));
    assert!(
        shown.contains("hello first") && shown.contains("From the first chat."),
        "{shown}"
    );
    assert!(env.chat_json(&first).to_string().contains("hello first"));
    assert!(!env.chat_json(&second).to_string().contains("hello first"));
}

#[test]
fn a_broken_config_names_file_line_and_column() {
    let env = Env::new();
    std::fs::create_dir_all(env.config_dir()).unwrap();
    let config = env.config_dir().join("config.json");
    std::fs::write(&config, "{\n  \"api_key\": \"k\",\n}\n").unwrap();
    ok(&env, &["init"]);
    let err = fails(&env, &["ask", "hi"]);
    let want = format!("{}:3:1:", config.display());
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("trailing comma"), "{err}");
    assert!(err.contains("line 3, column 1"), "{err}");
    assert!(!err.contains("API key"), "{err}");
    // Other commands still work and warn.
    let o = ok(&env, &["chats"]);
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
}

#[test]
fn errors_name_the_url_and_retries_are_announced() {
    // A wrong base_url: the 404 names the URL tried.
    let (env, fake) = fake_env(json!({}));
    let wrong = format!("{}/v2", fake.url);
    let (env2, _f2) = fake_env(json!({"base_url": wrong}));
    drop(env);
    ok(&env2, &["init"]);
    let err = fails(&env2, &["ask", "hi"]);
    assert!(err.contains("HTTP 404"), "{err}");
    assert!(err.contains(&format!("{wrong}/chat/completions")), "{err}");

    // Nothing listens: the error names the URL; each retry is announced.
    let dead = "http://127.0.0.1:9/api/v1";
    let (env3, _f3) = fake_env(json!({"base_url": dead, "retry_backoff_ms": 10}));
    ok(&env3, &["init"]);
    let err = fails(&env3, &["ask", "hi"]);
    assert!(err.contains("127.0.0.1:9/api/v1/chat/completions"), "{err}");
    assert!(err.contains("retrying in 0.01 s"), "{err}");

    // 429: "retrying in N s (HTTP 429)", then the answer.
    let (env4, fake4) = fake_env(json!({"retry_backoff_ms": 20}));
    fake4.push(http_error(429, "slow down"));
    fake4.push(Reply::Http {
        status: 429,
        headers: vec![("Retry-After".into(), "1".into())],
        body: json!({"error": {"code": 429, "message": "slow down"}}).to_string(),
    });
    fake4.push_sse(response("", "At last.", vec![]));
    ok(&env4, &["init"]);
    let o = ok(&env4, &["ask", "hi"]);
    assert_eq!(stdout(&o), "At last.\n");
    let err = stderr(&o);
    assert!(err.contains("bb7: retrying in 0.02 s (HTTP 429)"), "{err}");
    assert!(err.contains("bb7: retrying in 1 s (HTTP 429)"), "{err}");
}

#[test]
fn no_arguments_prints_help_on_a_terminal_and_serves_a_pipe() {
    let env = Env::new();
    // A pipe: the protocol, as editors use it.
    let mut child = command(&env, &env.project, &[]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"action\":\"ping\",\"request_id\":\"1\"}\n{\"action\":\"shutdown\"}\n")
        .unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(
        stdout(&o).contains("\"request_id\":\"1\""),
        "{}",
        stdout(&o)
    );

    // A terminal: the help, at once.
    let (master, slave) = pty();
    let o = command(&env, &env.project, &[])
        .stdin(Stdio::from(slave))
        .output()
        .unwrap();
    drop(master);
    assert!(o.status.success());
    let help = stdout(&o);
    for cmd in [
        "ask",
        "review",
        "checkpoints",
        "rollback",
        "models",
        "show",
        "log",
    ] {
        assert!(help.contains(cmd), "{help}");
    }
}

#[test]
fn init_offers_a_gitignore_line() {
    // Without a terminal: the line to add is printed; nothing is written.
    let env = Env::new();
    let o = ok(&env, &["init"]);
    let err = stderr(&o);
    assert!(err.contains("echo '.bb7/' >> .gitignore"), "{err}");
    assert!(
        err.trim_end()
            .ends_with(&format!("initialized in {}", env.project.display())),
        "{err}"
    );
    assert!(!env.project.join(".gitignore").exists());

    // On a terminal (stdin and stderr): asked, and "y" appends the line to an
    // existing file.
    let env = Env::new();
    env.write(".gitignore", "target");
    let (master, slave) = pty();
    let mut term = std::fs::File::from(master);
    let shown = read_screen(&term);
    term.write_all(b"y\n").unwrap();
    let o = command(&env, &env.project, &["init"])
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(env.read(".gitignore"), "target\n.bb7/\n");
    drop(term);
    let shown = shown.join().unwrap();
    assert!(shown.contains("add .bb7/ to .gitignore? [y/N]"), "{shown}");

    // stdin a terminal but stderr not (`bb7 init >/dev/null 2>&1` typed in a shell):
    // nobody would see the question, so it is not asked and nothing waits for an answer.
    // A "y" typed ahead would be taken if the question were asked.
    let env = Env::new();
    let (master, slave) = pty();
    let mut term = std::fs::File::from(master);
    term.write_all(b"y\n").unwrap();
    let o = command(&env, &env.project, &["init"])
        .stdin(Stdio::from(slave))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("echo '.bb7/' >> .gitignore"),
        "{}",
        stderr(&o)
    );
    assert!(!env.project.join(".gitignore").exists());

    // Already ignored: no offer.
    let env = Env::new();
    env.write(".gitignore", ".bb7/\n");
    let o = ok(&env, &["init"]);
    assert!(!stderr(&o).contains("gitignore"), "{}", stderr(&o));
}
