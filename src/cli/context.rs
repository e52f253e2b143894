//! Context and output commands: `add`, `remove`, `status`, `diff`, `apply`, `reject`.

use super::render;
use super::session::Session;
use super::terminal;
use crate::diff::unified_diff;
use crate::error::ErrorCode;
use crate::front::client::{Failure, Res, exit};
use crate::output::{FileStatus, Status};
use crate::protocol::action::Action;
use crate::protocol::params::{self, LineNumber, NonEmpty};
use crate::protocol::replies::{Ack, Added, Applied, ContextList, TokenEstimate};
use crate::review::OnDisk;

/// `bb7 add`: snapshots files or `path:start:end` sections; a whole file already in
/// context gets a fresh snapshot instead of an error.
/// Several files: one that cannot be added (a damaged image, a file that went away) is
/// reported on its line and the others are still added; the command then fails,
/// counting them, with the status of the last failure.
pub(super) async fn add(s: &mut Session, specs: &[String], readonly: bool) -> Res<()> {
    s.ensure_chat().await?;
    let listed: ContextList = s.c.call(Action::ContextList(params::NoParams {})).await?;
    let mut failed: Option<(usize, u8)> = None;
    for spec in specs {
        match add_one(s, &listed, spec, readonly).await {
            Ok(()) => {}
            Err(f) if specs.len() == 1 || f.is(ErrorCode::Locked) => return Err(f),
            Err(f) => {
                eprintln!("bb7: {}", terminal::err(&f.message));
                let n = failed.map_or(0, |(n, _)| n);
                failed = Some((n + 1, f.status));
            }
        }
    }
    match failed {
        Some((n, status)) => Err(Failure::new(format!(
            "{n} of {} not added (see above); the others are in context",
            specs.len()
        ))
        .with_status(status)),
        None => Ok(()),
    }
}

/// Adds one file, section or image `spec` to the chat whose context is `listed`.
async fn add_one(s: &mut Session, listed: &ContextList<'_>, spec: &str, readonly: bool) -> Res<()> {
    {
        let (typed, range) = split_range(spec);
        let path = s.path(typed);
        let abs = s.root.join(&path);
        if range.is_none() && crate::context::image::media_type_of(&path).is_some() {
            // bb7 reads an image's bytes itself; it becomes `image:{path}`.
            s.c.call::<Ack>(Action::ContextAdd(params::ContextAdd {
                path: NonEmpty(path.clone()),
                content: String::new(),
                readonly: Some(true),
            }))
            .await?;
            eprintln!("bb7: added image:{}", terminal::err(&path));
            return Ok(());
        }
        // Never blocks on a named pipe (invariant 13).
        let bytes = crate::project::fsutil::read_regular(&abs)
            .map_err(|e| Failure::new(format!("cannot read {typed}: {e}")))?;
        let content = String::from_utf8(bytes).map_err(|_| {
            Failure::new(format!(
                "cannot add {}: it is not UTF-8 text (a binary file?); only text files \
                 and images can be context",
                terminal::err(typed)
            ))
        })?;
        let known = listed
            .files
            .iter()
            .any(|f| f.path == path && f.start_line.is_none());
        match range {
            Some((start_line, end_line)) => {
                let same = listed.files.iter().any(|f| {
                    f.path == path
                        && f.start_line == Some(start_line)
                        && f.end_line == Some(end_line)
                });
                // A section has no update action: the same section is replaced.
                if same {
                    s.c.call::<Ack>(Action::ContextRemoveSection(params::SectionRef {
                        path: NonEmpty(path.clone()),
                        start_line: LineNumber(start_line),
                        end_line: LineNumber(end_line),
                    }))
                    .await?;
                }
                let r: Added =
                    s.c.call(Action::ContextAddSection(params::ContextAddSection {
                        path: NonEmpty(path.clone()),
                        content,
                        start_line: LineNumber(start_line),
                        end_line: LineNumber(end_line),
                    }))
                    .await?;
                let verb = if same { "refreshed" } else { "added" };
                eprintln!(
                    "bb7: {verb} {}:{start_line}-{end_line}",
                    terminal::err(&path)
                );
                super::invisible::warn(&r.invisible_warnings);
            }
            None if known => {
                let was_readonly = listed
                    .files
                    .iter()
                    .any(|f| f.path == path && f.start_line.is_none() && f.readonly);
                // `--readonly` on a file in context makes it read-only first: refused,
                // with the reason, while the model has pending output for it.
                if readonly && !was_readonly {
                    s.c.call::<Ack>(Action::ContextSetReadonly(params::ContextSetReadonly {
                        path: NonEmpty(path.clone()),
                        readonly: true,
                    }))
                    .await
                    .map_err(|f| {
                        Failure::new(format!(
                            "cannot make {} read-only: {}",
                            terminal::err(&path),
                            f.message
                        ))
                        .with_status(f.status)
                    })?;
                }
                let r: Added =
                    s.c.call(Action::ContextUpdate(params::ContextUpdate {
                        path: NonEmpty(path.clone()),
                        content,
                    }))
                    .await?;
                let now = if readonly && !was_readonly {
                    ", now read-only"
                } else {
                    ""
                };
                eprintln!(
                    "bb7: refreshed {} (it was already in context){now}",
                    terminal::err(&path)
                );
                super::invisible::warn(&r.invisible_warnings);
            }
            None => {
                let r: Added =
                    s.c.call(Action::ContextAdd(params::ContextAdd {
                        path: NonEmpty(path.clone()),
                        content,
                        readonly: Some(readonly),
                    }))
                    .await?;
                eprintln!("bb7: added {}", terminal::err(&path));
                super::invisible::warn(&r.invisible_warnings);
            }
        }
    }
    Ok(())
}

