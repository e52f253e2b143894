//! `bb7 chat` on a pseudo-terminal: the question typed while an answer streams shows
//! below the answer as it is typed (`next> …`) and never inside it; a line typed and
//! not sent when the answer ends is the start of the next prompt's line; `/queue` lists
//! the queued questions and `/unqueue N` drops one of them. The fake model pauses in
//! the middle of the answers that are typed over until the test has typed (a gate it
//! opens, not a time: a loaded machine stretched a 10 s room to type in past its end);
//! each key waits for what the one before showed.

mod cli_support;
mod common;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

const PROMPT: &str = "bb7> ";

fn slow(first: &str, gate: &Gate, last: &str) -> Vec<Step> {
    vec![
        role(),
        text(first),
        Step::Wait(gate.clone()),
        text(last),
        finish("stop"),
        done(),
    ]
}

/// The rows a terminal shows for `raw` (what the program wrote): `\r` goes back to the
/// row's start, `ESC [ 2 K` clears the row, `ESC [ K` clears to its end, other escape
/// sequences (colours) show nothing; text overwrites from the cursor.
fn rows(raw: &str) -> Vec<String> {
    let mut out: Vec<Vec<char>> = vec![Vec::new()];
    let mut col = 0;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        let row = out.last_mut().unwrap();
        match c {
            '\r' => col = 0,
            '\n' => {
                out.push(Vec::new());
                col = 0;
            }
            '\x1b' => {
                let mut seq = String::new();
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for n in chars.by_ref() {
                        seq.push(n);
                        if ('\x40'..='\x7e').contains(&n) {
                            break;
                        }
                    }
                }
                match seq.as_str() {
                    "2K" => row.clear(),
                    "K" | "0K" => row.truncate(col),
                    _ => {}
                }
            }
            c if c < ' ' => {}
            c => {
                if col < row.len() {
                    row[col] = c;
                } else {
                    row.resize(col, ' ');
                    row.push(c);
                }
                col += 1;
            }
        }
    }
    out.into_iter()
        .map(|r| r.into_iter().collect::<String>().trim_end().to_owned())
        .collect()
}

#[test]
fn the_line_typed_while_the_answer_streams_shows_below_it_not_inside_it() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "one\n")]);
    let typed = Gate::new();
    fake.push_sse(slow("First part.\n", &typed, "First end.\n"));
    fake.push_sse(response("", "Second answer.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("first question\r");
    t.expect("First part.");
    t.type_keys("half typ");
    // Shown as it is typed, before Enter.
    t.expect("next> ");
    t.expect("half typ");
    t.type_keys("ed\r");
    t.expect("queued (1): half typed");
    typed.open();
    t.expect("First end.");
    t.expect("answering: half typed");
    t.expect("Second answer.");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());

    // On the screen the typed line was erased before the note took its row: the
    // answer's rows hold the answer only, and no `next>` row is left.
    let screen = rows(&t.screen());
    let answer: Vec<&String> = screen
        .iter()
        .filter(|r| r.contains("First part.") || r.contains("First end."))
        .collect();
    assert_eq!(answer.len(), 2, "{screen:#?}");
    assert!(answer.iter().all(|r| !r.contains("half")), "{screen:#?}");
    assert!(!screen.iter().any(|r| r.contains("next>")), "{screen:#?}");
    let typed: Vec<&String> = screen.iter().filter(|r| r.contains("half typed")).collect();
    assert_eq!(
        typed.len(),
        2,
        "the note and the answer's heading: {screen:#?}"
    );
    assert!(
        typed[0].contains("bb7: queued (1): half typed"),
        "{screen:#?}"
    );
}

