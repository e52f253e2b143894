//! `bb7 chat` driven on a pseudo-terminal as a user would: three questions in one
//! conversation, an edit, `/diff`, `/apply`, `/undo`, and Ctrl-C in the middle of an
//! answer, against the fake model.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const TEN: &str = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";
const PROMPT: &str = "bb7> ";

#[test]
fn a_conversation_with_an_edit_apply_undo_and_ctrl_c() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    fake.push_sse(response(
        "",
        "# Plan\nHello from **the** model.\n```diff\n-old\n+new\n```\n```rust\nfn f() {} // why\n```\n",
        vec![],
    ));
    fake.push_sse(response(
        "",
        "Changed line two.\n",
        vec![(
            "edit_file",
            json!({"path": "f.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
        )],
    ));
    fake.push_sse(response("", "You are welcome.\n", vec![]));
    fake.push_sse(vec![
        Step::Comment,
        role(),
        text("Partial line.\n"),
        // Never opened: the answer is still running whenever the Ctrl-C comes.
        Step::Wait(Gate::new()),
        text("never shown\n"),
        finish("stop"),
        done(),
    ]);

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect("/help");
    t.expect(PROMPT);
    t.type_keys("hello\r");
    // Rendered on the terminal: the heading and strong text bold, a diff coloured.
    t.expect("\x1b[1m# Plan");
    t.expect("Hello from \x1b[1m**the**");
    t.expect("\x1b[32m+new");
    t.expect("\x1b[1mfn");
    t.expect("// why");
    t.expect(PROMPT);

    t.type_keys("change line two\r");
    t.expect("Changed line two.");
    t.expect("Edit f.txt");
    t.expect(PROMPT);
    // Tab completes the command's name.
    t.type_keys("/di\t");
    t.expect("/diff");
    t.type_keys("\r");
    t.expect("+TWO");
    t.expect(PROMPT);
    t.type_keys("/apply\r");
    t.expect("applied f.txt");
    t.expect(PROMPT);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "TWO\n"));
    t.type_keys("/undo\r");
    t.expect("restored f.txt");
    t.expect(PROMPT);
    assert_eq!(env.read("f.txt"), TEN);

    // The third question is in the same conversation: the model sees the first two.
    t.type_keys("thanks\r");
    // The undo changed f.txt under its snapshot: the hint names the chat's command.
    t.expect("`/refresh` re-reads it");
    t.expect("You are welcome.");
    t.expect(PROMPT);
    t.type_keys("/refresh\r");
    t.expect("refreshed f.txt");
    t.expect(PROMPT);
    let third = fake.chat_bodies()[2].to_string();
    assert!(
        third.contains("hello") && third.contains("change line two"),
        "{third}"
    );

    // Ctrl-C stops the answer and keeps the session and the partial answer.
    t.type_keys("go slowly\r");
    t.expect("Partial line.");
    t.type_keys("\x03");
    t.expect("partial answer is kept");
    t.expect(PROMPT);
    t.type_keys("/tokens\r");
    t.expect("tokens");
    t.expect(PROMPT);
    t.type_keys("/nonsense\r");
    t.expect("unknown command");
    t.expect(PROMPT);
    t.type_keys("\x04");
    let status = t.wait();
    assert!(status.success(), "{}", t.screen());
    assert_eq!(fake.chat_bodies().len(), 4);
    let last = stdout(&ok(&env, &["show", "--last"]));
    assert_eq!(last, "Partial line.\n");
}

