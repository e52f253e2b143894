//! The generative check of the matcher: from real files (the files of the edit corpus
//! and the repository's own sources), pick a region and an intended change, derive the
//! model's mistakes by rule, and run each through `search_replace`. Every outcome must
//! be the intended file or a refusal; anything else is counted as wrong.
//!
//! Used by `tests/edit_generated.rs` (a few thousand seeded cases in CI) and
//! `benches/edit_gen.rs` (a larger run).

use std::collections::BTreeMap;

use bb7::edit::matching::search_replace;

pub mod kinds;
pub mod pick;
pub mod referees;

pub use pick::Source;

/// A small deterministic generator (SplitMix64), so every run of a seed is the same.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The mistakes a model makes, each derived by rule from the exact edit.
pub const KINDS: [&str; 23] = [
    "exact",
    "shift_left",
    "shift_right",
    "unit_2_4",
    "tabs_spaces",
    "cut_first_at_token",
    "cut_first_inside_word",
    "cut_last",
    "blank_lines",
    "trailing_spaces",
    "crlf",
    "elide",
    "duplicate_block",
    "escaped_quotes",
    "typography_kept",
    "inner_tab_kept",
    "bom",
    "fragment_dedented",
    "elide_across",
    "nfd_nfc",
    "heredoc",
    "placeholder",
    "placeholder_bare",
];

/// The `intended` of a case that must be refused: no result equals it.
pub const MUST_REFUSE: &str = "\u{0}(must be refused)";

/// Results the matcher got right that the second reader refused (over-refusals).
pub static OVERRULED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Outcome counts of one kind: correct, refused, wrong.
pub type Counts = BTreeMap<&'static str, [usize; 3]>;

/// Referee counts of the runs so far (see [`referees::Tally`]).
pub static REFEREED: std::sync::Mutex<referees::Tally> = std::sync::Mutex::new(BTreeMap::new());

