//! The edit engine behind the model's file tools (`write_file`, `edit_file`; their
//! definitions and arguments are in [`crate::tools::file`], see `docs/PROTOCOL.md`,
//! "The model's file tools"). A response's tool calls are planned in memory first:
//! either every call applies and the resulting files are written together, or nothing
//! is written.
//!
//! Layout: [`paths`] (model path validation), [`matching`] (finding the region an edit
//! means, with [`blanks`] and [`anchored`] as further passes), [`apply`] (rewriting that
//! region), [`merge`] (edits written against the same version), [`text`] (lines, line
//! endings, indentation).

pub mod anchored;
pub mod blanks;
pub mod block_paths;
pub mod blocks;
pub mod combine;
pub mod copy_chars;
pub mod elision;
pub mod error;
pub mod indent_rule;
pub mod literals;
pub mod make_cond;
pub mod matching;
pub mod model_style;
pub mod normal_form;
pub mod paths;
pub mod recipes;
pub mod replace_all;
pub mod replay;
pub mod request;
pub mod splice;
pub mod text;
pub mod verify;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat::ids;
pub use error::{CallCode, EditError};
use request::{Change, EditRequest, ProposedEdit, SrEdit};

/// What the model may do with a path, as the prompt showed it.
#[derive(Debug, Clone, PartialEq)]
pub enum FileAccess {
    /// A writable file: the content the model saw and its file id (the pending output
    /// when there is one, else the snapshot).
    Writable {
        /// Content as shown.
        content: String,
        /// Its file id.
        file_id: String,
    },
    /// In context but not writable; the reason is shown to the model.
    ReadOnly(String),
    /// Not in context and no output: only `write_file` may create it.
    Absent,
}

/// The outcome of one tool call, as reported in `diff_error` (docs/PROTOCOL.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallReport {
    /// Tool name.
    pub tool: String,
    /// Target path, when the arguments named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Parsed arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Raw arguments, when they are not valid JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_raw: Option<String>,
    /// `ok` or `failed`.
    pub status: CallStatus,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why, for the client and the model's retry context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<CallCode>,
    /// For a not-unique match: where the matches start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_lines: Option<Vec<usize>>,
    /// For a not-found match: the closest lines of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestions: Option<Vec<String>>,
}

/// Whether a tool call applied (in memory; see [`Plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// It applied.
    Ok,
    /// It was refused; see [`CallReport::code`].
    Failed,
}

/// The planned effect of a response's tool calls.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Final content per project-relative path, in path order.
    pub writes: BTreeMap<String, String>,
    /// The content each written path had as the model saw it (`None`: new file).
    pub bases: BTreeMap<String, Option<String>>,
    /// One report per call, in order.
    pub reports: Vec<CallReport>,
    /// A path that resolved outside the project. Planning reports such paths as
    /// failed calls (code `path_escape`) instead, so this stays `None`; it is kept for
    /// the server's last guard.
    pub escape: Option<String>,
}

impl Plan {
    /// Whether every call applied.
    pub fn ok(&self) -> bool {
        self.escape.is_none() && self.reports.iter().all(|r| r.status == CallStatus::Ok)
    }

    /// The error messages of failed calls, prefixed with the path.
    pub fn errors(&self) -> Vec<String> {
        self.reports
            .iter()
            .filter_map(|r| {
                r.error.as_ref().map(|e| match &r.path {
                    Some(p) => format!("{}({p}): {e}", r.tool),
                    None => format!("{}: {e}", r.tool),
                })
            })
            .collect()
    }
}

/// One failure of a call.
struct Failure {
    code: CallCode,
    message: String,
    path: Option<String>,
    match_lines: Option<Vec<usize>>,
    suggestions: Option<Vec<String>>,
}

impl Failure {
    fn new(code: CallCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            path: None,
            match_lines: None,
            suggestions: None,
        }
    }

    fn edit(err: EditError, path: &str, prefix: &str) -> Failure {
        let mut f = Failure::new(err.code(), format!("{prefix}{}", err.message(path)));
        f.path = Some(path.to_owned());
        match err {
            EditError::NotUnique { match_lines } => f.match_lines = Some(match_lines),
            EditError::NotFound { suggestions, .. } => f.suggestions = Some(suggestions),
            EditError::Invalid(_) => {}
        }
        f
    }
}

