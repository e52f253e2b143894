//! The generative check of the matcher in CI (see `tests/edit_gen/mod.rs`): a few
//! thousand seeded edits with the model's mistakes derived by rule; each lands as
//! intended or is refused, never wrong. Run in process (the matcher alone), so it
//! takes seconds; `cargo bench --bench edit_gen` runs a larger set.

mod edit_gen;

use std::path::Path;

#[test]
fn every_generated_mistake_lands_as_intended_or_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = edit_gen::sources(root);
    assert!(sources.len() > 100, "only {} source files", sources.len());
    let (counts, wrong) = edit_gen::run(&sources, 0x5EED_0035, 3000);
    println!("{}", edit_gen::table(&counts));
    println!(
        "correct results the second reader refused: {}",
        edit_gen::OVERRULED.load(std::sync::atomic::Ordering::Relaxed)
    );
    let total: usize = counts.values().map(|c| c[0] + c[1] + c[2]).sum();
    assert!(total >= 3000, "only {total} cases were generated");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n=========\n\n"));
    for (kind, c) in &counts {
        assert!(c[0] + c[1] + c[2] >= 30, "{kind}: only {c:?}");
    }
}
