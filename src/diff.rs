//! Line diffs between two versions of a file: hunks with stable ids, split when
//! oversized (docs/PROTOCOL.md, "Review, apply and rollback"), the unified diff, and the
//! line-range edits that apply, merge and rollback are built from. Knows text only.

use sha2::{Digest, Sha256};

use crate::text::lines;
use similar::{Algorithm, DiffTag, capture_diff_slices};

/// Largest hunk, in changed lines (removed plus added), before it is split
/// (`max_hunk_lines`).
pub const MAX_HUNK_LINES: usize = 80;
/// Largest hunk, in changed bytes, before it is split (`max_hunk_bytes`).
pub const MAX_HUNK_BYTES: usize = 8192;

/// Replace lines `start..end` of a base text (0-based, end exclusive) with `lines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// First replaced base line (0-based).
    pub start: usize,
    /// One past the last replaced base line.
    pub end: usize,
    /// The replacement lines, each with its line ending.
    pub lines: Vec<String>,
}

impl Edit {
    /// Whether two edits touch the same lines so their order or meaning is ambiguous:
    /// overlapping ranges, two insertions at one point, or an insertion strictly
    /// inside a replaced range.
    pub fn conflicts_with(&self, other: &Edit) -> bool {
        let (a, b) = (self, other);
        if a.start < b.end && b.start < a.end {
            return true;
        }
        let a_empty = a.start == a.end;
        let b_empty = b.start == b.end;
        (a.start == b.start && (a_empty || b_empty))
            || (a_empty && b.start < a.start && a.start < b.end)
            || (b_empty && a.start < b.start && b.start < a.end)
    }
}

/// One hunk between an old and a new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Stable id: depends on the path and the change itself, not on line numbers.
    pub id: String,
    /// The change as an edit of the old text.
    pub edit: Edit,
    /// The removed lines.
    pub old_lines: Vec<String>,
    /// First line in the new text (0-based).
    pub new_start: usize,
    /// Too large and could not be split.
    pub oversized: bool,
}

impl Hunk {
    /// `@@ -a,b +c,d @@` with 1-based starts (0 for an empty side, as diff does).
    pub fn header(&self) -> String {
        let old_n = self.old_lines.len();
        let new_n = self.edit.lines.len();
        let old_s = if old_n == 0 {
            self.edit.start
        } else {
            self.edit.start + 1
        };
        let new_s = if new_n == 0 {
            self.new_start
        } else {
            self.new_start + 1
        };
        format!("@@ -{old_s},{old_n} +{new_s},{new_n} @@")
    }

    /// The hunk as patch text: header, `-` and `+` lines (no context).
    pub fn patch(&self) -> String {
        let mut s = self.header();
        s.push('\n');
        for l in &self.old_lines {
            s.push('-');
            s.push_str(l);
            if !l.ends_with('\n') {
                s.push_str("\n\\ No newline at end of file\n");
            }
        }
        for l in &self.edit.lines {
            s.push('+');
            s.push_str(l);
            if !l.ends_with('\n') {
                s.push_str("\n\\ No newline at end of file\n");
            }
        }
        s
    }

    fn changed_lines(&self) -> usize {
        self.old_lines.len() + self.edit.lines.len()
    }

    fn changed_bytes(&self) -> usize {
        self.old_lines
            .iter()
            .chain(&self.edit.lines)
            .map(String::len)
            .sum()
    }
}

