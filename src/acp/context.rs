//! The files a prompt brings: resource URIs as project paths (refusing any outside
//! the project), their text (the editor's when it offers `fs/read_text_file`), and
//! their snapshots in the chat's context; and the resources whose MIME type names an
//! attachment kind (a diff, diagnostics, a command's output), attached as such.

use std::path::{Component, Path, PathBuf};

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{ClientCapabilities, ReadTextFileRequest};

use super::state::{Cx, Sess, invalid, rpc};
use crate::error::ErrorCode;
use crate::front::Client;
use crate::protocol::action::Action;
use crate::protocol::params::{self, LineNumber, NonEmpty};
use crate::protocol::replies::{Ack, FileContent};

/// One file the prompt brings into the context.
pub(super) struct ContextItem {
    /// Project-relative path.
    pub rel: String,
    /// Its text.
    pub content: String,
    /// A line range (1-based, inclusive) for a section.
    pub range: Option<(u64, u64)>,
}

impl ContextItem {
    /// How the first update of the answer names it: `a.txt (new)`, `a.txt (updated)`
    /// (snapshotted again), `b.rs:10–40` (a section).
    pub(super) fn label(&self, new: bool) -> String {
        // A pasted image waits outside the project: its file name says enough.
        let rel = match Path::new(&self.rel) {
            p if p.is_absolute() => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.rel.clone()),
            _ => self.rel.clone(),
        };
        match self.range {
            Some((a, b)) if a == b => format!("{}:{a}", rel),
            Some((a, b)) => format!("{}:{a}\u{2013}{b}", rel),
            None if new => format!("{} (new)", rel),
            None => format!("{} (updated)", rel),
        }
    }
}

/// Adds `item` to the chat's context; a file already there is snapshotted again.
/// Returns its label (see [`ContextItem::label`]), `None` for a file whose snapshot
/// already holds this text.
pub(super) async fn add_context(
    c: &mut Client,
    item: ContextItem,
) -> Result<Option<String>, RpcError> {
    let mut new = true;
    let label_new = item.label(true);
    let label_old = item.label(false);
    let r = match item.range {
        Some((start, end)) => {
            c.call::<Ack>(Action::ContextAddSection(params::ContextAddSection {
                path: NonEmpty(item.rel.clone()),
                content: item.content,
                start_line: LineNumber(start),
                end_line: LineNumber(end),
            }))
            .await
        }
        None => {
            let r = c
                .call::<Ack>(Action::ContextAdd(params::ContextAdd {
                    path: NonEmpty(item.rel.clone()),
                    content: item.content.clone(),
                    readonly: None,
                }))
                .await;
            match r {
                Err(f) if f.is(ErrorCode::Conflict) => {
                    new = false;
                    // The same text again (avante links the same files with every
                    // prompt): nothing to snapshot, nothing to list.
                    let held = c
                        .call::<FileContent>(Action::GetContextFile(params::GetContextFile {
                            path: NonEmpty(item.rel.clone()),
                            start_line: None,
                            end_line: None,
                        }))
                        .await;
                    if held.is_ok_and(|h| h.content == item.content) {
                        return Ok(None);
                    }
                    c.call::<Ack>(Action::ContextUpdate(params::ContextUpdate {
                        path: NonEmpty(item.rel.clone()),
                        content: item.content,
                    }))
                    .await
                }
                r => r,
            }
        }
    };
    match r {
        Ok(_) if new => Ok(Some(label_new)),
        Ok(_) => Ok(Some(label_old)),
        // The same section again: it is there already.
        Err(f) if f.is(ErrorCode::Conflict) && item.range.is_some() => Ok(None),
        Err(f) => Err(rpc(f)),
    }
}

