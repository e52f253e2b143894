//! Attachments (`context_attach`): named, read-only context items whose text the
//! client supplies — diagnostics, a quickfix list, a `git diff`, a command's output, a
//! terminal's text, any text. Each is a context entry like a section: an immutable
//! snapshot under `context/_attachments/`, an event in the history, a row in
//! `get_file_statuses`, restored by a fork from its snapshot, never compared with a
//! file on disk. Its `path` is the label `{kind}:{name}`, so clients that remove a
//! file by the path of its status row remove an attachment the same way.

use serde_json::{Map, Value};

use super::{ChatFiles, event_for, push_event};
use crate::chat::ids;
use crate::chat::model::{AttachKind, Chat, ContextFile, Part};
use crate::error::{Error, Result};
use crate::project::fsutil;
use crate::text::to_lf;

/// The largest attachment text kept, 64 KiB (about 16,000 tokens): a test run or a
/// build log is mostly repetition, and its head and tail say what failed. A larger
/// text keeps its first quarter and last three quarters of this, cut at line ends,
/// with a note in between saying how much was left out ([`cap`]).
pub const MAX_ATTACHMENT_BYTES: usize = 64 * 1024;

/// The longest attachment name, in characters.
pub const MAX_NAME_CHARS: usize = 200;

/// Meta entries kept per attachment, and the longest meta value (characters).
const MAX_META_ENTRIES: usize = 16;
const MAX_META_CHARS: usize = 1_000;

/// What [`attach`] stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// The entry's path, `{kind}:{name}`.
    pub path: String,
    /// Its file id.
    pub version: String,
    /// Bytes of the text the client sent (LF line ends).
    pub bytes: usize,
    /// The text was longer than [`MAX_ATTACHMENT_BYTES`] and was cut.
    pub truncated: bool,
}

/// The path of attachment `name` of `kind`: `{kind}:{name}`.
pub fn path_of(kind: AttachKind, name: &str) -> String {
    format!("{}:{name}", kind.as_str())
}

/// Whether `cf` is meant for the user alone (meta `audience` `user`, from an MCP
/// server's `annotations.audience`): listed and kept, never sent to the model.
pub fn is_user_only(cf: &ContextFile) -> bool {
    matches!(cf.kind, Some(AttachKind::McpResource | AttachKind::Image))
        && cf
            .meta
            .as_ref()
            .and_then(|m| m.get("audience"))
            .and_then(Value::as_str)
            == Some("user")
}

/// Marks the event of a user-only entry (`audience` `user`): the request's history
/// leaves it out, as it leaves the entry out.
fn mark_user_only(part: &mut Part, cf: &ContextFile) {
    if is_user_only(cf) {
        part.extra.insert("audience".into(), Value::from("user"));
    }
}

/// Index of the attachment at `path`, if in context.
pub fn find(chat: &Chat, path: &str) -> Option<usize> {
    chat.context_files
        .iter()
        .position(|c| c.is_attachment() && c.path == path)
}

/// `content` cut to [`MAX_ATTACHMENT_BYTES`] when longer (see there), and whether it
/// was cut.
pub fn cap(content: &str) -> (String, bool) {
    if content.len() <= MAX_ATTACHMENT_BYTES {
        return (content.to_owned(), false);
    }
    let head_end = line_end_before(content, MAX_ATTACHMENT_BYTES / 4);
    let tail_start = line_start_after(content, content.len() - MAX_ATTACHMENT_BYTES * 3 / 4);
    let left_out = &content[head_end..tail_start];
    let note = format!(
        "[bb7: {} bytes ({} lines) left out here; attachments are cut to {} bytes]\n",
        left_out.len(),
        left_out.lines().count(),
        MAX_ATTACHMENT_BYTES
    );
    let mut out = String::with_capacity(MAX_ATTACHMENT_BYTES + note.len());
    out.push_str(&content[..head_end]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&note);
    out.push_str(&content[tail_start..]);
    (out, true)
}

/// The end of the last whole line within the first `max` bytes (at a char boundary
/// when the first line alone is longer).
fn line_end_before(s: &str, max: usize) -> usize {
    let mut at = max.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s[..at].rfind('\n').map_or(at, |i| i + 1)
}

/// The start of the first whole line at or after byte `min` (at a char boundary when
/// the last line alone is longer).
fn line_start_after(s: &str, min: usize) -> usize {
    let mut at = min.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    if at == 0 || s.as_bytes()[at - 1] == b'\n' {
        return at;
    }
    match s[at..].find('\n') {
        Some(i) if at + i + 1 < s.len() => at + i + 1,
        _ => at,
    }
}

