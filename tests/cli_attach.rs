//! Attachments from the command line: `bb7 add --run`, `--git-diff`, `--diagnostics`,
//! stdin piped into `bb7 ask`, and `/run`, `/test`, `/rules` in `bb7 chat`.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::{FakeModel, response};
use serde_json::{Value, json};

fn user_text(fake: &FakeModel, n: usize) -> String {
    let body = &fake.chat_bodies()[n];
    let mut body: Value = body.clone();
    body["messages"].as_array_mut().unwrap().remove(0);
    common::fake_model::prompt_text(&body)
}

#[test]
fn add_run_attaches_output_and_exit_status_and_remove_drops_it() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let o = ok(&env, &["add", "--run", "echo out; echo err >&2; exit 3"]);
    assert!(
        stderr(&o).contains("bb7: attached command_output:echo out; echo err >&2; exit 3 (exit 3)"),
        "{}",
        stderr(&o)
    );
    let status = stdout(&ok(&env, &["status"]));
    assert!(
        status.contains("command_output:echo out; echo err >&2; exit 3"),
        "{status}"
    );
    assert!(
        !status.contains('~'),
        "an attachment never shows as changed on disk: {status}"
    );
    fake.push_sse(response("", "It exits 3.", vec![]));
    ok(&env, &["ask", "why?"]);
    let user = user_text(&fake, 0);
    assert!(user.contains(
        "<attachment kind=\"command_output\" name=\"echo out; echo err &gt;&amp;2; exit 3\" command=\"echo out; echo err &gt;&amp;2; exit 3\" exit_status=\"3\" file_id=\""
    ), "{user}");
    assert!(
        user.contains("\">\nout\nerr\n</attachment fence=\""),
        "{user}"
    );
    let o = ok(
        &env,
        &["remove", "command_output:echo out; echo err >&2; exit 3"],
    );
    assert!(
        stderr(&o).contains("bb7: removed command_output:"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&ok(&env, &["status"])).contains("command_output"));
}

#[test]
fn stdin_piped_into_ask_is_attached_before_the_question() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    fake.push_sse(response("", "Test a fails.", vec![]));
    let o = run_in(
        &env,
        &env.project,
        &["ask", "why does this fail?"],
        "test a ... FAILED\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bb7: attached text:stdin"),
        "{}",
        stderr(&o)
    );
    let user = user_text(&fake, 0);
    assert!(
        user.contains("<attachment kind=\"text\" name=\"stdin\" file_id=\""),
        "{user}"
    );
    assert!(
        user.contains("\">\ntest a ... FAILED\n</attachment fence=\""),
        "{user}"
    );
    assert!(user.contains("why does this fail?"));
    // Empty stdin attaches nothing; a message read from stdin is the message.
    fake.push_sse(response("", "Hi.", vec![]));
    let o = run_in(&env, &env.project, &["ask"], "hello there\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("attached"), "{}", stderr(&o));
}

#[test]
fn add_git_diff_and_diagnostics() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "one\n")]);
    let e = fails(&env, &["add", "--git-diff"]);
    assert!(e.contains("git diff failed"), "{e}");
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&env.project)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", lossy(&o.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    let e = fails(&env, &["add", "--git-diff"]);
    assert!(e.contains("no changes: git diff is empty"), "{e}");
    env.write("a.txt", "two\n");
    let o = ok(&env, &["add", "--git-diff"]);
    assert!(
        stderr(&o).contains("bb7: attached git_diff:git diff"),
        "{}",
        stderr(&o)
    );
    ok(&env, &["add", "--git-diff", "HEAD"]);

    env.write(
        "diags.json",
        r#"[{"path":"a.txt","line":1,"col":2,"severity":"error","message":"bad word","source":"lint"}]"#,
    );
    let o = ok(&env, &["add", "--diagnostics", "diags.json"]);
    assert!(
        stderr(&o).contains("bb7: attached diagnostics:diags.json"),
        "{}",
        stderr(&o)
    );
    env.write("bad.json", "[]");
    let e = fails(&env, &["add", "--diagnostics", "bad.json"]);
    assert!(e.contains("bad.json: no diagnostics in it"), "{e}");

    fake.push_sse(response("", "ok", vec![]));
    ok(&env, &["ask", "what changed?"]);
    let user = user_text(&fake, 0);
    assert!(
        user.contains("<attachment kind=\"git_diff\" name=\"git diff\" file_id=\""),
        "{user}"
    );
    assert!(
        user.contains(
            "<attachment kind=\"git_diff\" name=\"git diff HEAD\" rev=\"HEAD\" file_id=\""
        ),
        "{user}"
    );
    assert!(user.contains("-one\n+two\n"), "{user}");
    assert!(
        user.contains("\">\na.txt:1:2: error: bad word [lint]\n</attachment fence=\""),
        "{user}"
    );
}

#[test]
fn run_test_and_rules_in_bb7_chat() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "alpha\n"), ("AGENTS.md", "Be brief.\n")]);
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("bb7> ");
    t.type_keys("/rules\r");
    t.expect("AGENTS.md");
    t.expect("bb7> ");
    t.type_keys("/test true\r");
    t.expect("bb7: true passed (exit 0); nothing attached");
    t.expect("bb7> ");
    t.type_keys("/test echo failed 1 test; exit 1\r");
    t.expect("bb7: attached command_output:echo failed 1 test; exit 1 (exit 1)");
    t.expect("bb7> ");
    t.type_keys("/run echo  two  spaces\r");
    t.expect("bb7: attached command_output:echo  two  spaces (exit 0)");
    t.expect("bb7> ");
    fake.push_sse(response("", "Fine.", vec![]));
    t.type_keys("why?\r");
    t.expect("Fine.");
    t.expect("bb7> ");
    t.type_keys("/quit\r");
    assert!(t.wait().success(), "{}", t.screen());
    let user = user_text(&fake, 0);
    assert!(
        user.contains("\">\nfailed 1 test\n</attachment fence=\""),
        "{user}"
    );
    assert!(
        user.contains("\">\ntwo spaces\n</attachment fence=\""),
        "{user}"
    );
    assert!(!user.contains("name=\"true\""), "{user}");
}

#[test]
fn add_of_an_image_file_adds_an_image() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "alpha\n")]);
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(2u32.to_be_bytes());
    png.extend(2u32.to_be_bytes());
    // Bit depth 8, RGBA, and the header's other fields: a header bb7 can read.
    png.extend([8, 6, 0, 0, 0]);
    std::fs::write(env.project.join("shot.png"), &png).unwrap();
    let o = ok(&env, &["add", "shot.png"]);
    assert!(
        stderr(&o).contains("bb7: added image:shot.png"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&ok(&env, &["status"])).contains("image:shot.png"));
}