/// A unified diff of `old` → `new` with 3 lines of context and `a/`/`b/` headers
/// (empty when the texts are equal).
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// The hunks that turn `old` into `new` for file `path`, in order, oversized ones
/// split at edit boundaries and then blank lines.
pub fn hunks(path: &str, old: &str, new: &str) -> Vec<Hunk> {
    let a = lines(old);
    let b = lines(new);
    let ops = capture_diff_slices(Algorithm::Myers, &a, &b);
    // Each non-equal op is an edit boundary; adjacent ones form one region.
    let mut pieces: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::new();
    let mut regions: Vec<Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>> = Vec::new();
    for op in ops {
        let (tag, o, n) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            if !pieces.is_empty() {
                regions.push(std::mem::take(&mut pieces));
            }
            continue;
        }
        pieces.push((o, n));
    }
    if !pieces.is_empty() {
        regions.push(pieces);
    }
    let mut out = Vec::new();
    for region in regions {
        let whole = make(
            &a,
            &b,
            region[0].0.start..region.last().map(|p| p.0.end).unwrap_or(0),
            region[0].1.start..region.last().map(|p| p.1.end).unwrap_or(0),
        );
        if !too_big(&whole) {
            out.push(whole);
            continue;
        }
        for (o, n) in region {
            out.extend(split_piece(&a, &b, o, n));
        }
    }
    assign_ids(path, &mut out);
    out
}

fn make(a: &[&str], b: &[&str], o: std::ops::Range<usize>, n: std::ops::Range<usize>) -> Hunk {
    Hunk {
        id: String::new(),
        edit: Edit {
            start: o.start,
            end: o.end,
            lines: b[n.clone()].iter().map(|s| (*s).to_owned()).collect(),
        },
        old_lines: a[o].iter().map(|s| (*s).to_owned()).collect(),
        new_start: n.start,
        oversized: false,
    }
}

fn too_big(h: &Hunk) -> bool {
    h.changed_lines() > MAX_HUNK_LINES || h.changed_bytes() > MAX_HUNK_BYTES
}

/// Splits one op's ranges at blank lines into pieces within the limits. A pure
/// insertion or deletion splits freely; a replacement splits only when old and new
/// have the same number of blank-line-separated blocks (block k replaces block k).
fn split_piece(
    a: &[&str],
    b: &[&str],
    o: std::ops::Range<usize>,
    n: std::ops::Range<usize>,
) -> Vec<Hunk> {
    let whole = make(a, b, o.clone(), n.clone());
    if !too_big(&whole) {
        return vec![whole];
    }
    let old_blocks = blocks(a, o.clone());
    let new_blocks = blocks(b, n.clone());
    let pairs: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = if o.is_empty() {
        new_blocks
            .into_iter()
            .map(|nb| (o.start..o.start, nb))
            .collect()
    } else if n.is_empty() {
        old_blocks
            .into_iter()
            .map(|ob| (ob, n.start..n.start))
            .collect()
    } else if old_blocks.len() == new_blocks.len() && old_blocks.len() > 1 {
        old_blocks.into_iter().zip(new_blocks).collect()
    } else {
        let mut h = whole;
        h.oversized = true;
        return vec![h];
    };
    // Greedily join consecutive blocks while they fit.
    let mut out: Vec<Hunk> = Vec::new();
    let mut cur: Option<(std::ops::Range<usize>, std::ops::Range<usize>)> = None;
    for (ob, nb) in pairs {
        cur = match cur {
            None => Some((ob, nb)),
            Some((co, cn)) => {
                let joined = (co.start..ob.end, cn.start..nb.end);
                if too_big(&make(a, b, joined.0.clone(), joined.1.clone())) {
                    out.push(finish(a, b, co, cn));
                    Some((ob, nb))
                } else {
                    Some(joined)
                }
            }
        };
    }
    if let Some((co, cn)) = cur {
        out.push(finish(a, b, co, cn));
    }
    out
}

fn finish(a: &[&str], b: &[&str], o: std::ops::Range<usize>, n: std::ops::Range<usize>) -> Hunk {
    let mut h = make(a, b, o, n);
    h.oversized = too_big(&h);
    h
}