/// The most files one `/add` of directories and globs adds.
const MAX_EXPANDED: usize = 1000;

/// `/add`'s arguments as files: a directory is every file under it, a glob (`*`, `?`,
/// `[…]`, `**`) every file it matches from the current directory, both honouring
/// `.gitignore` and never entering bb7's or version control's directories; anything
/// else (a file, even one whose name holds glob characters, `path:start:end`) as typed. Errors: a pattern that is not a glob, one
/// that matches nothing, more than [`MAX_EXPANDED`] files.
pub(super) fn expand(s: &Session, specs: &[String]) -> Res<Vec<String>> {
    let mut out = Vec::new();
    for spec in specs {
        let dir = s.cwd.join(spec);
        // A file that exists is taken by its name even when the name holds glob
        // characters (`notes[1].txt`).
        let is_glob = spec.contains(['*', '?', '[']) && !dir.is_file();
        if !is_glob && !dir.is_dir() {
            out.push(spec.clone());
            continue;
        }
        let (walk_root, matcher) = if is_glob {
            let glob = globset::GlobBuilder::new(spec)
                .literal_separator(true)
                .build()
                .map_err(|e| Failure::new(format!("bad pattern {}: {e}", terminal::err(spec))))?
                .compile_matcher();
            (s.cwd.clone(), Some(glob))
        } else {
            (dir, None)
        };
        let before = out.len();
        let walk = ignore::WalkBuilder::new(&walk_root)
            .hidden(false)
            .require_git(false)
            .filter_entry(|e| {
                e.file_name()
                    .to_str()
                    .is_none_or(|n| !crate::project::paths::PROTECTED_DIRS.contains(&n))
            })
            .build();
        let mut found: Vec<String> = walk
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|e| {
                let rel = e.path().strip_prefix(&s.cwd).ok()?.to_str()?.to_owned();
                match &matcher {
                    Some(m) => m.is_match(&rel).then_some(rel),
                    None => Some(rel),
                }
            })
            .collect();
        found.sort();
        let (text, binary): (Vec<String>, Vec<String>) = found
            .into_iter()
            .partition(|rel| is_text_or_image(&s.cwd.join(rel)));
        if !binary.is_empty() {
            eprintln!("bb7: {}", skipped_line(&binary));
        }
        if text.is_empty() && !binary.is_empty() {
            return Err(Failure::new(format!(
                "{} holds no text file to add",
                terminal::err(spec)
            )));
        }
        out.extend(text);
        if out.len() == before {
            return Err(Failure::new(format!(
                "{} matches no file",
                terminal::err(spec)
            )));
        }
        if out.len() > MAX_EXPANDED {
            return Err(Failure::new(format!(
                "{} names more than {MAX_EXPANDED} files; add fewer at a time",
                terminal::err(spec)
            )));
        }
    }
    Ok(out)
}