/// The attachment kind (`context_attach`) a resource's MIME type names, if any:
/// `text/x-diff` and `text/x-patch` are `git_diff` unless the URI names an existing
/// project file (a `.patch` file in the project stays a file); `application/vnd.bb7.<kind>` (any
/// `+json` or other suffix, and parameters, ignored; `-` for `_`) is `<kind>` for
/// `diagnostics`, `quickfix`, `git_diff`, `command_output`, `terminal` and `text`.
pub(super) fn attachment_kind(root: &Path, mime: Option<&str>, uri: &str) -> Option<&'static str> {
    let mime = mime?.split(';').next()?.trim().to_ascii_lowercase();
    if mime == "text/x-diff" || mime == "text/x-patch" {
        let project_file =
            is_file(uri) && locate_uri(root, uri).is_ok_and(|(rel, _)| root.join(rel).is_file());
        return (!project_file).then_some("git_diff");
    }
    let kind = mime.strip_prefix("application/vnd.bb7.")?;
    let kind = kind.split('+').next()?.replace('-', "_");
    [
        "diagnostics",
        "quickfix",
        "git_diff",
        "command_output",
        "terminal",
        "text",
    ]
    .into_iter()
    .find(|k| *k == kind)
}

/// An attachment's name: the last segment of the resource's URI (without query or
/// fragment, `%XX` decoded), else the URI (an ACP v1 embedded resource has no title);
/// control characters dropped and cut to 200 characters, as `context_attach` takes
/// names.
pub(super) fn attachment_name(uri: &str) -> String {
    let path = uri.split(['#', '?']).next().unwrap_or(uri);
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let last = percent_decode(last);
    let name = if last.trim().is_empty() { uri } else { &last };
    let name: String = name.chars().filter(|c| !c.is_control()).take(200).collect();
    if name.trim().is_empty() {
        "resource".to_owned()
    } else {
        name
    }
}

/// Attaches `content` as an attachment of `kind` named `name` (`context_attach`; the
/// same kind and name again replaces it).
pub(super) async fn attach(
    c: &mut Client,
    kind: &str,
    name: String,
    content: String,
) -> Result<(), RpcError> {
    c.call::<Ack>(Action::ContextAttach(params::ContextAttach {
        kind: NonEmpty(kind.to_owned()),
        name: NonEmpty(name),
        content,
        meta: None,
    }))
    .await
    .map(|_| ())
    .map_err(rpc)
}

/// Whether `uri` names a file: a `file:` URI or a plain path.
pub(super) fn is_file(uri: &str) -> bool {
    uri.starts_with("file:") || !uri.contains("://")
}

/// The project path a resource URI names, with the line range its fragment gives
/// (`#L10:20`, `#L10-20`, `#L10-L20`, `#L10`). A query (Zed's `?symbol=…` and
/// `?column=…` mentions) names a place in the file, not another file: it is dropped.
/// A path outside the project, or a directory, is refused.
pub(super) fn locate_uri(root: &Path, uri: &str) -> Result<(String, Option<(u64, u64)>), RpcError> {
    let (path, fragment) = match uri.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (uri, None),
    };
    let path = match path.split_once('?') {
        Some((p, _)) if path.starts_with("file:") => p,
        _ => path,
    };
    let path = match path
        .strip_prefix("file://")
        .map(|rest| rest.strip_prefix("localhost").unwrap_or(rest))
        .or_else(|| path.strip_prefix("file:"))
    {
        // `file:///abs`, `file://localhost/abs` or `file:/abs`.
        Some(rest) => percent_decode(rest),
        None if path.contains("://") => {
            return Err(invalid(format!(
                "{uri}: bb7 takes file: URIs of project files only"
            )));
        }
        None => percent_decode(path),
    };
    Ok((locate_path(root, &path)?, fragment.and_then(line_range)))
}