/// A file's content as the planned calls leave it.
#[derive(Debug, Clone)]
struct Pending {
    content: String,
    /// The id of the version the model was shown, which it keeps using for its later
    /// edits of the same response.
    seen_id: Option<String>,
}

/// Plans `edits` against the files as `access` describes them. Edits apply in order,
/// later ones seeing earlier ones; a failed one contributes nothing. Nothing is
/// written here.
pub fn plan(edits: &[ProposedEdit], root: &Path, access: &dyn Fn(&str) -> FileAccess) -> Plan {
    let mut plan = Plan::default();
    let mut pending: BTreeMap<String, Pending> = BTreeMap::new();
    let mut applied: Vec<SrEdit> = Vec::new();
    for proposed in edits {
        let mut report = CallReport {
            tool: proposed.tool.clone(),
            path: None,
            args: proposed.args.clone(),
            args_raw: proposed.args_raw.clone(),
            status: CallStatus::Ok,
            error: None,
            code: None,
            match_lines: None,
            suggestions: None,
        };
        let outcome = proposed
            .request
            .clone()
            .map_err(|e| Failure::new(CallCode::InvalidArguments, e))
            .and_then(|request| {
                report.path = first_path(&request);
                // A failed call leaves no trace: what it changed is put back. Only the
                // files it touches are copied, so a response of many edits costs time
                // in its edits, not in edits times files.
                let touched = touched_paths(&request, root);
                let saved: Vec<(String, Option<Pending>, Option<Option<String>>)> = touched
                    .iter()
                    .map(|p| {
                        (
                            p.clone(),
                            pending.get(p).cloned(),
                            plan.bases.get(p).cloned(),
                        )
                    })
                    .collect();
                let done = applied.len();
                let result = apply_call(
                    request,
                    root,
                    access,
                    &mut pending,
                    &mut plan.bases,
                    &mut applied,
                )
                .and_then(|()| refuse_nul(&pending, &touched));
                if result.is_err() {
                    applied.truncate(done);
                    for (p, was, base) in saved {
                        match was {
                            Some(v) => pending.insert(p.clone(), v),
                            None => pending.remove(&p),
                        };
                        match base {
                            Some(b) => plan.bases.insert(p, b),
                            None => plan.bases.remove(&p),
                        };
                    }
                }
                result
            });
        if let Err(f) = outcome {
            report.status = CallStatus::Failed;
            report.error = Some(f.message);
            report.code = Some(f.code);
            report.path = f.path.or(report.path);
            report.match_lines = f.match_lines;
            report.suggestions = f.suggestions;
        }
        plan.reports.push(report);
    }
    plan.writes = pending.into_iter().map(|(p, v)| (p, v.content)).collect();
    plan
}

/// Refuses content bb7 could not read back (`fsutil::check_storable`: a NUL byte, over
/// 64 MiB) in the files a call touched, so a write never leaves an output (and later a
/// project file) that no request can read.
fn refuse_nul(
    staged: &BTreeMap<String, Pending>,
    touched: &[String],
) -> std::result::Result<(), Failure> {
    for (rel, p) in touched.iter().filter_map(|p| staged.get_key_value(p)) {
        if let Err(e) = crate::project::fsutil::check_storable(&p.content, rel) {
            let mut f = Failure::new(
                CallCode::InvalidArguments,
                format!("{}; only text files up to 64 MiB can be written", e.message),
            );
            f.path = Some(rel.clone());
            return Err(f);
        }
    }
    Ok(())
}