/// Whether the file at `path` can be context: an image (by its extension), or UTF-8
/// text without NUL bytes. A NUL is what Git's own binary check looks for (in the
/// first 8000 bytes, `buffer_is_binary` in git's xdiff-interface.c); bb7 also needs
/// the whole file to be UTF-8, since a snapshot is text. Unreadable files count as
/// binary: their read error would stop the whole `/add`.
fn is_text_or_image(path: &std::path::Path) -> bool {
    if crate::context::image::media_type_of(&path.to_string_lossy()).is_some() {
        return true;
    }
    crate::project::fsutil::read_regular(path)
        .is_ok_and(|b| !b.contains(&0) && std::str::from_utf8(&b).is_ok())
}

/// The most skipped names one line shows; the rest are counted.
const SKIPPED_NAMED: usize = 5;

/// One line naming the files a directory or glob `/add` left out (binary, not UTF-8,
/// or unreadable): `skipped 2 files that are not text: a.bin, b.dat`.
fn skipped_line(skipped: &[String]) -> String {
    let n = skipped.len();
    let mut names: Vec<String> = skipped
        .iter()
        .take(SKIPPED_NAMED)
        .map(|p| terminal::err(p).into_owned())
        .collect();
    if n > SKIPPED_NAMED {
        names.push(format!("and {} more", n - SKIPPED_NAMED));
    }
    let files = if n == 1 { "file" } else { "files" };
    format!(
        "skipped {n} {files} that are not text (binary or not UTF-8): {}",
        names.join(", ")
    )
}

/// `path:start:end` → (`path`, lines); anything else is a plain path.
fn split_range(spec: &str) -> (&str, Option<(u64, u64)>) {
    let mut parts = spec.rsplitn(3, ':');
    let (Some(e), Some(st), Some(p)) = (parts.next(), parts.next(), parts.next()) else {
        return (spec, None);
    };
    match (st.parse::<u64>(), e.parse::<u64>()) {
        (Ok(st), Ok(e)) => (p, Some((st, e))),
        _ => (spec, None),
    }
}

/// `bb7 remove`.
pub(super) async fn remove(s: &mut Session, path: &str) -> Res<()> {
    on_path(
        s,
        path,
        Action::ContextRemove,
        "removed",
        "is not in the chat's context",
    )
    .await
}

/// Sends a one-path action for the active chat and reports `done` on stderr; the
/// server's `not_found` is said as `missing` (what there was nothing of).
async fn on_path(
    s: &mut Session,
    typed: &str,
    action: fn(params::PathOnly) -> Action,
    done: &str,
    missing: &str,
) -> Res<()> {
    s.active().await?;
    // An attachment's path (`command_output:cargo test`) is a label, not a file: it
    // does not start from the current directory.
    let label = typed.split_once(':').is_some_and(|(kind, _)| {
        crate::chat::model::AttachKind::parse(kind).is_ok() && !s.cwd.join(typed).exists()
    });
    let path = if label {
        typed.to_owned()
    } else {
        s.path(typed)
    };
    match s.c.call::<Ack>(action(params::PathOnly::new(&path))).await {
        Ok(_) => {}
        Err(e) if e.is(ErrorCode::NotFound) => {
            return Err(Failure::new(format!(
                "{} {missing} (see `{}`)",
                terminal::err(&path),
                s.cmd("bb7 status", "/status")
            )));
        }
        Err(e) => return Err(e),
    }
    eprintln!("bb7: {done} {}", terminal::err(&path));
    Ok(())
}