/// The project path of `path` (absolute, or relative to the project root) as an
/// editor wrote it. A path outside the project, or a directory, is refused by name.
pub(super) fn locate_path(root: &Path, path: &str) -> Result<String, RpcError> {
    let p = Path::new(path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let rel = inside(root, &abs).ok_or_else(|| {
        invalid(format!(
            "{} is outside the project {}: bb7 takes context from the project only",
            abs.display(),
            root.display()
        ))
    })?;
    if root.join(&rel).is_dir() {
        return Err(invalid(format!(
            "{rel} is a directory: bb7 takes files as context; name the files in it"
        )));
    }
    Ok(rel)
}

/// `abs` relative to `root` when it lies inside it (resolving `.`, `..` and the
/// symlinks of the part that exists); `None` outside, or for the root itself.
fn inside(root: &Path, abs: &Path) -> Option<String> {
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    // Resolve the longest existing prefix, so a symlink out of the project is outside.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        rest.push(existing.file_name()?.to_owned());
        if !existing.pop() {
            return None;
        }
    }
    let mut resolved = existing.canonicalize().ok()?;
    for name in rest.iter().rev() {
        resolved.push(name);
    }
    let rel = resolved.strip_prefix(root).ok()?;
    let rel = rel.to_str()?;
    (!rel.is_empty()).then(|| rel.to_owned())
}

/// `L10:20`, `L10-20`, `L10-L20`, `L10` as a 1-based inclusive range.
fn line_range(fragment: &str) -> Option<(u64, u64)> {
    let f = fragment.strip_prefix('L')?;
    let (a, b) = match f.split_once([':', '-']) {
        Some((a, b)) => (a, b.trim_start_matches('L')),
        None => (f, f),
    };
    let (a, b) = (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?);
    (a >= 1 && b >= a).then_some((a, b))
}

/// `%XX` escapes decoded (a URI's path); invalid escapes stay as they are.
fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The text of project file `rel`: the editor's (`fs/read_text_file`) when the client
/// offers it, else the file on disk (regular UTF-8 files only).
pub(super) async fn read_text(
    sess: &Sess,
    caps: &ClientCapabilities,
    rel: &str,
    cx: &Cx,
) -> Result<String, RpcError> {
    let abs = sess.abs(rel);
    let editor = match caps.fs.read_text_file {
        true => editor_text(sess, cx, &abs).await.map_err(|why| {
            invalid(format!(
                "{rel} is too large to add: {why}; nothing was added"
            ))
        })?,
        false => None,
    };
    if let Some(text) = editor {
        let disk = std::fs::read(&abs)
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
        return Ok(keep_final_newline(text, disk.as_deref()));
    }
    let bytes = crate::project::fsutil::read_regular(&abs)
        .map_err(|e| invalid(format!("cannot read {rel}: {e}")))?;
    crate::project::fsutil::text_from_bytes(bytes, rel)
        .map_err(|_| invalid(format!("{rel} is not UTF-8 text")))
}

/// How long bb7 waits for the editor's answer to `fs/read_text_file` (before it reads
/// the disk instead) or `fs/write_text_file`: a client that never answers must not
/// hold the session.
pub(super) const EDITOR_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// The editor's text of `abs` (`fs/read_text_file`): `Ok(None)` when the client
/// refuses or does not answer within [`EDITOR_READ_TIMEOUT`]; an answer over the line
/// limit (a buffer too large to send, `stdio::instead_of_too_long`) is an error naming
/// the limit, so that `/add`, a proposal, an apply and `/undo` never take the disk's
/// text for the editor's.
pub(super) async fn editor_text(
    sess: &Sess,
    cx: &Cx,
    abs: &Path,
) -> Result<Option<String>, String> {
    let call = cx
        .send_request(ReadTextFileRequest::new(sess.id.clone(), abs.to_path_buf()))
        .block_task();
    match tokio::time::timeout(EDITOR_READ_TIMEOUT, call).await {
        Ok(Ok(r)) => Ok(Some(r.content)),
        Ok(Err(e)) if e.message == super::stdio::too_long_message() => Err(e.message),
        _ => Ok(None),
    }
}

/// `editor`'s text with the final newline of the file on disk: a client whose read
/// drops it (avante.nvim) must not make an apply drop it from the file.
pub(super) fn keep_final_newline(mut editor: String, disk: Option<&str>) -> String {
    if let Some(d) = disk
        && d.ends_with('\n')
        && !editor.is_empty()
        && !editor.ends_with('\n')
    {
        editor.push_str(if d.ends_with("\r\n") { "\r\n" } else { "\n" });
    }
    editor
}