/// Checks an attachment name: 1 to [`MAX_NAME_CHARS`] characters, none of them a
/// control character, not only blanks.
pub fn check_name(name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::invalid("An attachment needs a name"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(Error::invalid(format!(
            "An attachment name has at most {MAX_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::invalid(
            "An attachment name may not hold control characters (newlines, tabs, …)",
        ));
    }
    Ok(())
}

/// The meta entries kept: scalar values (strings, numbers, booleans) under keys of
/// ASCII letters, digits and `_` other than the tag's own attributes (`kind`,
/// `name`, `file_id`, `mode`, `fence`, `path`), at most 16 of them, each string cut to 1,000
/// characters. Others are dropped: meta is shown to the model as tag attributes.
pub fn clean_meta(meta: Option<Map<String, Value>>) -> Option<Map<String, Value>> {
    let meta = meta?;
    let mut out = Map::new();
    for (k, v) in meta {
        if out.len() == MAX_META_ENTRIES {
            break;
        }
        // The tag's own attributes are not meta.
        let reserved = ["kind", "name", "file_id", "mode", "fence", "path"].contains(&k.as_str());
        let key_ok = !reserved
            && !k.is_empty()
            && k.len() <= 64
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let v = match v {
            Value::String(s) => Value::String(s.chars().take(MAX_META_CHARS).collect()),
            v @ (Value::Number(_) | Value::Bool(_)) => v,
            _ => continue,
        };
        if key_ok {
            out.insert(k, v);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Adds (or replaces) attachment `name` of `kind` (`context_attach`): stores its
/// capped text as a snapshot and appends a `UserAttach` event. Attaching the same
/// kind and name again replaces the text (the event names the previous version);
/// the same text again changes nothing. Errors: a bad name.
pub fn attach(
    chat: &mut Chat,
    files: ChatFiles,
    kind: AttachKind,
    name: &str,
    content: &str,
    meta: Option<Map<String, Value>>,
) -> Result<Attached> {
    check_name(name)?;
    let content = to_lf(content);
    let (text, truncated) = cap(&content);
    let path = path_of(kind, name);
    let version = ids::file_version(&path, &text);
    let bytes = content.len();
    let cf = ContextFile {
        path,
        readonly: true,
        external: false,
        version,
        start_line: None,
        end_line: None,
        kind: Some(kind),
        meta: clean_meta(meta),
    };
    put(chat, files, cf, &text, bytes, truncated)
}

/// Stores attachment `cf` with its snapshot `text` (`bytes` long as sent, `truncated`
/// when cut), replacing one of the same path; the same entry again changes nothing.
pub(super) fn put(
    chat: &mut Chat,
    files: ChatFiles,
    cf: ContextFile,
    text: &str,
    bytes: usize,
    truncated: bool,
) -> Result<Attached> {
    let attached = Attached {
        path: cf.path.clone(),
        version: cf.version.clone(),
        bytes,
        truncated,
    };
    let prev = match find(chat, &cf.path) {
        Some(i) if chat.context_files[i] == cf => return Ok(attached),
        Some(i) => Some(chat.context_files.remove(i).version),
        None => None,
    };
    files.write_snapshot(&cf, text)?;
    let mut part = Part {
        prev_version: prev,
        ..event_for("UserAttach", &cf)
    };
    mark_user_only(&mut part, &cf);
    push_event(chat, part);
    chat.context_files.push(cf);
    Ok(attached)
}

/// Removes the attachment at `path` (`context_remove`): `UserRemoveAttachment`.
/// Errors: `File not found`.
pub fn remove(chat: &mut Chat, files: ChatFiles, path: &str) -> Result<()> {
    let i = find(chat, path).ok_or_else(|| Error::not_found(super::FILE_NOT_FOUND))?;
    let cf = chat.context_files.remove(i);
    fsutil::remove_file_if_exists(&files.snapshot_path(&cf)?)?;
    let mut part = event_for("UserRemoveAttachment", &cf);
    mark_user_only(&mut part, &cf);
    push_event(chat, part);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_keeps_head_and_tail_at_line_ends_with_a_note() {
        let line = "error[E0308]: mismatched types in some_function_name\n";
        let text = line.repeat(5_000);
        let (out, cut) = cap(&text);
        assert!(cut);
        assert!(out.len() <= MAX_ATTACHMENT_BYTES + 200, "{}", out.len());
        assert!(out.starts_with(line) && out.ends_with(line));
        let note = out.lines().find(|l| l.starts_with("[bb7: ")).unwrap();
        assert!(note.contains("lines) left out here"), "{note}");
        assert!(out.lines().all(|l| l == line.trim_end() || l == note));
        assert_eq!(cap("short\n"), ("short\n".to_owned(), false));
        // One long line with multibyte characters is cut at character boundaries.
        let (out, cut) = cap(&"é".repeat(MAX_ATTACHMENT_BYTES));
        assert!(cut && out.contains("[bb7: "));
    }

    #[test]
    fn names_and_meta() {
        assert!(check_name("cargo test").is_ok());
        assert!(check_name(" ").is_err());
        assert!(check_name("a\nb").is_err());
        assert!(check_name(&"x".repeat(201)).is_err());
        let meta: Map<String, Value> = serde_json::from_str(
            r#"{"command":"cargo test","exit_status":101,"nested":{"a":1},"bad key":"x"}"#,
        )
        .unwrap();
        let kept = clean_meta(Some(meta)).unwrap();
        assert_eq!(
            Value::Object(kept),
            serde_json::json!({"command": "cargo test", "exit_status": 101})
        );
    }
}
