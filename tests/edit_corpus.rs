//! The edit corpus: every case under `tests/edit_corpus/` runs through the real binary
//! over stdio against the fake model. A case is an original file, the tool calls a
//! model sent, and the expected file or "must refuse"; the test fails on any result
//! that is not the expected one and prints correct / refused / wrong per category
//! (`scripts/edit-corpus` shows the table; `BB7_CORPUS=<category prefix>` runs some).
//! Every correct case is also judged by the syntax referees (see `referee_failures`).
//!
//! Case format (`tests/edit_corpus/<category>/<name>.case`), sections start with `===`:
//!
//! ```text
//! # what the model did wrong (free text lines starting with #)
//! mode: search_replace_multi        optional diff_mode
//! transform: crlf no_final_newline pad_before=2500 pad_after=10    optional
//! === file main.go                  original content, up to the next === line
//! === call edit_file                tool arguments as JSON; "file_id": "$ID" is the right
//!                                   id ("$ID_NO_FINAL_NEWLINE": hashed without the final newline)
//! === expect main.go                expected content
//! === refuse                        instead of expect: the response must be refused
//! === answer                        instead of calls: the answer text, with SEARCH/REPLACE
//!                                   blocks, sent with `"edit_format": "blocks"`
//! ```
//!
//! `transform: answer_crlf` sends the answer with CRLF line ends. `formats: tools blocks`
//! runs a case of one `edit_file` call twice: as the call, and as the same edit written
//! as one SEARCH/REPLACE block (old and new as whole lines).
//!
//! `known: wrong` or `known: refused` marks a case the matcher does not get right yet:
//! the case keeps the correct expectation, its outcome is counted in the table as it
//! is, and it fails the test only when it gets worse (a known refusal that lands
//! wrong). The `#` lines say what the correct outcome is and why; the runner prints a
//! note for each known case, and one asking to drop the line when it lands correctly.

mod common;
#[path = "edit_gen/referees.rs"]
#[allow(dead_code)]
mod referees;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::fake_model::*;
use common::{Bb7, Env, fake_env, file_id};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
struct Case {
    name: String,
    category: String,
    mode: String,
    files: Vec<(String, String)>,
    calls: Vec<(String, Value)>,
    /// The answer text of a block-format case.
    answer: Option<String>,
    /// Whether the case also runs as a SEARCH/REPLACE block (`formats: tools blocks`).
    both: bool,
    expect: Option<Vec<(String, String)>>,
    /// The outcome the matcher is known to give today instead of the expected one.
    known: Option<Outcome>,
}

impl Case {
    /// `blocks` for a case whose edits are in the answer text, else `tools`.
    fn format(&self) -> &'static str {
        if self.answer.is_some() {
            "blocks"
        } else {
            "tools"
        }
    }
}

fn filler(lang: &str, n: usize) -> String {
    let prefix = match lang {
        "py" | "python" | "yaml" | "sh" => "# ",
        "lua" => "-- ",
        "md" | "markdown" => "Filler line ",
        _ => "// ",
    };
    (1..=n).map(|i| format!("{prefix}filler {i}\n")).collect()
}