/// Blank-line-separated blocks of `lines[r]`: each block ends after a blank line.
fn blocks(lines: &[&str], r: std::ops::Range<usize>) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = r.start;
    for i in r.clone() {
        if lines[i].trim().is_empty() && i + 1 < r.end {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < r.end {
        out.push(start..r.end);
    }
    out
}

/// Ids: 12 hex of sha256(path, removed text, added text, occurrence), so a hunk keeps
/// its id while its change is unchanged, wherever it moves.
fn assign_ids(path: &str, hunks: &mut [Hunk]) {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for h in hunks.iter_mut() {
        let mut hasher = Sha256::new();
        hasher.update(path.as_bytes());
        hasher.update([0]);
        for l in &h.old_lines {
            hasher.update(l.as_bytes());
        }
        hasher.update([0]);
        for l in &h.edit.lines {
            hasher.update(l.as_bytes());
        }
        let base = hex::encode(hasher.finalize());
        let n = seen.entry(base.clone()).or_insert(0);
        let id = if *n == 0 {
            base[..12].to_owned()
        } else {
            let mut h2 = Sha256::new();
            h2.update(base.as_bytes());
            h2.update(n.to_le_bytes());
            hex::encode(h2.finalize())[..12].to_owned()
        };
        *n += 1;
        h.id = format!("h_{id}");
    }
}

/// The edits that turn `old` into `new`: one per changed region (adjacent changes
/// with no equal line between them form one region), unsplit.
pub fn edits(old: &str, new: &str) -> Vec<Edit> {
    let a = lines(old);
    let b = lines(new);
    let mut out: Vec<Edit> = Vec::new();
    let mut open = false;
    for op in capture_diff_slices(Algorithm::Myers, &a, &b) {
        let (tag, o, n) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            open = false;
            continue;
        }
        let added = b[n].iter().map(|s| (*s).to_owned());
        match out.last_mut() {
            Some(last) if open => {
                last.end = o.end;
                last.lines.extend(added);
            }
            _ => out.push(Edit {
                start: o.start,
                end: o.end,
                lines: added.collect(),
            }),
        }
        open = true;
    }
    out
}

/// Applies non-conflicting edits of `base` (any order) and returns the text.
/// Callers check conflicts first; overlapping edits here are a bug and are skipped.
pub fn apply_edits(base: &str, edits: &[Edit]) -> String {
    let a = lines(base);
    apply_within(&a, 0..a.len(), edits.iter())
}

/// Lines `range` of a base text split into `lines`, with `edits` (all inside the
/// range, any order) applied; overlapping ones after the first are skipped.
fn apply_within<'e>(
    lines: &[&str],
    range: std::ops::Range<usize>,
    edits: impl Iterator<Item = &'e Edit>,
) -> String {
    let mut sorted: Vec<&Edit> = edits.collect();
    sorted.sort_by_key(|e| (e.start, e.end));
    let mut out = String::new();
    let mut pos = range.start;
    for e in sorted {
        if e.start < pos {
            continue;
        }
        out.extend(lines[pos..e.start].iter().copied());
        for l in &e.lines {
            out.push_str(l);
        }
        pos = e.end;
    }
    out.extend(lines[pos..range.end].iter().copied());
    out
}

/// Edits of one base text from two sides (the model's, the user's) that touch each
/// other ([`Edit::conflicts_with`]), directly or through a chain of such edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// Indices into the first side's edits, in order.
    pub theirs: Vec<usize>,
    /// Indices into the second side's edits, in order.
    pub ours: Vec<usize>,
    /// Both sides leave the same text over the lines the group covers: the same
    /// change made twice, which is no conflict.
    pub same: bool,
}

