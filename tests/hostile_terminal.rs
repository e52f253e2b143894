//! Hostile ground on the terminal: model text, reasoning and file names printed by the
//! command line never carry control characters or bidi overrides to a terminal (OSC 52
//! would write the user's clipboard); piped, the answer keeps every printable
//! character byte for byte but no C0/C1 control other than tab and newline leaves bb7
//! raw (a file later shown with `cat` or `less -R` would run it), and other data is
//! escaped, not dropped. Joiners of real scripts and emoji (ZWJ, ZWNJ, ZWSP) pass
//! everywhere.

mod cli_support;
mod common;

use std::io::Read;
use std::process::Stdio;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const OSC52: &str = "\u{1b}]52;c;ZXZpbA==\u{7}";
const CLEAR: &str = "\u{1b}[2J";

fn hostile_answer(fake: &FakeModel) {
    fake.push_sse(vec![
        role(),
        reasoning(&format!("thinking {CLEAR}hard\n")),
        text(&format!("Hello {OSC52}there\u{202e}dlrow\u{9d}")),
        text(" and bye\n"),
        finish("stop"),
        done(),
    ]);
}

fn has_controls(s: &str) -> bool {
    s.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{202e}')
}

/// The hostile answer as a pipe receives it: controls as visible escapes, the rest
/// (a bidi override is a format character, not a control) byte for byte.
const PIPED: &str = "Hello \\u{1b}]52;c;ZXZpbA==\\u{7}there\u{202e}dlrow\\u{9d} and bye\n";

#[test]
fn piped_answers_keep_text_and_escape_controls() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "a\n")]);
    hostile_answer(&fake);
    let o = ok(&env, &["ask", "--thinking", "hi"]);
    let out = stdout(&o);
    let err = stderr(&o);
    assert_eq!(out, PIPED, "{out:?}");
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{9d}'),
        "{out:?}"
    );
    assert!(!has_controls(&err), "{err:?}");
    assert!(err.contains("thinking \\u{1b}[2Jhard"), "{err:?}");
    // `show` prints the stored answer the same way.
    let shown = stdout(&ok(&env, &["show", "--last"]));
    assert_eq!(shown, PIPED);
}

const JOINED: &str = "می\u{200c}خواهم क्\u{200d}ष 👩\u{200d}👩\u{200d}👧 ❤\u{fe0f} long\u{200b}word";

#[test]
fn joiners_are_kept_piped_and_on_a_terminal() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "a\n")]);
    fake.push_sse(response("", &format!("{JOINED}\n"), vec![]));
    let o = ok(&env, &["ask", "hi"]);
    assert_eq!(stdout(&o), format!("{JOINED}\n"));
    assert!(stdout(&ok(&env, &["show"])).contains(JOINED));

    fake.push_sse(response("", &format!("{JOINED}\n"), vec![]));
    let screen = on_a_terminal(&env, &["ask", "again"]);
    assert!(screen.contains(JOINED), "{screen:?}");
}

/// Runs `bb7 ARGS` with stdout and stderr on a pseudo-terminal; what it wrote there.
fn on_a_terminal(env: &common::Env, args: &[&str]) -> String {
    let (master, slave) = pty();
    let mut child = command(env, &env.project, args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut screen = Vec::new();
    let mut m = std::fs::File::from(master);
    let mut buf = [0u8; 4096];
    loop {
        match m.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => screen.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&screen).replace("\r\n", "\n")
}

#[test]
fn a_terminal_never_receives_control_characters() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "a\n")]);
    hostile_answer(&fake);
    let (master, slave) = pty();
    let mut child = command(&env, &env.project, &["ask", "--thinking", "hi"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut screen = Vec::new();
    let mut m = std::fs::File::from(master);
    // The slave is closed once the child exits; reading then ends with EIO.
    let mut buf = [0u8; 4096];
    loop {
        match m.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => screen.extend_from_slice(&buf[..n]),
        }
    }
    let screen = String::from_utf8_lossy(&screen).replace("\r\n", "\n");
    assert!(
        screen.contains("Hello ]52;c;ZXZpbA==theredlrow and bye"),
        "{screen:?}"
    );
    assert!(screen.contains("thinking [2Jhard"), "{screen:?}");
    assert!(!has_controls(&screen), "{screen:?}");
}

#[test]
fn planted_output_names_reach_no_terminal_raw() {
    let (env, _fake) = fake_env(json!({}));
    project_with(&env, &[("a.txt", "a\n")]);
    let chats = env.project.join(".bb7/chats");
    let id = std::fs::read_dir(&chats)
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.file_type().unwrap().is_dir())
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    let name = "x\u{1b}]52;c;ZXZpbA==\u{7}\u{202e}.txt";
    env.plant_output(&id, name, "planted\n");
    for args in [&["status"][..], &["diff"], &["apply"]] {
        let o = bb7(&env, args);
        assert!(!has_controls(&stdout(&o)), "{args:?}: {:?}", stdout(&o));
        assert!(!has_controls(&stderr(&o)), "{args:?}: {:?}", stderr(&o));
    }
}

/// A file name the user typed (or a shell glob expanded) with control characters is
/// echoed escaped by `bb7 add` and `bb7 remove`, never raw.
#[test]
fn typed_file_names_are_echoed_escaped() {
    let (env, _fake) = fake_env(json!({}));
    let name = format!("x{CLEAR}y.txt");
    project_with(&env, &[(name.as_str(), "a\n")]);
    let added = ok(&env, &["add", &name]);
    let err = stderr(&added);
    assert!(err.contains("y.txt"), "{err}");
    assert!(!has_controls(&err), "{err:?}");
    let removed = ok(&env, &["remove", &name]);
    assert!(!has_controls(&stderr(&removed)), "{:?}", stderr(&removed));
}