fn parse_case(path: &Path, category: &str) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let (mut mode, mut lang) = ("search_replace_multi".to_owned(), String::new());
    let mut transforms: Vec<String> = Vec::new();
    let mut both = false;
    let mut known = None;
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        // `=== ` with a space: an answer's `=======` divider is content.
        if let Some(head) = line.strip_prefix("=== ") {
            sections.push((head.trim().to_owned(), String::new()));
            continue;
        }
        match sections.last_mut() {
            Some((_, body)) => body.push_str(line),
            None => {
                let l = line.trim();
                if let Some(v) = l.strip_prefix("mode:") {
                    mode = v.trim().to_owned();
                } else if let Some(v) = l.strip_prefix("lang:") {
                    lang = v.trim().to_owned();
                } else if let Some(v) = l.strip_prefix("formats:") {
                    both = v.split_whitespace().any(|f| f == "blocks");
                } else if let Some(v) = l.strip_prefix("known:") {
                    known = Some(match v.trim() {
                        "wrong" => Outcome::Wrong,
                        "refused" => Outcome::Refused,
                        other => panic!("{}: unknown `known: {other}`", path.display()),
                    });
                } else if let Some(v) = l.strip_prefix("transform:") {
                    transforms = v.split_whitespace().map(str::to_owned).collect();
                }
            }
        }
    }
    let transform = |content: &str| {
        let mut c = content.to_owned();
        for t in &transforms {
            if let Some(n) = t.strip_prefix("pad_before=") {
                c = filler(&lang, n.parse().unwrap()) + &c;
            } else if let Some(n) = t.strip_prefix("pad_after=") {
                if !c.ends_with('\n') {
                    c.push('\n');
                }
                c += &filler(&lang, n.parse().unwrap());
            }
        }
        for t in &transforms {
            match t.as_str() {
                "no_final_newline" => {
                    let end = c.trim_end_matches(['\r', '\n']).len();
                    let drop = if c[end..].starts_with("\r\n") { 2 } else { 1 };
                    c.truncate(c.len().saturating_sub(drop).max(end));
                }
                "crlf" => c = c.replace('\n', "\r\n"),
                _ => {}
            }
        }
        c
    };
    let mut case = Case {
        name,
        category: category.to_owned(),
        mode,
        files: Vec::new(),
        calls: Vec::new(),
        answer: None,
        both,
        expect: None,
        known,
    };
    for (head, body) in sections {
        let mut words = head.splitn(2, ' ');
        let kind = words.next().unwrap_or("");
        let arg = words.next().unwrap_or("").trim().to_owned();
        match kind {
            "file" => case.files.push((arg, transform(&body))),
            "expect" => case
                .expect
                .get_or_insert_with(Vec::new)
                .push((arg, transform(&body))),
            "call" => {
                let v: Value = serde_json::from_str(&body)
                    .unwrap_or_else(|e| panic!("{}: bad call JSON: {e}", path.display()));
                case.calls.push((arg, v));
            }
            "refuse" => {}
            "answer" => {
                let crlf = transforms.iter().any(|t| t == "answer_crlf");
                case.answer = Some(if crlf {
                    body.replace('\n', "\r\n")
                } else {
                    body
                });
            }
            other => panic!("{}: unknown section {other}", path.display()),
        }
    }
    case
}

/// Replaces `"$ID"` file ids with the id of the file the edit names.
fn fill_ids(v: &mut Value, files: &[(String, String)], top: Option<&str>) {
    let path = ["path", "file_path"]
        .iter()
        .find_map(|k| v.get(k).and_then(Value::as_str))
        .map(|p| p.trim_start_matches("./").to_owned())
        .or_else(|| top.map(str::to_owned));
    if let Value::Object(map) = v {
        let wanted = map
            .get("file_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(w @ ("$ID" | "$ID_NO_FINAL_NEWLINE")) = wanted.as_deref()
            && let Some(p) = &path
            && let Some((_, c)) = files.iter().find(|(f, _)| f == p)
        {
            // Snapshots hold LF text; the id the model is shown is the snapshot's. A
            // client may have hashed the text without its final newline.
            let lf = c.replace("\r\n", "\n");
            let text = if w == "$ID" {
                &lf[..]
            } else {
                lf.trim_end_matches('\n')
            };
            map.insert("file_id".into(), json!(file_id(p, text)));
        }
        for (_, child) in map.iter_mut() {
            fill_ids(child, files, path.as_deref());
        }
    } else if let Value::Array(a) = v {
        for child in a {
            fill_ids(child, files, top);
        }
    }
}

fn load_cases() -> Vec<Case> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/edit_corpus");
    let mut cases = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    // `BB7_CORPUS=<prefix>` runs only the categories starting so (while working on one).
    let only = std::env::var("BB7_CORPUS").unwrap_or_default();
    for dir in dirs {
        let category = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !category.starts_with(&only) {
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "case"))
            .collect();
        files.sort();
        for f in &files {
            let case = parse_case(f, &category);
            if let Some(blocks) = case.both.then(|| as_blocks(&case)).flatten() {
                cases.push(blocks);
            }
            cases.push(case);
        }
    }
    cases
}