/// The status column: the server's status, `R` for a read-only file without one,
/// prefixed by `~` when the file changed on disk since its snapshot.
fn status_mark(f: &FileStatus) -> String {
    let letter = match f.status {
        Status::Unchanged if f.readonly => "R",
        other => other.letter(),
    };
    let sync = if f.out_of_sync { "~" } else { "" };
    format!("{sync}{letter}")
}

/// `bb7 status`: one line per file, `STATUS PATH[:start-end]` (the legend is in
/// `bb7 status --help`).
pub(super) async fn status(s: &mut Session) -> Res<()> {
    s.active().await?;
    let r = s.statuses().await?;
    // The gauge goes to stderr, and only on a terminal (like the legend): stdout stays
    // one `STATUS PATH` per line for scripts, and a script's stderr stays quiet.
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let e: TokenEstimate =
            s.c.call(Action::EstimateTokens(params::EstimateTokens {
                input_text: None,
            }))
            .await?;
        eprintln!("bb7: context {}", gauge_text(&e));
    }
    if r.files.is_empty() {
        eprintln!("bb7: no files in context and no pending changes (add some with `bb7 add`)");
        return Ok(());
    }
    let mut text = String::new();
    for f in r.files.iter() {
        let range = match (f.start_line, f.end_line) {
            (Some(a), Some(b)) => format!(":{a}-{b}"),
            _ => String::new(),
        };
        let mark = format!("{:<3}", status_mark(f));
        let colour = match f.status {
            Status::Modified => render::style::HUNK,
            Status::Added => render::style::ADDED,
            Status::AddedOverExisting => render::style::ERROR,
            _ => render::style::DIM,
        };
        let held = match f.on_disk {
            Some(OnDisk::All) => "  (already on disk)",
            Some(OnDisk::Part) => "  (partly on disk)",
            None => "",
        };
        text.push_str(&format!(
            "{} {}{range}{}\n",
            render::paint(colour, &mark),
            terminal::safe(&f.path, terminal::Sink::Stdout),
            render::paint(render::style::DIM, held)
        ));
    }
    s.out_rendered(&text);
    Ok(())
}

/// The estimate's context gauge, coloured by its level (docs/PROTOCOL.md, "Extension:
/// context gauge"), with a hint when it is full.
pub(super) fn gauge_text(e: &TokenEstimate) -> String {
    use crate::tokens::gauge::Level;
    let colour = match e.context_level {
        Level::Ok | Level::Unknown => render::style::DIM,
        Level::Warning => render::style::HUNK,
        Level::Full => render::style::ERROR,
    };
    let note = match e.context_level {
        Level::Warning => " - nearly full",
        Level::Full => " - full: a send is refused; drop context files",
        _ => "",
    };
    format!("{}{note}", render::paint(colour, &e.context_gauge))
}

/// `bb7 diff [PATH]`.
pub(super) async fn diff(s: &mut Session, path: Option<String>) -> Res<()> {
    s.active().await?;
    let want = path.map(|p| s.path(&p));
    let r = s.statuses().await?;
    let mut text = String::new();
    for f in r.files.iter() {
        if !f.has_output || want.as_ref().is_some_and(|w| w != &f.path) {
            continue;
        }
        let old = f.context_content.as_deref().unwrap_or("");
        let new = f.output_content.as_deref().unwrap_or("");
        text.push_str(&unified_diff(&f.path, old, new));
    }
    if text.is_empty() {
        eprintln!("bb7: no pending changes");
    }
    // The files' text is made safe before the diff is coloured.
    // Hidden characters are written as `<U+202E>`: what is approved is what is seen.
    s.out_rendered(&render::diff(&terminal::safe(
        &crate::text::invisible::visible(&text),
        terminal::Sink::Stdout,
    )));
    Ok(())
}