/// The project-relative paths a call may change (those that resolve; one that does not
/// fails the call before anything changes).
fn touched_paths(parsed: &EditRequest, root: &Path) -> Vec<String> {
    let raw: Vec<&str> = match parsed {
        EditRequest::Write { path, .. }
        | EditRequest::Create { path, .. }
        | EditRequest::Anchored { path, .. } => vec![path],
        EditRequest::Edits(e) => e.iter().map(|e| e.path.as_str()).collect(),
    };
    let mut out: Vec<String> = raw
        .into_iter()
        .filter_map(|p| paths::resolve(root, p).ok())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn first_path(parsed: &EditRequest) -> Option<String> {
    match parsed {
        EditRequest::Write { path, .. }
        | EditRequest::Create { path, .. }
        | EditRequest::Anchored { path, .. } => Some(path.clone()),
        EditRequest::Edits(e) => e.first().map(|e| e.path.clone()),
    }
}

/// Resolves `raw` and the version an edit applies to: a pending write of this
/// response, else what the model was shown (output, else snapshot).
fn resolve(
    raw: &str,
    root: &Path,
    access: &dyn Fn(&str) -> FileAccess,
    pending: &BTreeMap<String, Pending>,
    bases: &mut BTreeMap<String, Option<String>>,
) -> std::result::Result<(String, Option<Pending>), Failure> {
    let rel = paths::resolve(root, raw).map_err(|e| {
        let mut f = Failure::new(e.code, e.message);
        f.path = Some(raw.to_owned());
        f
    })?;
    let in_path = |code, m: String| {
        let mut f = Failure::new(code, m);
        f.path = Some(rel.clone());
        f
    };
    let shown = match access(&rel) {
        FileAccess::ReadOnly(reason) => {
            return Err(in_path(
                CallCode::ReadOnly,
                format!("{rel} is read-only: {reason}"),
            ));
        }
        FileAccess::Writable { content, file_id } => Some((content, file_id)),
        FileAccess::Absent => None,
    };
    bases
        .entry(rel.clone())
        .or_insert_with(|| shown.as_ref().map(|(c, _)| c.clone()));
    let current = pending.get(&rel).cloned().or_else(|| {
        shown.map(|(content, id)| Pending {
            content,
            seen_id: Some(id),
        })
    });
    Ok((rel, current))
}

/// Checks a given `file_id` against the resolved base of `rel`.
fn check_id(rel: &str, given: Option<&str>, base: &Pending) -> std::result::Result<(), Failure> {
    let Some(given) = given else { return Ok(()) };
    let current = ids::file_version(rel, &base.content);
    if given == current || base.seen_id.as_deref() == Some(given) {
        return Ok(());
    }
    // The same version as a client may have hashed it: without (or with) the final
    // newline, or with CRLF line endings.
    let lf = base.content.replace("\r\n", "\n");
    let trimmed = lf.strip_suffix('\n').unwrap_or(&lf);
    let variants = [
        trimmed.to_owned(),
        format!("{trimmed}\n"),
        lf.replace('\n', "\r\n"),
        trimmed.replace('\n', "\r\n"),
    ];
    if variants.iter().any(|v| ids::file_version(rel, v) == given) {
        return Ok(());
    }
    let shown = base.seen_id.as_deref().unwrap_or(&current);
    let mut f = Failure::new(
        CallCode::FileIdMismatch,
        format!(
            "file_id {given} does not match the writable version of {rel} (file_id {shown}); edit that version and use its file_id"
        ),
    );
    f.path = Some(rel.to_owned());
    Err(f)
}

fn apply_call(
    parsed: EditRequest,
    root: &Path,
    access: &dyn Fn(&str) -> FileAccess,
    pending: &mut BTreeMap<String, Pending>,
    bases: &mut BTreeMap<String, Option<String>>,
    applied: &mut Vec<SrEdit>,
) -> std::result::Result<(), Failure> {
    match parsed {
        EditRequest::Write { path, content } => {
            let (rel, current) = resolve(&path, root, access, pending, bases)?;
            let seen_id = current.and_then(|c| c.seen_id);
            pending.insert(rel, Pending { content, seen_id });
        }
        EditRequest::Create { path, content } => {
            let (rel, current) = resolve(&path, root, access, pending, bases)?;
            if current.is_some_and(|c| !c.content.trim().is_empty()) {
                let mut f = Failure::new(
                    CallCode::InvalidEdit,
                    format!(
                        "{rel} already exists: a block with an empty SEARCH part creates a new file only; put the lines to change in SEARCH"
                    ),
                );
                f.path = Some(rel);
                return Err(f);
            }
            pending.insert(
                rel,
                Pending {
                    content,
                    seen_id: None,
                },
            );
        }
        EditRequest::Edits(edits) => {
            let many = edits.len() > 1;
            for (n, e) in edits.into_iter().enumerate() {
                let prefix = if many {
                    format!("edit {}: ", n + 1)
                } else {
                    String::new()
                };
                // The same edit sent again in this response is made once.
                let same = |a: &SrEdit| {
                    a.path.trim_start_matches("./") == e.path.trim_start_matches("./")
                        && same_text(&a.old_string, &e.old_string)
                        && same_text(&a.new_string, &e.new_string)
                        && a.replace_all == e.replace_all
                };
                if applied.iter().any(same) {
                    continue;
                }
                apply_sr(&e, &prefix, root, access, pending, bases)?;
                applied.push(e);
            }
        }
        EditRequest::Anchored {
            path,
            file_id,
            changes,
        } => {
            let (rel, base) = editable(&path, file_id.as_deref(), root, access, pending, bases)?;
            let mut content = base.content.clone();
            let many = changes.len() > 1;
            for (n, c) in changes.iter().enumerate() {
                let prefix = if many {
                    format!("change {}: ", n + 1)
                } else {
                    String::new()
                };
                content = apply_change(&content, c).map_err(|e| Failure::edit(e, &rel, &prefix))?;
            }
            pending.insert(rel, Pending { content, ..base });
        }
    }
    Ok(())
}

/// Two copies of an edit's text that differ at most in their final line endings (the
/// same edit sent twice, once with a final newline and once without).
fn same_text(a: &str, b: &str) -> bool {
    let t = |s: &str| s.replace("\r\n", "\n").trim_end_matches('\n').to_owned();
    t(a) == t(b)
}

/// The base version of a file an edit may change.
fn editable(
    path: &str,
    file_id: Option<&str>,
    root: &Path,
    access: &dyn Fn(&str) -> FileAccess,
    pending: &BTreeMap<String, Pending>,
    bases: &mut BTreeMap<String, Option<String>>,
) -> std::result::Result<(String, Pending), Failure> {
    let (rel, current) = resolve(path, root, access, pending, bases)?;
    let Some(base) = current else {
        let mut f = Failure::new(
            CallCode::NotInContext,
            format!("{rel} is not in context; use write_file to create a new file"),
        );
        f.path = Some(rel);
        return Err(f);
    };
    check_id(&rel, file_id, &base)?;
    Ok((rel, base))
}

fn apply_sr(
    e: &SrEdit,
    prefix: &str,
    root: &Path,
    access: &dyn Fn(&str) -> FileAccess,
    pending: &mut BTreeMap<String, Pending>,
    bases: &mut BTreeMap<String, Option<String>>,
) -> std::result::Result<(), Failure> {
    let (rel, base) = editable(&e.path, e.file_id.as_deref(), root, access, pending, bases)
        .map_err(|mut f| {
            f.message = format!("{prefix}{}", f.message);
            f
        })?;
    let apply =
        |text: &str| matching::search_replace(text, &e.old_string, &e.new_string, e.replace_all);
    let content = match apply(&base.content) {
        Ok(c) => c,
        Err(err @ EditError::NotFound { .. }) => {
            // Written against the version the model was shown, before earlier edits of
            // this response: merge it when the changes do not touch.
            let shown = bases.get(&rel).cloned().flatten();
            let merged = shown
                .filter(|s| *s != base.content)
                .and_then(|s| Some((apply(&s).ok()?, s)))
                .and_then(|(theirs, s)| combine::merge3(&s, &base.content, &theirs));
            merged.ok_or_else(|| Failure::edit(err, &rel, prefix))?
        }
        Err(err) => return Err(Failure::edit(err, &rel, prefix)),
    };
    // The second reader must agree before anything is staged.
    verify::check(&base.content, &e.old_string, &e.new_string, &content).map_err(|why| {
        Failure::edit(
            EditError::Invalid(format!(
                "{why}; nothing was changed: send the edit again with old_string copied from the file"
            )),
            &rel,
            prefix,
        )
    })?;
    pending.insert(rel, Pending { content, ..base });
    Ok(())
}

fn apply_change(content: &str, c: &Change) -> std::result::Result<String, EditError> {
    anchored::anchored(content, &c.start, c.end.as_deref(), &c.content)
}