/// The case's one `edit_file` edit written as a SEARCH/REPLACE block (whole lines).
fn as_blocks(case: &Case) -> Option<Case> {
    let [(name, args)] = &case.calls[..] else {
        return None;
    };
    let edit = args["edits"].get(0).filter(|_| name == "edit_file")?;
    let whole = |s: &str| {
        if s.ends_with('\n') || s.is_empty() {
            s.to_owned()
        } else {
            format!("{s}\n")
        }
    };
    let answer = format!(
        "{}\n```\n<<<<<<< SEARCH\n{}=======\n{}>>>>>>> REPLACE\n```\n",
        edit["path"].as_str()?,
        whole(edit["old_string"].as_str()?),
        whole(edit["new_string"].as_str()?)
    );
    Some(Case {
        name: format!("{}.blocks", case.name),
        calls: Vec::new(),
        answer: Some(answer),
        both: false,
        ..case.clone()
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Correct,
    Refused,
    Wrong,
}

fn output(env: &Env, chat: &str, path: &str) -> Option<String> {
    std::fs::read_to_string(env.chat_dir(chat).join("output").join(path)).ok()
}

fn run_case(env: &Env, fake: &FakeModel, b: &mut Bb7, case: &Case) -> (Outcome, String) {
    let chat = b.ok(json!({"action": "chat_new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (path, content) in &case.files {
        env.write(path, content);
        b.ok(json!({"action": "context_add", "path": path, "content": content}));
    }
    let calls: Vec<(&str, Value)> = case
        .calls
        .iter()
        .map(|(name, args)| {
            let mut a = args.clone();
            fill_ids(&mut a, &case.files, None);
            (name.as_str(), a)
        })
        .collect();
    match &case.answer {
        Some(answer) => fake.push_sse(response("", answer, Vec::new())),
        None => fake.push_sse(response("", "Done.", calls)),
    }
    let rid = b.send(json!({"action": "send", "content": "Please make the change."}));
    let end = loop {
        let m = b.reply_to(&rid);
        if matches!(m["type"].as_str(), Some("done" | "error" | "diff_error")) {
            break m;
        }
    };
    match (&case.expect, end["type"].as_str()) {
        (None, Some("diff_error")) => (Outcome::Correct, String::new()),
        (None, _) => (Outcome::Wrong, format!("applied, should refuse: {end}")),
        (Some(_), Some("diff_error")) => (Outcome::Refused, end["errors"].to_string()),
        (Some(expect), Some("done")) => {
            for (path, want) in expect {
                // Apply, as the user would, and read the file on disk: line endings
                // and the final newline are restored there.
                if output(env, &chat, path).is_none() {
                    return (Outcome::Wrong, format!("{path}: no output"));
                }
                b.ok(json!({"action": "apply_file", "path": path}));
                let got = env.read(path);
                if &got != want {
                    return (Outcome::Wrong, first_difference(path, want, &got));
                }
            }
            (Outcome::Correct, String::new())
        }
        (Some(_), _) => (Outcome::Wrong, format!("unexpected end: {end}")),
    }
}

/// The first line where `got` differs from `want`, with its neighbours.
fn first_difference(path: &str, want: &str, got: &str) -> String {
    let w: Vec<&str> = want.split_inclusive('\n').collect();
    let g: Vec<&str> = got.split_inclusive('\n').collect();
    let i = (0..w.len().max(g.len()))
        .find(|&i| w.get(i) != g.get(i))
        .unwrap_or(0);
    let from = i.saturating_sub(2);
    format!(
        "{path} differs at line {}:\n--- want\n{:?}\n--- got\n{:?}",
        i + 1,
        &w[from.min(w.len())..(i + 3).min(w.len())],
        &g[from.min(g.len())..(i + 3).min(g.len())]
    )
}

fn run_group(mode: String, format: &str, cases: Vec<Case>) -> Vec<(Case, Outcome, String)> {
    let (env, fake) = fake_env(json!({"diff_mode": mode, "edit_format": format}));
    let (mut b, _) = env.with_chat();
    let results = cases
        .into_iter()
        .map(|c| {
            let (o, detail) = run_case(&env, &fake, &mut b, &c);
            (c, o, detail)
        })
        .collect();
    // The process kept serving through every case.
    b.ok(json!({"action": "chat_list"}));
    results
}

#[test]
fn every_corpus_case_lands_as_expected() {
    let cases = load_cases();
    let count = cases.len();
    let blocks = cases.iter().filter(|c| c.answer.is_some()).count();
    let elisions = cases.iter().filter(|c| c.category == "elision").count();
    let mut groups: BTreeMap<(String, &str, usize), Vec<Case>> = BTreeMap::new();
    for (i, c) in cases.into_iter().enumerate() {
        groups
            .entry((c.mode.clone(), c.format(), i % 3))
            .or_default()
            .push(c);
    }
    let handles: Vec<_> = groups
        .into_iter()
        .map(|((mode, format, _), cases)| {
            std::thread::spawn(move || run_group(mode, format, cases))
        })
        .collect();
    let mut results: Vec<(Case, Outcome, String)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    results.sort_by(|a, b| (&a.0.category, &a.0.name).cmp(&(&b.0.category, &b.0.name)));
    let mut table: BTreeMap<(String, &str), [usize; 3]> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut known = Vec::new();
    for (case, outcome, detail) in &results {
        let row = table
            .entry((case.category.clone(), case.format()))
            .or_default();
        row[outcome_index(*outcome)] += 1;
        if case.known.is_some() && *outcome == Outcome::Correct {
            known.push(format!(
                "note: {}/{} is marked known but lands correctly now: drop its `known:` line",
                case.category, case.name
            ));
        } else if case.known == Some(*outcome) {
            known.push(format!(
                "note: known {:?}: {}/{}",
                outcome, case.category, case.name
            ));
        } else if *outcome != Outcome::Correct {
            failures.push(format!(
                "{}/{} {:?}: {detail}",
                case.category, case.name, outcome
            ));
        }
    }
    println!(
        "{:<24} {:<7} {:>8} {:>8} {:>8}",
        "category", "format", "correct", "refused", "wrong"
    );
    let mut totals: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for ((cat, format), row) in &table {
        println!(
            "{cat:<24} {format:<7} {:>8} {:>8} {:>8}",
            row[0], row[1], row[2]
        );
        let total = totals.entry(format).or_default();
        for i in 0..3 {
            total[i] += row[i];
        }
    }
    for (format, total) in &totals {
        println!(
            "{:<24} {format:<7} {:>8} {:>8} {:>8}",
            "total", total[0], total[1], total[2]
        );
    }
    for k in &known {
        println!("{k}");
    }
    failures.extend(referee_failures(&results));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    if std::env::var_os("BB7_CORPUS").is_some() {
        return;
    }
    assert!(count >= 120, "only {count} cases");
    assert!(blocks >= 60, "only {blocks} block-format cases");
    assert!(elisions >= 20, "only {elisions} elision cases");
}

fn outcome_index(o: Outcome) -> usize {
    match o {
        Outcome::Correct => 0,
        Outcome::Refused => 1,
        Outcome::Wrong => 2,
    }
}

/// The syntax referees (`tests/edit_gen/referees.rs`) over every correct case: a file
/// that landed is the expected file byte for byte, so what is judged is that the
/// landed file parses in its language whenever the original does; a case whose edit
/// breaks the file fails, named, whether the matcher or the expectation is at fault.
/// A file the model created (no original) is not judged. Prints the counts per
/// language.
fn referee_failures(results: &[(Case, Outcome, String)]) -> Vec<String> {
    let mut referee = referees::Referee::default();
    let mut judged = Vec::new();
    for (case, outcome, _) in results {
        let (Outcome::Correct, Some(expect)) = (outcome, &case.expect) else {
            continue;
        };
        for (path, landed) in expect {
            let Some((_, original)) = case.files.iter().find(|(f, _)| f == path) else {
                continue;
            };
            let Some(lang) = referees::Lang::of(path, original) else {
                continue;
            };
            referee.queue(lang, original);
            referee.queue(lang, landed);
            judged.push((case, path, lang, original, landed));
        }
    }
    referee.settle();
    let mut tally = referees::Tally::new();
    let mut failures = Vec::new();
    for (case, path, lang, original, landed) in judged {
        let t = tally.entry(lang).or_default();
        if referee.parses(lang, original) != Some(Ok(())) {
            t[1] += 1;
            continue;
        }
        t[0] += 1;
        if let Some(Err(why)) = referee.parses(lang, landed) {
            t[2] += 1;
            failures.push(format!(
                "{}/{}: the landed {path} does not parse as {lang:?} ({why}), the original does",
                case.category, case.name
            ));
        }
    }
    println!("{}", referees::tally_table(&tally));
    failures
}