/// The groups of `theirs` and `ours` (edits of `base`, each side free of overlaps
/// as one diff gives them) that touch each other, in no particular order. An edit
/// that touches nothing of the other side is in no group.
pub fn overlaps(base: &str, theirs: &[Edit], ours: &[Edit]) -> Vec<Overlap> {
    // Union-find over both sides: theirs are 0..n, ours n..n+m.
    let n = theirs.len();
    let mut parent: Vec<usize> = (0..n + ours.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut touched = vec![false; parent.len()];
    // Two edits that conflict touch or share lines (`u.start <= t.end && t.start <=
    // u.end`). When `ours` is in order and free of overlaps, as a diff gives it, the
    // candidates for each `t` are one run found by binary search, so large files with
    // many edits on both sides cost O((n + m) log m), not n * m; otherwise every pair
    // is checked.
    let in_order = ours
        .windows(2)
        .all(|w| w[0].start <= w[1].start && w[0].end <= w[1].start);
    for (i, t) in theirs.iter().enumerate() {
        let first = if in_order {
            ours.partition_point(|u| u.end < t.start)
        } else {
            0
        };
        for (j, u) in ours.iter().enumerate().skip(first) {
            if in_order && u.start > t.end {
                break;
            }
            if t.conflicts_with(u) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, n + j));
                parent[a] = b;
                touched[i] = true;
                touched[n + j] = true;
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Overlap> = Default::default();
    for k in (0..parent.len()).filter(|&k| touched[k]) {
        let g = groups.entry(root(&mut parent, k)).or_insert(Overlap {
            theirs: Vec::new(),
            ours: Vec::new(),
            same: false,
        });
        if k < n {
            g.theirs.push(k);
        } else {
            g.ours.push(k - n);
        }
    }
    let a = lines(base);
    groups
        .into_values()
        .map(|mut g| {
            let t: Vec<&Edit> = g.theirs.iter().map(|&i| &theirs[i]).collect();
            let o: Vec<&Edit> = g.ours.iter().map(|&j| &ours[j]).collect();
            let start = t.iter().chain(&o).map(|e| e.start).min().unwrap_or(0);
            let end = t.iter().chain(&o).map(|e| e.end).max().unwrap_or(0);
            g.same = apply_within(&a, start..end, t.into_iter())
                == apply_within(&a, start..end, o.into_iter());
            g
        })
        .collect()
}

/// The user's edits: base to disk. A missing file counts as empty when the base is
/// empty (a new file), else as everything deleted.
pub fn user_edits(base: &str, disk: Option<&str>) -> Vec<Edit> {
    match disk {
        Some(d) => edits(base, d),
        None if base.is_empty() => Vec::new(),
        None => vec![Edit {
            start: 0,
            end: lines(base).len(),
            lines: Vec::new(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The groups' edits as sets, whatever order the groups come in.
    fn grouped(groups: &[Overlap]) -> Vec<(Vec<usize>, Vec<usize>, bool)> {
        let mut g: Vec<_> = groups
            .iter()
            .map(|o| (o.theirs.clone(), o.ours.clone(), o.same))
            .collect();
        g.sort();
        g
    }

    #[test]
    fn overlaps_finds_what_checking_every_pair_finds() {
        // Texts made by changing, deleting and inserting lines of one base at pseudo-
        // random places; `ours` as a diff gives it (searched) and reversed (every pair).
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let base: String = (0..60).map(|i| format!("line {i}\n")).collect();
        for round in 0..200 {
            let mut sides = Vec::new();
            for side in 0..2 {
                let mut text = String::new();
                for (i, l) in base.lines().enumerate() {
                    match next(8) {
                        0 => text.push_str(&format!("changed {i}\n")),
                        1 => {}
                        2 => text.push_str(&format!("{l}\nadded {side}\n")),
                        3 if round % 2 == 0 => text.push_str(&format!("same {i}\n")),
                        _ => text.push_str(&format!("{l}\n")),
                    }
                }
                sides.push(text);
            }
            let (theirs, ours) = (edits(&base, &sides[0]), edits(&base, &sides[1]));
            let searched = grouped(&overlaps(&base, &theirs, &ours));
            let reversed: Vec<Edit> = ours.iter().rev().cloned().collect();
            let every_pair: Vec<_> = grouped(&overlaps(&base, &theirs, &reversed))
                .into_iter()
                .map(|(t, o, same)| {
                    let mut o: Vec<usize> = o.iter().map(|j| ours.len() - 1 - j).collect();
                    o.sort();
                    (t, o, same)
                })
                .collect();
            let mut every_pair = every_pair;
            every_pair.sort();
            assert_eq!(searched, every_pair, "round {round}");
        }
    }

    #[test]
    fn hunks_have_stable_ids_and_headers() {
        let old = "a\nb\nc\nd\ne\n";
        let new = "a\nB\nc\nd\ne\nf\n";
        let h = hunks("x.txt", old, new);
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].header(), "@@ -2,1 +2,1 @@");
        assert_eq!(h[0].patch(), "@@ -2,1 +2,1 @@\n-b\n+B\n");
        assert_eq!(h[1].header(), "@@ -5,0 +6,1 @@");
        // The same change elsewhere in the file keeps its id.
        let moved = hunks("x.txt", &format!("z\n{old}"), &format!("z\n{new}"));
        assert_eq!(moved[0].id, h[0].id);
        assert_ne!(hunks("y.txt", old, new)[0].id, h[0].id);
        assert_eq!(apply_edits(old, &[h[0].edit.clone()]), "a\nB\nc\nd\ne\n");
        assert_eq!(
            apply_edits(old, &[h[0].edit.clone(), h[1].edit.clone()]),
            new
        );
    }

    #[test]
    fn oversized_hunks_split_at_blank_lines() {
        let block = |c: char| {
            format!(
                "{}\n\n",
                (0..30)
                    .map(|i| format!("{c}{i}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        };
        let new: String = ['x', 'y', 'z', 'w'].iter().map(|&c| block(c)).collect();
        let h = hunks("n.txt", "", &new);
        assert!(h.len() >= 2, "{}", h.len());
        assert!(h.iter().all(|x| !x.oversized));
        let all: Vec<Edit> = h.iter().map(|x| x.edit.clone()).collect();
        // Insertions at the same point in order rebuild the file.
        let rebuilt: String = all.iter().flat_map(|e| e.lines.clone()).collect();
        assert_eq!(rebuilt, new);
        let big: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let h = hunks("b.txt", &big, &big.replace("line", "LINE"));
        assert!(h[0].oversized);
    }

    #[test]
    fn the_same_change_on_both_sides_is_one_group_that_agrees() {
        let base = "a\nb\nc\nd\ne\nf\n";
        let model = edits(base, "A\nb\nc\nD\ne\nf\n");
        // The user typed the model's first change, and something else of their own
        // over the second one.
        let user = edits(base, "A\nb\nc\nmine\ne\nf\n");
        let mut g = overlaps(base, &model, &user);
        g.sort_by_key(|o| o.theirs.clone());
        assert_eq!(g.len(), 2);
        assert!(g[0].same && g[0].theirs == [0] && g[0].ours == [0]);
        assert!(!g[1].same && g[1].theirs == [1] && g[1].ours == [1]);
        // Two model hunks next to each other taken by one user edit agree as a group.
        let split = vec![
            Edit {
                start: 1,
                end: 2,
                lines: vec!["B\n".into()],
            },
            Edit {
                start: 2,
                end: 3,
                lines: vec!["C\n".into()],
            },
        ];
        let user = edits(base, "a\nB\nC\nd\ne\nf\n");
        let g = overlaps(base, &split, &user);
        assert_eq!(g.len(), 1);
        assert!(g[0].same && g[0].theirs == [0, 1] && g[0].ours == [0]);
        // Insertions at one point agree only with the same lines.
        let ins = |l: &str| Edit {
            start: 2,
            end: 2,
            lines: vec![l.into()],
        };
        assert!(overlaps(base, &[ins("x\n")], &[ins("x\n")])[0].same);
        assert!(!overlaps(base, &[ins("x\n")], &[ins("y\n")])[0].same);
        assert!(overlaps(base, &model, &[]).is_empty());
    }

    #[test]
    fn conflicts() {
        let e = |s, t| Edit {
            start: s,
            end: t,
            lines: vec![],
        };
        assert!(e(1, 3).conflicts_with(&e(2, 4)));
        assert!(!e(1, 3).conflicts_with(&e(3, 4)));
        assert!(e(2, 2).conflicts_with(&e(2, 2)));
        assert!(e(2, 2).conflicts_with(&e(1, 4)));
        assert!(!e(1, 1).conflicts_with(&e(2, 3)));
    }
}