#[test]
fn a_line_typed_and_not_sent_when_the_answer_ends_starts_the_next_prompt() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "one\n")]);
    let typed = Gate::new();
    fake.push_sse(slow("First part.\n", &typed, "First end.\n"));
    fake.push_sse(response("", "Draft answered.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("first question\r");
    t.expect("First part.");
    // Backspace and Ctrl-W edit it as the line editor would.
    t.type_keys("an unfinished draaft");
    t.expect("draaft");
    t.type_keys("\x7f\x7f\x7fft wrong\x17");
    t.expect("an unfinished draft ");
    typed.open();
    t.expect("First end.");
    t.expect(PROMPT);
    // Enter at the prompt sends the line it starts with.
    t.type_keys("\r");
    t.expect("Draft answered.");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{}", t.screen());
    let second = prompt_text(&bodies[1]);
    assert!(second.contains("an unfinished draft"), "{second}");
    assert!(!second.contains("wrong"), "{second}");
}

#[test]
fn queue_lists_and_unqueue_n_drops_one_queued_question() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", "one\n")]);
    let typed = Gate::new();
    fake.push_sse(slow("First part.\n", &typed, "First end.\n"));
    fake.push_sse(response("", "Alpha answer.\n", vec![]));
    fake.push_sse(response("", "Gamma answer.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("first question\r");
    t.expect("First part.");
    for (i, q) in ["alpha q", "beta q", "gamma q"].iter().enumerate() {
        t.type_keys(&format!("{q}\r"));
        t.expect(&format!("queued ({}): {q}", i + 1));
    }
    t.type_keys("/queue\r");
    t.expect("queued (1): alpha q");
    t.expect("queued (2): beta q");
    t.expect("queued (3): gamma q");
    t.type_keys("/unqueue 2\r");
    t.expect("dropped queued question 2: beta q");
    t.type_keys("/unqueue 5\r");
    t.expect("no queued question 5 (/queue lists 1 to 2)");
    t.type_keys("/queue\r");
    t.expect("queued (1): alpha q");
    let listed = t.expect("queued (2): gamma q");
    assert!(!listed.contains("beta"), "{listed:?}");
    typed.open();
    t.expect("First end.");
    t.expect("answering: alpha q");
    t.expect("Alpha answer.");
    t.expect("answering: gamma q");
    t.expect("Gamma answer.");
    t.expect(PROMPT);
    // At the prompt nothing is queued.
    t.type_keys("/queue\r");
    t.expect("nothing is queued");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 3, "{}", t.screen());
    assert!(bodies.iter().all(|b| !prompt_text(b).contains("beta q")));
}

#[test]
fn a_tool_approval_asked_while_a_line_is_typed_reads_its_own_answer() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("secret.txt", "hidden\n")]);
    ok(&env, &["init"]);
    // `bb7 ask --tools ask` sets the chat's tools; `bb7 chat` goes on in that chat.
    fake.push_sse(response("", "Set.\n", vec![]));
    ok(&env, &["ask", "--tools", "ask", "set up"]);
    let mut looking = response(
        "",
        "Looking.\n",
        vec![("read_file", json!({"path": "secret.txt"}))],
    );
    let at = looking
        .iter()
        .position(|s| matches!(s, Step::Data(d) if d.contains("Looking.")))
        .unwrap();
    // The tool call waits until the typed text is seen: typed after the question
    // started, it would be the question's answer (a 3 s stall here was a race).
    let typed = Gate::new();
    looking.insert(at + 1, Step::Wait(typed.clone()));
    fake.push_sse(looking);
    fake.push_sse(response("", "Read it.\n", vec![]));
    fake.push_sse(response("", "Partial answered.\n", vec![]));

    let mut t = Terminal::start(&env, &["chat"]);
    t.expect(PROMPT);
    t.type_keys("first question\r");
    t.expect("Looking.");
    t.type_keys("partial");
    t.expect("partial");
    typed.open();
    // The answer to the question is read by the question, not taken as typed text.
    t.expect("Allow? [y/N]");
    t.type_keys("y\r");
    t.expect("Read it.");
    t.expect(PROMPT);
    t.type_keys("\r");
    t.expect("Partial answered.");
    t.expect(PROMPT);
    t.type_keys("\x04");
    assert!(t.wait().success(), "{}", t.screen());
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 4, "{}", t.screen());
    let read = serde_json::to_string(&bodies[2]).unwrap();
    assert!(read.contains("hidden"), "the read was allowed: {read}");
    let last = prompt_text(&bodies[3]);
    assert!(last.contains("partial"), "{last}");
    assert!(!last.contains("partialy"), "{last}");
}
