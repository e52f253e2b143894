//! The generative check of the matcher in CI (see `tests/edit_gen/mod.rs`): a few
//! thousand seeded edits with the model's mistakes derived by rule; each lands as
//! intended or is refused, never wrong, and a landed Python, JSON, shell, JavaScript,
//! Go, Rust, TypeScript or C file still parses when the original and the intended file
//! do (the syntax referees, `tests/edit_gen/referees.rs`). Run in process (the matcher
//! alone), so it takes seconds; `cargo bench --bench edit_gen` runs a larger set.

mod edit_gen;

use std::path::Path;

use edit_gen::referees::{Lang, Referee, breaks};

#[test]
fn every_generated_mistake_lands_as_intended_or_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = edit_gen::pick::sources(root);
    assert!(sources.len() > 100, "only {} source files", sources.len());
    let (counts, wrong) = edit_gen::run(&sources, 0x5EED_0035, 4000);
    println!("{}", edit_gen::table(&counts));
    println!(
        "correct results the second reader refused: {}",
        edit_gen::OVERRULED.load(std::sync::atomic::Ordering::Relaxed)
    );
    let tally = edit_gen::REFEREED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    println!("{}", edit_gen::referees::tally_table(&tally));
    let total: usize = counts.values().map(|c| c[0] + c[1] + c[2]).sum();
    // Each file makes 4000/files cases rounded up, a few files fewer (too short for
    // some kinds): about 4000, whatever the number of files.
    assert!(total >= 3600, "only {total} cases were generated");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n=========\n\n"));
    // Every kind runs. The kinds few files admit (escaped_quotes, typography_kept:
    // about 35 each) have only the files whose sequence reaches them; the floor leaves
    // room for the corpus's files coming and going.
    for (kind, c) in &counts {
        assert!(c[0] + c[1] + c[2] >= 20, "{kind}: only {c:?}");
    }
    // The tree-sitter referees need nothing installed: the corpus's Go and TypeScript
    // files and the repository's Rust are judged in every run, not skipped.
    for lang in [Lang::Go, Lang::Rust, Lang::TypeScript] {
        let judged = tally.get(&lang).map_or(0, |t| t[0]);
        assert!(judged >= 50, "{lang:?}: only {judged} results judged");
    }
}

/// The referees themselves: for each language, a result that breaks a parse the
/// original and the intended file pass is named, an intended result is not, and a
/// case whose intended file does not parse is not judged. Python and bash are in CI;
/// a missing checker (node) is skipped with the referee's printed note.
#[test]
fn the_syntax_referees_name_a_result_that_breaks_the_parse() {
    let cases: [(Lang, &str, &str, &str, &str); 4] = [
        (
            Lang::Python,
            "def f(x):\n    return x\n",
            "def f(x):\n    y = x\n    return y\n",
            "def f(x):\n    y = x\n  return y\n",
            "def f(x):\n    y = x\n    return y)\n",
        ),
        (
            Lang::Json,
            "{\"a\": 1}\n",
            "{\"a\": 1, \"b\": 2}\n",
            "{\"a\": 1,, \"b\": 2}\n",
            "{\"a\": 1, // b\n}\n",
        ),
        (
            Lang::Shell,
            "cat <<EOF\nx\nEOF\necho done\n",
            "cat <<EOF\nx\ny\nEOF\necho done\n",
            "if true; then\ncat <<EOF\nx\ny\n  EOF\nfi\n",
            "echo 'open\n",
        ),
        (
            Lang::JavaScript,
            "export function f(a) {\n  return a;\n}\n",
            "export function f(a) {\n  const b = \"\\n\";\n  return a + b;\n}\n",
            "export function f(a) {\n  const b = \"\n\";\n  return a + b;\n}\n",
            "export function f(a) {\n  return a +;\n}\n",
        ),
    ];
    let mut referee = Referee::default();
    for (lang, original, intended, broken, bad_intended) in cases {
        for t in [original, intended, broken, bad_intended] {
            referee.queue(lang, t);
        }
    }
    referee.settle();
    for (lang, original, intended, broken, bad_intended) in cases {
        if referee.parses(lang, original).is_none() {
            assert_eq!(lang, Lang::JavaScript, "{lang:?}: the checker is in CI");
            continue;
        }
        assert_eq!(referee.parses(lang, original), Some(Ok(())), "{lang:?}");
        assert_eq!(
            breaks(&referee, lang, original, intended, intended),
            None,
            "{lang:?}"
        );
        assert!(
            breaks(&referee, lang, original, intended, broken).is_some(),
            "{lang:?}: {broken:?} is not seen as broken"
        );
        assert_eq!(
            breaks(&referee, lang, original, bad_intended, broken),
            None,
            "{lang:?}: an intended file that does not parse judges nothing"
        );
    }
}

/// A source's cases come from its own generator (the run's seed and the file's id):
/// they are the same whatever other files the run reads, and a run that gives each
/// file fewer cases (more files sharing the same size) gives it the first of the same.
/// So a corpus case added changes no other file's generated mistakes.
#[test]
fn each_source_makes_the_same_cases_whatever_the_other_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = edit_gen::pick::sources(root);
    let key = |cases: Vec<(&'static str, edit_gen::Case)>| -> Vec<(&str, String, String)> {
        cases.into_iter().map(|(k, c)| (k, c.old, c.new)).collect()
    };
    let ids: std::collections::HashSet<&str> = sources.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids.len(), sources.len(), "source ids are not unique");
    let mut compared = 0;
    for src in sources.iter().step_by(25) {
        let eight = key(edit_gen::pick::source_cases(src, 0x5EED_0035, 8, None));
        let seven = key(edit_gen::pick::source_cases(src, 0x5EED_0035, 7, None));
        assert!(
            eight.starts_with(&seven),
            "{}: the shorter run is not a prefix",
            src.id
        );
        let other_seed = key(edit_gen::pick::source_cases(src, 0x5EED_0036, 8, None));
        if !eight.is_empty() {
            assert_ne!(eight, other_seed, "{}: the seed is not used", src.id);
            compared += 1;
        }
    }
    assert!(compared >= 10, "only {compared} sources compared");
}
