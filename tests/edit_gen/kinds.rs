//! Mistake kinds for the causes of wrong edits the matcher has met (see the README's
//! edit section): a fragment starting after code whose later lines the model wrote
//! relative to it, an elision whose elided lines leave the marker's block, a kept line
//! in the other Unicode normal form, heredocs in every opening form, and placeholder
//! lines in every comment syntax the matcher reads. Each names its expected outcome:
//! the intended file (or a refusal), or [`super::MUST_REFUSE`] when no result is right.

use super::{Rng, indent};

type Quad = (String, String, String, String);

/// The mistake `kind` made on the exact edit `(file, old, new, intended)`; `None` when
/// the edit does not admit it.
pub fn mistake(kind: &str, exact: Quad, rng: &mut Rng, tag: &str) -> Option<Quad> {
    match kind {
        "fragment_dedented" => fragment_dedented(exact, rng),
        "elide_across" => elide_across(exact, rng, tag),
        "nfd_nfc" => nfd_nfc(exact, rng, tag),
        "heredoc" => Some(heredoc(rng)),
        "placeholder" | "placeholder_bare" => placeholder(exact, rng, kind == "placeholder"),
        _ => None,
    }
}

/// old_string starts after code on its first line (at a token boundary), and the model
/// wrote the later lines relative to that line: its indentation taken off them.
fn fragment_dedented((file, old, new, intended): Quad, rng: &mut Rng) -> Option<Quad> {
    let first = old.split_inclusive('\n').next()?;
    let ind = indent(first);
    if ind.is_empty()
        || !new.starts_with(first)
        || !old[first.len()..].contains(|c: char| !c.is_whitespace())
    {
        return None;
    }
    let body = &first[ind.len()..];
    let cuts: Vec<usize> = body
        .char_indices()
        .filter(|&(i, c)| {
            let prev = body[..i].chars().next_back();
            i > 0
                && c != '\n'
                && !c.is_whitespace()
                && prev.is_some_and(|p| p.is_whitespace() || !(p.is_alphanumeric() || p == '_'))
        })
        .map(|(i, _)| i)
        .collect();
    if cuts.is_empty() {
        return None;
    }
    let c = ind.len() + cuts[rng.below(cuts.len())];
    let dedent = |s: &str| -> Option<String> {
        let mut out = s[c..first.len()].to_owned();
        for l in s[first.len()..].split_inclusive('\n') {
            if l.trim().is_empty() {
                out.push_str(l);
            } else {
                out.push_str(l.strip_prefix(ind)?);
            }
        }
        Some(out)
    };
    let (o, n) = (dedent(&old)?, dedent(&new)?);
    // A dedented copy that is, word for word, other text of the file says that text.
    if file.contains(&o) {
        return None;
    }
    Some((file, o, n, intended))
}

/// An elision whose part after the marker lies past a line shallower than both the
/// line before the marker and the part after it (the end of a function, the next
/// `def`): the change would land in another block. Must be refused.
fn elide_across((file, _, _, _): Quad, rng: &mut Rng, tag: &str) -> Option<Quad> {
    let lines: Vec<&str> = file.split_inclusive('\n').collect();
    let depth = |l: &str| indent(l).replace('\t', "    ").len();
    let solid = |l: &str| l.trim().len() >= 6;
    let once = |l: &str| lines.iter().filter(|x| x.trim() == l.trim()).count() == 1;
    let s = rng.below(lines.len());
    if !solid(lines[s]) || !once(lines[s]) || depth(lines[s]) == 0 {
        return None;
    }
    // The first line after a shallower one, at least as deep as the start.
    let mut shallower = false;
    let j = (s + 1..lines.len()).find(|&j| {
        let l = lines[j];
        if l.trim().is_empty() {
            return false;
        }
        if depth(l) < depth(lines[s]) {
            shallower = true;
            return false;
        }
        shallower && solid(l) && once(l) && depth(l) >= depth(lines[s])
    })?;
    let ind = indent(lines[s]);
    let marker = format!("{ind}{} ...\n", tag.split(' ').next().unwrap_or("//"));
    let added = format!("{}{tag}\n", indent(lines[j]));
    let old = format!("{}{marker}{}", lines[s], lines[j]);
    let new = format!("{old}{added}");
    Some((file, old, new, super::MUST_REFUSE.to_owned()))
}