/// Runs about `n` cases from `seed` (`n` shared out evenly: each source makes up to
/// `n / sources` cases, rounded up); returns the counts and the first wrong cases (up
/// to 5) described for a reader. A landed result in a language with a syntax referee
/// that breaks a parse the original and the intended file pass is wrong too.
///
/// Each source's cases come from a generator of its own, seeded by `seed` and the
/// source's id (see [`pick::source_cases`]): a corpus case added or removed changes no
/// other file's cases, where one sequence drawn across all the files reshuffled them
/// all.
pub fn run(sources: &[Source], seed: u64, n: usize) -> (Counts, Vec<String>) {
    let only = std::env::var("BB7_GEN_KIND").ok();
    let per_source = n.div_ceil(sources.len().max(1));
    let mut counts: Counts = KINDS.iter().map(|k| (*k, [0; 3])).collect();
    let mut wrong = Vec::new();
    let mut referee = referees::Referee::default();
    // Landed results to referee once the whole run's texts are checked in batches.
    let mut landed: Vec<(&'static str, referees::Lang, usize, Case, String)> = Vec::new();
    let planned = sources.iter().flat_map(|src| {
        pick::source_cases(src, seed, per_source, only.as_deref())
            .into_iter()
            .map(move |(kind, case)| (src, kind, case))
    });
    for (src, kind, case) in planned {
        // Both readers, as the plan runs them: the matcher, then the independent check.
        let got = search_replace(&case.file, &case.old, &case.new, false).and_then(|out| {
            match bb7::edit::verify::check(&case.file, &case.old, &case.new, &out) {
                Ok(()) => Ok(out),
                Err(why) => {
                    if out == case.intended {
                        OVERRULED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(bb7::edit::EditError::Invalid(why))
                }
            }
        });
        let slot = match &got {
            Ok(out) if *out == case.intended => 0,
            Err(_) => 1,
            Ok(_) => 2,
        };
        counts.get_mut(kind).unwrap()[slot] += 1;
        let lang = if kind == "heredoc" {
            Some(referees::Lang::Shell)
        } else {
            referees::Lang::of(&src.name, &src.text)
        };
        if let (Some(lang), Ok(out)) = (lang, &got) {
            for text in [&case.file, &case.intended, out] {
                referee.queue(lang, text);
            }
        }
        if slot == 2 && wrong.len() < 5 {
            wrong.push(format!(
                "{kind} in {}:\n--- file\n{}\n--- old\n{:?}\n--- new\n{:?}\n--- intended\n{:?}\n--- got\n{:?}",
                src.name,
                case.file,
                case.old,
                case.new,
                case.intended,
                got.as_ref().unwrap()
            ));
        }
        if let (Some(lang), Ok(out)) = (lang, got) {
            landed.push((kind, lang, slot, case, out));
        }
    }
    referee.settle();
    let mut tally = REFEREED.lock().unwrap_or_else(|e| e.into_inner());
    for (kind, lang, slot, case, got) in landed {
        let t = tally.entry(lang).or_default();
        let parse = |text: &str| referee.parses(lang, text).is_some_and(|r| r.is_ok());
        t[if parse(&case.file) && parse(&case.intended) {
            0
        } else {
            1
        }] += 1;
        let Some(why) = referees::breaks(&referee, lang, &case.file, &case.intended, &got) else {
            continue;
        };
        t[2] += 1;
        // A result already counted wrong stays one wrong; its report above names the
        // text, this one the parse it broke.
        if slot == 0 {
            let c = counts.get_mut(kind).unwrap();
            c[0] -= 1;
            c[2] += 1;
        }
        if wrong.len() < 10 {
            wrong.push(format!(
                "{kind} breaks the {lang:?} parse ({why}):\n--- file\n{}\n--- old\n{:?}\n--- new\n{:?}\n--- got\n{:?}",
                case.file, case.old, case.new, got
            ));
        }
    }
    (counts, wrong)
}

/// One generated edit.
pub struct Case {
    pub file: String,
    pub old: String,
    pub new: String,
    pub intended: String,
}

fn comment(name: &str) -> &'static str {
    let ext = name.rsplit('.').next().unwrap_or("");
    match ext {
        "py" | "yaml" | "yml" | "sh" | "rb" | "toml" => "#",
        "lua" | "sql" => "--",
        "md" => "<!--",
        _ if !name.contains('.') => "#",
        _ => "//",
    }
}

fn indent(l: &str) -> &str {
    &l[..l.len() - l.trim_start_matches([' ', '\t']).len()]
}

fn make_case(src: &Source, kind: &str, rng: &mut Rng) -> Option<Case> {
    let mut file = src.text.replace("\r\n", "\n");
    if !file.ends_with('\n') {
        file.push('\n');
    }
    let lines: Vec<&str> = file.split_inclusive('\n').collect();
    let len = 2 + rng.below(5);
    if lines.len() < len + 1 {
        return None;
    }
    let start = rng.below(lines.len() - len + 1);
    let region: Vec<&str> = lines[start..start + len].to_vec();
    if region[0].trim().is_empty() || region[len - 1].trim().is_empty() {
        return None;
    }
    // The intended change: a line changed, a line added under one, or a line removed.
    let at = rng.below(len);
    let mut changed: Vec<String> = region.iter().map(|l| (*l).to_owned()).collect();
    let marker = comment(&src.name);
    let tag = format!("{marker} gen {}", rng.below(1000));
    match rng.below(3) {
        0 if !region[at].trim().is_empty() => {
            let l = region[at].trim_end_matches('\n');
            changed[at] = format!("{l} {tag}\n");
        }
        1 => {
            changed.insert(at + 1, format!("{}{tag}\n", indent(region[at])));
        }
        _ if len > 2 && at > 0 && at < len - 1 && !region[at].trim().is_empty() => {
            changed.remove(at);
        }
        _ => return None,
    }
    let old: String = region.concat();
    let new: String = changed.concat();
    let intended = format!(
        "{}{new}{}",
        lines[..start].concat(),
        lines[start + len..].concat()
    );
    // The exact edit must be unique and must apply as intended, or it says nothing.
    if file.matches(&old).count() != 1 {
        return None;
    }
    let (file, old, new, intended) = mistake(kind, file, old, new, intended, rng, &tag)?;
    if old == new || old.trim().is_empty() {
        return None;
    }
    // A re-indented copy that is, word for word, other lines of the file says those
    // lines: the edit is no longer a mistake of the intended one.
    let whole = |o: &str| file.starts_with(o) || file.contains(&format!("\n{o}"));
    if ["shift_left", "shift_right", "unit_2_4", "tabs_spaces"].contains(&kind) && whole(&old) {
        return None;
    }
    // Nor is a shifted copy that other lines of the file give under another uniform
    // shift (`}` `}` one column right of one pair of closing braces, five of the next
    // pair): it has two readings, and which one the model meant is not known.
    if ["shift_left", "shift_right"].contains(&kind) && shifted_elsewhere(&file, &old, start) {
        return None;
    }
    Some(Case {
        file,
        old,
        new,
        intended,
    })
}

/// Whether the lines of `copy` are, up to one indentation shift for all of them,
/// the file's lines at a line other than `start`.
fn shifted_elsewhere(file: &str, copy: &str, start: usize) -> bool {
    let lines: Vec<&str> = file.lines().collect();
    let copy: Vec<&str> = copy.lines().collect();
    (0..=lines.len().saturating_sub(copy.len()))
        .filter(|&p| p != start)
        .any(|p| {
            let mut shift = None;
            copy.iter().zip(&lines[p..]).all(|(c, l)| {
                if c.trim().is_empty() && l.trim().is_empty() {
                    return true;
                }
                if c.trim_start() != l.trim_start() {
                    return false;
                }
                let d = indent(c).len() as isize - indent(l).len() as isize;
                *shift.get_or_insert(d) == d
            })
        })
}

fn map_lines(s: &str, f: impl Fn(&str) -> String) -> String {
    s.split_inclusive('\n').map(f).collect()
}

fn mistake(
    kind: &str,
    file: String,
    old: String,
    new: String,
    intended: String,
    rng: &mut Rng,
    tag: &str,
) -> Option<(String, String, String, String)> {
    let min_indent = |s: &str| {
        s.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| indent(l).len())
            .min()
            .unwrap_or(0)
    };
    Some(match kind {
        "exact" => (file, old, new, intended),
        "shift_left" => {
            let k = min_indent(&old).min(min_indent(&new));
            if k == 0 || old.contains('\t') || new.contains('\t') {
                return None;
            }
            let k = 1 + rng.below(k);
            let cut = |s: &str| {
                map_lines(s, |l| {
                    if l.trim().is_empty() {
                        l.to_owned()
                    } else {
                        l[k..].to_owned()
                    }
                })
            };
            (file, cut(&old), cut(&new), intended)
        }
        "shift_right" => {
            // Tab-indented lines get one tab more; space-indented ones 1 to 8 spaces.
            let pad = if old.starts_with('\t') || old.contains("\n\t") {
                "\t".to_owned()
            } else {
                " ".repeat(1 + rng.below(8))
            };
            let add = |s: &str| {
                map_lines(s, |l| {
                    if l.trim().is_empty() {
                        l.to_owned()
                    } else {
                        format!("{pad}{l}")
                    }
                })
            };
            (file, add(&old), add(&new), intended)
        }
        "unit_2_4" => {
            // Every level doubled, or halved (in a file of a four-space unit); lines
            // aligned off the grid are not levels, so such regions are left out.
            let unit = file
                .lines()
                .map(|l| indent(l).len())
                .filter(|&w| w > 0)
                .min()
                .unwrap_or(4);
            let on_grid = |s: &str| s.lines().all(|l| indent(l).len().is_multiple_of(unit));
            if file.contains("\n\t") || file.starts_with('\t') || !on_grid(&old) || !on_grid(&new) {
                return None;
            }
            let halve = unit >= 4 && rng.below(2) == 0;
            let conv = |s: &str| {
                map_lines(s, |l| {
                    let w = indent(l).len();
                    let w = if halve { w / 2 } else { w * 2 };
                    format!("{}{}", " ".repeat(w), l.trim_start_matches(' '))
                })
            };
            (file, conv(&old), conv(&new), intended)
        }
        "tabs_spaces" => {
            // Spaces become one tab per level of the file's unit (the smallest
            // indentation in the file); tabs become four spaces each.
            let unit = file
                .lines()
                .map(|l| indent(l).len())
                .filter(|&w| w > 0)
                .min()
                .unwrap_or(4);
            let on_grid = |s: &str| {
                s.lines()
                    .all(|l| indent(l).contains('\t') || indent(l).len().is_multiple_of(unit))
            };
            // A file that indents with both (a Makefile) has no one conversion.
            let tabs = file.lines().any(|l| l.starts_with('\t'));
            let spaces = file.lines().any(|l| l.starts_with(' '));
            if !on_grid(&old) || !on_grid(&new) || (tabs && spaces) {
                return None;
            }
            let conv = |s: &str| {
                map_lines(s, |l| {
                    let i = indent(l);
                    if i.contains('\t') {
                        format!("{}{}", i.replace('\t', "    "), &l[i.len()..])
                    } else {
                        format!("{}{}", "\t".repeat(i.len() / unit), &l[i.len()..])
                    }
                })
            };
            (file, conv(&old), conv(&new), intended)
        }
        "cut_first_at_token" | "cut_first_inside_word" => {
            let first = old.split_inclusive('\n').next()?;
            if !new.starts_with(first) {
                return None;
            }
            let body = first.trim_start();
            let skip = indent(first).len();
            let cuts: Vec<usize> = body
                .char_indices()
                .filter(|&(i, c)| {
                    let prev = body[..i].chars().next_back();
                    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    let inside = word(prev) && word(Some(c));
                    i > 0 && c != '\n' && (inside == (kind == "cut_first_inside_word"))
                })
                .map(|(i, _)| i)
                .collect();
            if cuts.is_empty() {
                return None;
            }
            let c = skip + cuts[rng.below(cuts.len())];
            (file, old[c..].to_owned(), new[c..].to_owned(), intended)
        }
        "cut_last" => {
            let last = old.split_inclusive('\n').next_back()?;
            if !new.ends_with(last) {
                return None;
            }
            let mut keep = indent(last).len() + 1 + rng.below(last.trim().len().max(1));
            while !last.is_char_boundary(keep.min(last.len())) {
                keep += 1;
            }
            if keep >= last.trim_end().len() {
                return None;
            }
            let drop = last.len() - keep;
            (
                file,
                old[..old.len() - drop].to_owned(),
                new[..new.len() - drop].to_owned(),
                intended,
            )
        }
        "blank_lines" => {
            if rng.below(2) == 0 {
                (file, format!("\n{old}\n"), format!("\n{new}\n"), intended)
            } else {
                let drop = |s: &str| {
                    map_lines(s, |l| {
                        if l.trim().is_empty() {
                            String::new()
                        } else {
                            l.to_owned()
                        }
                    })
                };
                if !old.lines().any(|l| l.trim().is_empty()) {
                    return None;
                }
                (file, drop(&old), drop(&new), intended)
            }
        }
        "trailing_spaces" => {
            // Trailing spaces on the lines the model copied (its changed lines are
            // written clean).
            let copied: Vec<&str> = old.split_inclusive('\n').collect();
            let pad = |s: &str| {
                map_lines(s, |l| {
                    if copied.contains(&l) {
                        format!("{}  \n", l.trim_end_matches('\n'))
                    } else {
                        l.to_owned()
                    }
                })
            };
            (file, pad(&old), pad(&new), intended)
        }
        "typography_kept" | "inner_tab_kept" => {
            // The file writes a line the edit keeps with typographic quotes or an
            // aligning tab; the model's copy has ASCII quotes or spaces.
            let typo = kind == "typography_kept";
            let dress = |l: &str| -> Option<String> {
                if typo {
                    l.contains('"').then(|| l.replace('"', "\u{201C}"))
                } else {
                    let t = l.trim_start();
                    let at = t.find(' ').filter(|&i| i > 0 && !t.contains('"'))?;
                    let cut = l.len() - t.len() + at;
                    let rest = l[cut..].trim_start_matches(' ');
                    Some(format!("{}\t{rest}", &l[..cut]))
                }
            };
            let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
            // A changed line dressed the same way has two readings (keep the file's
            // dress or take the model's): only kept lines are dressed.
            if old.split_inclusive('\n').any(|l| {
                dress(l).is_some()
                    && old.split_inclusive('\n').filter(|o| *o == l).count()
                        != new_lines.iter().filter(|n| **n == l).count()
            }) {
                return None;
            }
            let mut dressed = 0;
            let mut old_d = String::new();
            for l in old.split_inclusive('\n') {
                match dress(l).filter(|_| new_lines.contains(&l)) {
                    Some(d) => {
                        dressed += 1;
                        old_d.push_str(&d);
                    }
                    None => old_d.push_str(l),
                }
            }
            let new_d: String = new_lines
                .iter()
                .map(|l| {
                    if old.split_inclusive('\n').any(|o| o == *l) {
                        dress(l).unwrap_or_else(|| (*l).to_owned())
                    } else {
                        (*l).to_owned()
                    }
                })
                .collect();
            // The copy may say other lines up to indentation, closer than the dressed
            // ones: then it is no longer a mistake of the intended edit.
            let trim = |t: &str| t.lines().map(|l| l.trim().to_owned()).collect::<Vec<_>>();
            let (ft, ot) = (trim(&file.replacen(&old, &old_d, 1)), trim(&old));
            if ft.windows(ot.len()).any(|w| w == ot.as_slice()) {
                return None;
            }
            if dressed == 0
                || file.matches(&old).count() != 1
                || intended.matches(&new).count() != 1
            {
                return None;
            }
            (
                file.replacen(&old, &old_d, 1),
                old,
                new.clone(),
                intended.replacen(&new, &new_d, 1),
            )
        }
        "bom" => (
            format!("\u{FEFF}{file}"),
            old,
            new,
            format!("\u{FEFF}{intended}"),
        ),
        "crlf" => {
            if rng.below(2) == 0 {
                // A CRLF file, the model's text in LF.
                (
                    file.replace('\n', "\r\n"),
                    old,
                    new,
                    intended.replace('\n', "\r\n"),
                )
            } else {
                (
                    file,
                    old.replace('\n', "\r\n"),
                    new.replace('\n', "\r\n"),
                    intended,
                )
            }
        }
        "elide" => {
            let ol: Vec<&str> = old.split_inclusive('\n').collect();
            let nl: Vec<&str> = new.split_inclusive('\n').collect();
            if ol.len() < 4 {
                return None;
            }
            // Elide the old lines before the change that new_string keeps too.
            let same = ol.iter().zip(&nl).take_while(|(a, b)| a == b).count();
            if same < 3 {
                return None;
            }
            let ind = indent(ol[1]);
            let marker = format!("{ind}{} ...\n", tag.split(' ').next().unwrap_or("//"));
            let cut = |v: &[&str]| format!("{}{marker}{}", v[0], v[same - 1..].concat());
            (file, cut(&ol), cut(&nl), intended)
        }
        "fragment_dedented" | "elide_across" | "nfd_nfc" | "heredoc" | "placeholder"
        | "placeholder_bare" => kinds::mistake(kind, (file, old, new, intended), rng, tag)?,
        "duplicate_block" => {
            // The same lines sit twice in the file: the edit names neither.
            let file2 = format!("{file}{old}");
            let intended2 = format!("{intended}{old}");
            (file2, old, new, intended2)
        }
        "escaped_quotes" => {
            if !old.contains('"') || old.contains('\\') || new.contains('\\') {
                return None;
            }
            let esc = |s: &str| {
                s.replace('"', "\\\"")
                    .trim_end_matches('\n')
                    .replace('\n', "\\n")
            };
            (file, esc(&old), esc(&new), intended)
        }
        _ => return None,
    })
}

/// The counts as a table, one row per kind, then the totals.
pub fn table(counts: &Counts) -> String {
    let mut out = format!(
        "{:<24} {:>8} {:>8} {:>8}\n",
        "mistake", "correct", "refused", "wrong"
    );
    let mut total = [0; 3];
    for (kind, c) in counts {
        out.push_str(&format!("{kind:<24} {:>8} {:>8} {:>8}\n", c[0], c[1], c[2]));
        for i in 0..3 {
            total[i] += c[i];
        }
    }
    out.push_str(&format!(
        "{:<24} {:>8} {:>8} {:>8}\n",
        "total", total[0], total[1], total[2]
    ));
    out
}
