//! A Makefile conditional copied flat: the model wrote `ifeq`/`else`/`endif` and the
//! body between them all at column 0, while the file indents the body (with spaces, a
//! convention only; GNU make reads conditional lines whatever their indentation, see
//! the GNU make manual, "Syntax of Conditionals").
//!
//! No one offset maps such a copy onto the file (the directive lines are at the same
//! column in both, the body lines are not), so the general replay refuses it. The
//! directives' own nesting says where each line belongs, though: a line between an
//! opening directive and its `endif` is body. When the file indents every body line
//! of the region by one and the same run of spaces, and leaves the directives and the
//! lines outside any conditional at column 0, the copy is read in the file's frame:
//! old_string's lines take the file's indentation, and new_string's body lines (at
//! column 0, as the model wrote every line) take the body's. Anything else (nested
//! conditionals, tab-indented lines, which may be recipe lines, a `define` block, a
//! copy that is not flat) is left to the general passes.

/// `(old, new)` with the body lines indented as the file indents them; `None` when the
/// edit is not a flat copy of a conditional the file indents as above.
pub fn unflatten(content: &str, old: &str, new: &str) -> Option<(String, String)> {
    if !content.lines().any(|l| opens(l.trim())) {
        return None;
    }
    let file: Vec<&str> = content.lines().collect();
    let old_l: Vec<&str> = old.lines().collect();
    let new_l: Vec<&str> = new.lines().collect();
    let flat = |ls: &[&str]| {
        ls.iter()
            .all(|l| l.trim().is_empty() || !l.starts_with([' ', '\t']))
    };
    let directive = |l: &str| kind(l.trim()).is_some();
    if !flat(&old_l)
        || !flat(&new_l)
        || !old_l.iter().any(|l| directive(l))
        || !old_l.iter().any(|l| !l.trim().is_empty() && !directive(l))
    {
        return None;
    }
    let hits: Vec<usize> = (0..(file.len() + 1).saturating_sub(old_l.len()))
        .filter(|&s| (0..old_l.len()).all(|j| file[s + j].trim() == old_l[j].trim()))
        .collect();
    let [start] = hits[..] else {
        return None;
    };
    let mut depth = depth_after(&file[..start])?;
    let mut body: Option<&str> = None;
    for f in &file[start..start + old_l.len()] {
        let t = f.trim();
        if t.is_empty() {
            continue;
        }
        let indent = &f[..f.len() - f.trim_start().len()];
        if let Some(k) = kind(t) {
            if !indent.is_empty() {
                return None;
            }
            depth = step(depth, k)?;
            continue;
        }
        match depth {
            0 if indent.is_empty() => {}
            1 if !indent.is_empty() && !indent.contains('\t') => {
                if body.is_some_and(|b| b != indent) {
                    return None;
                }
                body = Some(indent);
            }
            _ => return None,
        }
    }
    let body = body?;
    let old_out = old_l
        .iter()
        .zip(&file[start..])
        .map(|(o, f)| {
            format!(
                "{}{}\n",
                &f[..f.len() - f.trim_start().len()],
                o.trim_start()
            )
        })
        .collect::<String>();
    let mut depth = depth_after(&file[..start])?;
    let mut new_out = String::new();
    for l in &new_l {
        let t = l.trim();
        if let Some(k) = kind(t) {
            depth = step(depth, k)?;
            new_out.push_str(l);
        } else if t.is_empty() || depth == 0 {
            new_out.push_str(l);
        } else {
            new_out.push_str(body);
            new_out.push_str(l);
        }
        new_out.push('\n');
    }
    let keep_end = |s: String, like: &str| {
        if like.ends_with('\n') {
            s
        } else {
            s.trim_end_matches('\n').to_owned()
        }
    };
    Some((keep_end(old_out, old), keep_end(new_out, new)))
}

/// A conditional directive line: `Some(1)` opens, `Some(0)` is an `else`, `Some(-1)`
/// closes; `None` for any other line.
fn kind(t: &str) -> Option<i8> {
    let word = t.split([' ', '\t', '(']).next().unwrap_or("");
    match word {
        "ifeq" | "ifneq" | "ifdef" | "ifndef" => Some(1),
        "else" => Some(0),
        "endif" => Some(-1),
        _ => None,
    }
}

fn opens(t: &str) -> bool {
    kind(t) == Some(1)
}

/// The depth after a directive; `None` past one level or below zero.
fn step(depth: u8, k: i8) -> Option<u8> {
    match k {
        1 if depth == 0 => Some(1),
        -1 if depth == 1 => Some(0),
        0 if depth == 1 => Some(1),
        _ => None,
    }
}

/// The conditional depth after `lines`; `None` in a `define` block or past one level.
fn depth_after(lines: &[&str]) -> Option<u8> {
    let mut depth = 0;
    for l in lines {
        let t = l.trim();
        if t.starts_with("define") || t.starts_with("endef") {
            return None;
        }
        if let Some(k) = kind(t) {
            depth = step(depth, k)?;
        }
    }
    Some(depth)
}
