//! The generative test's sources and the cases each one makes: which files are read,
//! and the per-source generator that keeps a file's cases the same whatever other
//! files are added.

use std::path::{Path, PathBuf};

use super::{Case, KINDS, Rng, make_case};

/// One source file: its name (for the comment marker and the referee's language), its
/// text, and its id: what seeds its cases (see [`super::run`]), unique in a run.
pub struct Source {
    pub name: String,
    pub text: String,
    /// The file's path in the repository; a corpus case's file is
    /// `<case path>:<file name>`.
    pub id: String,
}

/// The `=== file` sections of every corpus case, and the repository's own Rust, Lua and
/// shell sources: the languages the corpus covers.
pub fn sources(root: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut cases = Vec::new();
    collect(&root.join("tests/edit_corpus"), "case", &mut cases);
    for case in cases {
        let text = std::fs::read_to_string(&case).unwrap_or_default();
        let rel = case
            .strip_prefix(root)
            .unwrap_or(&case)
            .display()
            .to_string();
        let mut current: Option<(String, String)> = None;
        for line in text.split_inclusive('\n') {
            if let Some(head) = line.strip_prefix("=== ") {
                if let Some(done) = current.take() {
                    out.push(Source {
                        id: format!("{rel}:{}", done.0),
                        name: done.0,
                        text: done.1,
                    });
                }
                if let Some(name) = head.trim().strip_prefix("file ") {
                    current = Some((name.to_owned(), String::new()));
                }
            } else if let Some((_, body)) = current.as_mut() {
                body.push_str(line);
            }
        }
        if let Some(done) = current.take() {
            out.push(Source {
                id: format!("{rel}:{}", done.0),
                name: done.0,
                text: done.1,
            });
        }
    }
    for (dir, ext) in [("src/edit", "rs"), ("lua/bb7", "lua"), ("scripts", "")] {
        let mut files = Vec::new();
        collect(&root.join(dir), ext, &mut files);
        for f in files.into_iter().take(12) {
            if let Ok(text) = std::fs::read_to_string(&f) {
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                let id = f.strip_prefix(root).unwrap_or(&f).display().to_string();
                out.push(Source { name, text, id });
            }
        }
    }
    out.retain(|s| s.text.lines().filter(|l| !l.trim().is_empty()).count() >= 4);
    out
}

fn collect(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            collect(&p, ext, out);
        } else if ext.is_empty() || p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

/// Up to `count` cases of one source, from a generator seeded by `seed` and the
/// source's id (FNV-1a of the id, so the same on every machine). Kinds in turn from
/// a place the generator draws, each tried on up to 40 regions before the next: a
/// kind few files admit (curly quotes, inner tabs) is not left to chance. A source
/// that admits no kind (too short) makes none.
pub fn source_cases(
    src: &Source,
    seed: u64,
    count: usize,
    only: Option<&str>,
) -> Vec<(&'static str, Case)> {
    let id_hash = src.id.bytes().fold(0xCBF2_9CE4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    });
    let mut rng = Rng::new(seed ^ id_hash);
    let mut k = rng.below(KINDS.len());
    let mut out = Vec::new();
    // Misses of the current kind, and kinds in a row this source did not admit.
    let (mut misses, mut passed) = (0, 0);
    while out.len() < count && passed < KINDS.len() {
        let kind = KINDS[k % KINDS.len()];
        if only.is_some_and(|o| o != kind) {
            k += 1;
            passed += 1;
            continue;
        }
        match make_case(src, kind, &mut rng) {
            Some(case) => {
                out.push((kind, case));
                k += 1;
                (misses, passed) = (0, 0);
            }
            None => {
                misses += 1;
                if misses == 40 {
                    k += 1;
                    passed += 1;
                    misses = 0;
                }
            }
        }
    }
    out
}
