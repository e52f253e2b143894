//! The generative check (`tests/edit_gen/mod.rs`) over `tests/edit_gen/sources/`:
//! small real-looking files in languages with a syntax referee that the corpus has few
//! files in (TOML, HTML) or whose referee judges what the corpus files rarely hold (a
//! Makefile's conditionals and `define`, YAML anchors). It is a run of its own so the
//! main run's seeded sequence over the corpus stays as it is; every landed result must
//! be the intended file and still parse (`tests/edit_gen/referees.rs`).

#[allow(dead_code)]
mod edit_gen;

use std::path::Path;

use edit_gen::Source;
use edit_gen::referees::Lang;

#[test]
fn generated_mistakes_in_the_referee_samples_land_as_intended_or_are_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/edit_gen/sources");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let sources: Vec<Source> = names
        .into_iter()
        .map(|name| Source {
            text: std::fs::read_to_string(dir.join(&name)).unwrap(),
            id: format!("tests/edit_gen/sources/{name}"),
            name,
        })
        .collect();
    for s in &sources {
        assert!(
            Lang::of(&s.name, &s.text).is_some(),
            "{}: no referee reads it",
            s.name
        );
    }
    let n = 60 * edit_gen::KINDS.len();
    let (counts, wrong) = edit_gen::run(&sources, 0x5EED_0040, n);
    println!("{}", edit_gen::table(&counts));
    let tally = edit_gen::REFEREED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    println!("{}", edit_gen::referees::tally_table(&tally));
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n=========\n\n"));
    // Each sample language is judged, not skipped: its samples parse and its checker
    // ran (all of them are installed in CI).
    for lang in [Lang::Toml, Lang::Html, Lang::Yaml, Lang::Makefile] {
        let judged = tally.get(&lang).map_or(0, |t| t[0]);
        assert!(judged >= 20, "{lang:?}: only {judged} results judged");
    }
}