/// A kept line carries accented words in the other normal form than the model's copy
/// (the file in NFD, the model in NFC, or the reverse); the kept line keeps the
/// file's bytes.
fn nfd_nfc((file, old, new, intended): Quad, rng: &mut Rng, tag: &str) -> Option<Quad> {
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let kept: Vec<&str> = old
        .split_inclusive('\n')
        .filter(|l| !l.trim().is_empty() && new_lines.contains(l) && l.ends_with('\n'))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let k = kept[rng.below(kept.len())];
    let marker = tag.split(' ').next().unwrap_or("//");
    let (nfc, nfd) = ("caf\u{e9} na\u{ef}ve", "cafe\u{301} nai\u{308}ve");
    let (in_file, in_model) = if rng.below(2) == 0 {
        (nfd, nfc)
    } else {
        (nfc, nfd)
    };
    let dress = |w: &str| format!("{} {marker} {w}\n", k.trim_end_matches('\n'));
    let (fk, mk) = (dress(in_file), dress(in_model));
    if file.matches(k).count() != 1 || intended.matches(k).count() != 1 {
        return None;
    }
    let model = |s: &str| {
        s.split_inclusive('\n')
            .map(|l| if l == k { mk.clone() } else { l.to_owned() })
            .collect::<String>()
    };
    Some((
        file.replacen(k, &fk, 1),
        model(&old),
        model(&new),
        intended.replacen(k, &fk, 1),
    ))
}

/// A shell function with a heredoc in one of its opening forms (`<<EOF`, `<< EOF`,
/// `<<-EOF` with a tab-indented body, quoted tags); the model's copy of the whole
/// `if` is shifted right, and it adds a line after it. The heredoc's body and
/// terminator are kept as the file has them.
fn heredoc(rng: &mut Rng) -> Quad {
    let tags = ["EOF", "'EOF'", "\"EOF\"", "END_TEXT"];
    let tag = tags[rng.below(tags.len())];
    let bare = tag.trim_matches(['\'', '"']);
    let dash = rng.below(2) == 0;
    let op = format!(
        "<<{}{}",
        if dash { "-" } else { "" },
        if rng.below(2) == 0 { " " } else { "" }
    );
    let (body, term) = if dash {
        (
            "\tline one\n\t  line two\n".to_owned(),
            format!("\t{bare}\n"),
        )
    } else {
        ("line one\n  line two\n".to_owned(), format!("{bare}\n"))
    };
    let head = "#!/bin/sh\nshow() {\n";
    let region =
        format!("  if [ -n \"$1\" ]; then\n    cat {op}{tag}\n{body}{term}  fi\n  echo done\n");
    let tail = "}\nshow x\n";
    let file = format!("{head}{region}{tail}");
    let new_region = format!("{region}  echo more\n");
    let intended = format!("{head}{new_region}{tail}");
    let pad = if rng.below(2) == 0 { "  " } else { "    " };
    let shift = |s: &str| {
        s.split_inclusive('\n')
            .map(|l| format!("{pad}{l}"))
            .collect::<String>()
    };
    (file, shift(&region), shift(&new_region), intended)
}

/// new_string stands for two or more lines of the region with a placeholder line, in
/// one of the comment syntaxes the matcher reads (or a bare ellipsis): applying it
/// would delete them. Must be refused.
fn placeholder((file, old, new, _): Quad, rng: &mut Rng, commented: bool) -> Option<Quad> {
    let nl: Vec<&str> = new.split_inclusive('\n').collect();
    if nl.len() < 4 || !new.ends_with('\n') {
        return None;
    }
    let cut = &nl[1..nl.len() - 1];
    // Lines of old_string the placeholder stands for (one line replaced by `...` is
    // a stub, not code left out).
    let (head, last) = (nl[0].trim(), nl[nl.len() - 1].trim());
    let gone = old
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != head && *l != last)
        .filter(|l| cut.iter().any(|c| c.trim() == *l))
        .count();
    if gone < 2 {
        return None;
    }
    let forms = [
        ("{/* ", " */}"),
        ("{# ", " #}"),
        ("-- ", ""),
        ("# ", ""),
        ("// ", ""),
        ("<!-- ", " -->"),
        ("(* ", " *)"),
        ("% ", ""),
        ("; ", ""),
        ("/* ", " */"),
    ];
    let words = [
        "...",
        "... existing code ...",
        "rest of the function unchanged",
        "\u{2026}",
    ];
    let text = if commented {
        let (a, b) = forms[rng.below(forms.len())];
        format!("{a}{}{b}", words[rng.below(words.len())])
    } else {
        "...".to_owned()
    };
    let line = format!("{}{text}\n", indent(cut[0]));
    if file.lines().any(|l| l.trim() == text) || old.lines().any(|l| l.trim() == text) {
        return None;
    }
    let new = format!("{}{line}{}", nl[0], nl[nl.len() - 1]);
    Some((file, old, new, super::MUST_REFUSE.to_owned()))
}
