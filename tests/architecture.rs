//! The import graph of `src/` keeps the shape docs/ARCHITECTURE.md ("Code map") gives
//! it: no module imports one on a higher floor, and no two files import each other,
//! directly or around a loop (a parent's `use child::…` and a child's `use super::…`
//! count as imports too).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors of docs/ARCHITECTURE.md, lowest first: a top-level module may import
/// modules on its own floor or below.
const FLOORS: &[&[&str]] = &[
    &["error", "text", "diff", "tokens"],
    &["project", "config", "filecache", "debug_log"],
    &["chat"],
    &["context", "recovery"],
    &["edit", "apply", "output", "review"],
    &["llm", "tools", "prompt", "mcp"],
    &["protocol"],
    &["turn"],
    &["server"],
    &["front"],
    &["cli", "acp", "lib", "main"],
];

type Module = Vec<String>;

fn floor(top: &str) -> usize {
    FLOORS
        .iter()
        .position(|f| f.contains(&top))
        .unwrap_or_else(|| {
            panic!("src/{top} is on no floor: add it to FLOORS and to docs/ARCHITECTURE.md")
        })
}

/// Every `.rs` file under `src/` as its module path (`src/edit/mod.rs` → `[edit]`).
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).unwrap().with_extension("");
                let mut parts: Module = rel
                    .iter()
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                if matches!(
                    parts.last().map(String::as_str),
                    Some("mod" | "lib" | "main")
                ) {
                    let last = parts.pop().unwrap();
                    if parts.is_empty() {
                        parts.push(last);
                    }
                }
                out.insert(parts, path);
            }
        }
    }
    out
}

/// The code of a file without its tests and comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths after `crate::` / `super::` (and `child::` for a declared child module),
/// resolved to the longest module prefix that is a file.
fn imports(module: &Module, path: &Path, all: &BTreeMap<Module, PathBuf>) -> BTreeSet<Module> {
    let text = code(path);
    let is_mod_file = matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("mod.rs" | "lib.rs" | "main.rs")
    );
    // The module a `super::` in this file names.
    let parent: Module = if is_mod_file {
        module[..module.len().saturating_sub(1)].to_vec()
    } else {
        module[..module.len() - 1].to_vec()
    };
    let mut found = BTreeSet::new();
    let mut resolve = |mut segs: Module| {
        while !segs.is_empty() {
            if all.contains_key(&segs) {
                if &segs != module {
                    found.insert(segs);
                }
                return;
            }
            segs.pop();
        }
    };
    let idents = |rest: &str| -> Module {
        rest.split("::")
            .map(|s| {
                s.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|s| !s.is_empty())
            .collect()
    };
    let bytes = text.as_bytes();
    for (kw, base) in [("crate::", Module::new()), ("super::", parent.clone())] {
        for (i, _) in text.match_indices(kw) {
            if i > 0
                && (bytes[i - 1].is_ascii_alphanumeric()
                    || bytes[i - 1] == b'_'
                    || bytes[i - 1] == b':')
            {
                continue;
            }
            let mut segs = base.clone();
            segs.extend(idents(&text[i + kw.len()..]));
            resolve(segs);
        }
    }
    // `use child::…` from a parent that declares `mod child;`.
    let own = module.clone();
    for line in text.lines() {
        let l = line
            .trim_start()
            .trim_start_matches("pub ")
            .trim_start_matches("pub(crate) ");
        if let Some(name) = l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            let mut child = own.clone();
            child.push(name.trim().to_owned());
            let needle = format!("{}::", name.trim());
            let used = text.match_indices(&needle).any(|(i, _)| {
                i == 0
                    || !(bytes[i - 1].is_ascii_alphanumeric()
                        || bytes[i - 1] == b'_'
                        || bytes[i - 1] == b':')
            });
            if used && all.contains_key(&child) {
                found.insert(child);
            }
        }
    }
    found
}

#[test]
fn no_import_points_up_and_no_files_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let all = modules(&src);
    let graph: BTreeMap<Module, BTreeSet<Module>> = all
        .iter()
        .map(|(m, p)| (m.clone(), imports(m, p, &all)))
        .collect();

    let mut up = Vec::new();
    for (from, tos) in &graph {
        for to in tos {
            if floor(&to[0]) > floor(&from[0]) {
                up.push(format!("{} -> {}", from.join("/"), to.join("/")));
            }
        }
    }
    assert!(up.is_empty(), "imports that point up a floor: {up:#?}");

    // A loop is a module that reaches itself.
    let mut loops = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&Module> = graph[start].iter().collect();
        while let Some(m) = stack.pop() {
            if m == start {
                loops.push(start.join("/"));
                break;
            }
            if seen.insert(m) {
                stack.extend(graph.get(m).into_iter().flatten());
            }
        }
    }
    assert!(loops.is_empty(), "modules on an import loop: {loops:?}");
}

/// The two fronts stand side by side on the top floor: neither the command line nor
/// `bb7 acp` imports the other (what both need is on the floor below, `front`).
#[test]
fn the_fronts_do_not_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let all = modules(&src);
    let mut across = Vec::new();
    for (m, p) in &all {
        let other = match m[0].as_str() {
            "cli" => "acp",
            "acp" => "cli",
            _ => continue,
        };
        for to in imports(m, p, &all) {
            if to[0] == other {
                across.push(format!("{} -> {}", m.join("/"), to.join("/")));
            }
        }
    }
    assert!(
        across.is_empty(),
        "fronts importing each other: {across:#?}"
    );
}