/// `bb7 apply [PATH] [--force]`: merges each output into the file on disk. A conflict
/// with the user's edits leaves that file untouched, is reported, and makes the
/// command fail after the other files are applied.
pub(super) async fn apply(s: &mut Session, path: Option<String>, force: bool) -> Res<()> {
    s.active().await?;
    let want = path.map(|p| s.path(&p));
    let r = s.statuses().await?;
    let mut applied = 0;
    let mut conflicts = Vec::new();
    for f in r.files.iter() {
        let p = &f.path;
        let wanted = match &want {
            Some(w) => w == p && f.has_output,
            None => matches!(f.status, Status::Modified | Status::Added),
        };
        if f.status == Status::AddedOverExisting && want.is_none() {
            eprintln!(
                "bb7: skipped {}: it exists locally (apply it by name to overwrite)",
                terminal::err(p)
            );
        }
        // Version-control and tool state is written only when named explicitly.
        let protected =
            want.is_none() && f.has_output && crate::project::paths::protected_dir(p).is_some();
        if protected {
            eprintln!(
                "bb7: skipped {}: a protected directory (apply it by name)",
                terminal::err(p)
            );
        }
        let wanted = wanted && !protected;
        if !wanted {
            continue;
        }
        let req = Action::ApplyFile(params::ApplyFile {
            path: NonEmpty(p.clone()),
            destination: None,
            force: force.then_some(true),
            editor_content: None,
        });
        match s.c.call::<Applied>(req).await {
            Ok(a) => {
                let cp = a
                    .checkpoint_id
                    .map(|c| format!(" (checkpoint {c})"))
                    .unwrap_or_default();
                eprintln!("bb7: applied {}{cp}", terminal::err(p));
                applied += 1;
            }
            Err(e) if e.is(ErrorCode::Conflict) => {
                let why = e.message.trim_start_matches("conflict: ");
                conflicts.push(format!(
                    "conflict: {}: {}",
                    terminal::err(p),
                    terminal::err(why)
                ));
            }
            Err(e) => return Err(e),
        }
    }
    if !conflicts.is_empty() {
        // The conflicts come last: an editor that shows one line shows one of them.
        eprintln!(
            "bb7: files with a conflict are left untouched: `{}` takes hunks one by one, \
             `{}` overwrites your overlapping lines",
            s.cmd("bb7 review", "/review"),
            s.cmd("bb7 apply --force", "/apply --force")
        );
        return Err(Failure::new(conflicts.join("\nbb7: ")).with_status(exit::CONFLICT));
    }
    if applied == 0 {
        // Nothing pending is a state, not a failure; naming a file without output is.
        return match want {
            Some(w) => Err(Failure::new(format!(
                "no output to apply for {w} (see `{}`)",
                s.cmd("bb7 status", "/status")
            ))),
            None => {
                eprintln!("bb7: nothing to apply: the model has no pending changes");
                Ok(())
            }
        };
    }
    Ok(())
}

/// `bb7 reject PATH`.
pub(super) async fn reject(s: &mut Session, path: &str) -> Res<()> {
    on_path(
        s,
        path,
        Action::OutputDelete,
        "rejected the output of",
        "has no pending changes from the model",
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::split_range;

    #[test]
    fn sections_are_path_start_end() {
        assert_eq!(split_range("a.rs:2:5"), ("a.rs", Some((2, 5))));
        assert_eq!(split_range("C:x.rs"), ("C:x.rs", None));
        assert_eq!(split_range("a:b:c.rs"), ("a:b:c.rs", None));
        assert_eq!(split_range("a.rs"), ("a.rs", None));
    }
}