#[test]
fn ask_shows_a_waiting_indicator_on_a_terminal_only() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    // The answer waits after the reasoning until the test saw the indicator say so (a
    // gate, not 0.6 s: a loaded machine may draw the indicator later than that).
    let slow = |stall: Step| {
        vec![
            Step::Comment,
            role(),
            reasoning("thinking hard"),
            stall,
            text("Answer.\n"),
            finish("stop"),
            usage(10, 2, 0.0),
            done(),
        ]
    };
    let reasoned = Gate::new();
    fake.push_sse(slow(Step::Wait(reasoned.clone())));
    let mut t = Terminal::start(&env, &["ask", "question"]);
    t.expect("waiting for the model");
    t.expect("the model is reasoning");
    reasoned.open();
    t.expect("Answer.");
    assert!(t.wait().success(), "{}", t.screen());
    // Without a terminal, no indicator even while the answer stalls.
    fake.push_sse(slow(Step::Sleep(std::time::Duration::from_millis(600))));
    let o = ok(&env, &["ask", "question"]);
    assert!(!stderr(&o).contains("waiting"), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Answer.\n");
}

#[test]
fn history_is_appended_per_entry_survives_a_closed_terminal_and_is_never_cut() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    let file = env.home.join(".bb7/chat_history");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let old: String = (0..5000).map(|i| format!("old entry {i}\n")).collect();
    std::fs::write(&file, format!("#V2\n{old}")).unwrap();

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("/status\r");
    t.expect(PROMPT);
    t.type_keys("/help\r");
    t.expect(PROMPT);
    // The terminal closes: SIGHUP, no clean exit.
    unsafe {
        libc::kill(t.pid() as i32, libc::SIGHUP);
    }
    t.wait();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(&format!("#V2\n{old}")),
        "the old entries stay"
    );
    assert!(
        text.ends_with("/status\n/help\n"),
        "{:?}",
        &text[text.len() - 40..]
    );

    // The next session recalls them, the oldest of 5,000 too (Ctrl-R searches back).
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("\x1b[A");
    t.expect("/help");
    t.type_keys("\x15\x12old entry 0");
    t.expect("`old entry 0': old entry 0");
    t.type_keys("\x03");
    t.expect(PROMPT);
    t.type_keys("/quit\r");
    t.wait();
}

#[test]
fn a_conflict_is_forced_or_taken_from_the_chat() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    fake.push_sse(response(
        "",
        "Line two.\n",
        vec![(
            "edit_file",
            json!({"path": "f.txt", "edits": [{"old_string": "l2\n", "new_string": "TWO\n"}]}),
        )],
    ));
    fake.push_sse(response(
        "",
        "Line five.\n",
        vec![(
            "edit_file",
            json!({"path": "f.txt", "edits": [{"old_string": "l5\n", "new_string": "FIVE\n"}]}),
        )],
    ));
    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("change line two\r");
    t.expect("Line two.");
    t.expect(PROMPT);
    env.write("f.txt", &TEN.replace("l2\n", "mine\n"));
    t.type_keys("/apply\r");
    // The hint names the chat's own commands.
    t.expect("/apply --force");
    t.expect(PROMPT);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "mine\n"));
    t.type_keys("/review\r");
    let shown = t.expect(PROMPT);
    let id = shown
        .split_whitespace()
        .find(|w| w.starts_with("h_"))
        .expect("a hunk id")
        .to_owned();
    // Taking it asks first; "n" leaves the file alone.
    t.type_keys(&format!("/review take {id}\r"));
    t.expect("[y/N]");
    t.type_keys("n\r");
    t.expect("not taken");
    t.expect(PROMPT);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "mine\n"));
    t.type_keys(&format!("/review take {id}\r"));
    t.expect("[y/N]");
    t.type_keys("y\r");
    t.expect("accepted");
    t.expect(PROMPT);
    assert_eq!(env.read("f.txt"), TEN.replace("l2\n", "TWO\n"));

    t.type_keys("line five\r");
    t.expect("Line five.");
    t.expect(PROMPT);
    let mine = TEN.replace("l2\n", "TWO\n").replace("l5\n", "mine5\n");
    env.write("f.txt", &mine);
    t.type_keys("/apply --force f.txt\r");
    t.expect("applied f.txt");
    t.expect(PROMPT);
    assert_eq!(
        env.read("f.txt"),
        TEN.replace("l2\n", "TWO\n").replace("l5\n", "FIVE\n")
    );
    t.type_keys("/quit\r");
    t.wait();
}
