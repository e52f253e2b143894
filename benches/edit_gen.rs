//! The generative check of the matcher at a larger size than CI runs (see
//! `tests/edit_gen/mod.rs`): 50,000 seeded edits with the model's mistakes derived by
//! rule, counted per mistake kind. Prints the table and the cases per second; exits
//! non-zero on any wrong outcome. Run with `cargo bench --bench edit_gen` (the count
//! can be set with `BB7_GEN_CASES`, the first of its ten seeds with `BB7_GEN_SEED`, so a
//! run can look at cases no earlier run made).

use std::path::Path;
use std::time::Instant;

#[path = "../tests/edit_gen/mod.rs"]
mod edit_gen;

fn main() {
    let n: usize = std::env::var("BB7_GEN_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let base: u64 = std::env::var("BB7_GEN_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xB7_0000);
    let sources = edit_gen::pick::sources(Path::new(env!("CARGO_MANIFEST_DIR")));
    let t = Instant::now();
    let mut wrong_cases = Vec::new();
    let mut total = edit_gen::Counts::new();
    // Several seeds, so the larger run is not the CI run repeated.
    for seed in 0..10u64 {
        let (counts, wrong) = edit_gen::run(&sources, base + seed, n / 10);
        for (k, c) in counts {
            let t = total.entry(k).or_default();
            for i in 0..3 {
                t[i] += c[i];
            }
        }
        wrong_cases.extend(wrong);
    }
    let secs = t.elapsed().as_secs_f64();
    print!("{}", edit_gen::table(&total));
    println!("{n} cases in {secs:.1} s ({:.0} cases/s)", n as f64 / secs);
    let tally = edit_gen::REFEREED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    print!("{}", edit_gen::referees::tally_table(&tally));
    if !wrong_cases.is_empty() {
        eprintln!("{}", wrong_cases.join("\n\n=========\n\n"));
        std::process::exit(1);
    }
}
