//! The token counter (`bb7::tokens::count`) against `tiktoken-rs`'s own
//! `encode_ordinary` on the same texts in the same process: this repository's Rust
//! sources, a burst of 200 repetitive files (8 MB, the shape of the `adds` bench) and
//! English prose and text outside ASCII. Counts must agree; times are printed as ratios, never asserted.
//! Run with `cargo bench --bench tokens`.

use std::time::{Duration, Instant};

fn main() {
    let sources = rust_sources();
    let line = "    let value = compute(alpha, beta, gamma); // adjust the running total here\n";
    let burst: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "// file {i}\n{}",
                line.repeat(8 * 1024 * 1024 / 200 / line.len())
            )
        })
        .collect();
    let prose: Vec<String> = (0..50)
        .map(|i| {
            format!(
                "Paragraph {i}. The committee met on Tuesday to discuss the budget, \
                 which had grown by {i}% since last year's review; members asked why \
                 travel costs doubled while staffing stayed flat.\n"
            )
            .repeat(200)
        })
        .collect();
    let unicode: Vec<String> = (0..50)
        .map(|i| format!("{i}: 日本語のテキスト、naïve café — Ünïcödé straße 🎉 ½ ٣\n").repeat(400))
        .collect();
    let t = Instant::now();
    let reference = tiktoken_rs::cl100k_base().expect("tokenizer");
    println!("tiktoken-rs cl100k_base(): {:.1?}", t.elapsed());
    let (_, load) = timed(|| bb7::tokens::count("warm up"));
    println!("loading the tokenizer (first count): {load:.1?}");
    for (name, texts) in [
        ("Rust sources", &sources),
        ("200 repetitive files", &burst),
        ("prose", &prose),
        ("mixed Unicode", &unicode),
    ] {
        let bytes: usize = texts.iter().map(|t| t.len()).sum();
        let (ours, ours_time) = timed(|| texts.iter().map(|t| bb7::tokens::count(t)).sum());
        let (theirs, theirs_time) = timed(|| {
            texts
                .iter()
                .map(|t| reference.encode_ordinary(t).len())
                .sum()
        });
        let exact = if bytes / texts.len() <= bb7::tokens::EXACT_LIMIT {
            if ours == theirs { "equal" } else { "DIFFER" }
        } else {
            "sampled"
        };
        println!(
            "{name:<22} {:>6.2} MB  {ours:>9} tokens ({exact} to tiktoken's {theirs})  {ours_time:>9.1?}  {:.3}x tiktoken-rs ({theirs_time:.1?})",
            bytes as f64 / 1e6,
            ours_time.as_secs_f64() / theirs_time.as_secs_f64(),
        );
    }
}

fn timed(f: impl FnOnce() -> usize) -> (usize, Duration) {
    let t = Instant::now();
    let n = f();
    (n, t.elapsed())
}

/// Every `.rs` file under `src/`, each one text.
fn rust_sources() -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(std::fs::read_to_string(&path).expect("source"));
            }
        }
    }
    out
}
