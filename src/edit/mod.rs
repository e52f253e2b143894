//! The model's file tools: `write_file` and `edit_file` in the schema selected by
//! `diff_mode` (seed 001, "Tool Use"; seed 004). A response's tool calls are planned in
//! memory first: either every call applies and the resulting files are written
//! together, or nothing is written (DESIGN.md invariant 6).

pub mod matching;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use crate::chat::ids;
use crate::error::ErrorCode;
use crate::error::{Error, Result};
use crate::project::paths::locate_in_project;
use matching::{EditError, anchored, search_replace};

/// Which `edit_file` schema the model gets (config `diff_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffMode {
    /// `edit_file(path, file_id?, edits: [{old_string, new_string, replace_all?}])`.
    SearchReplaceMulti,
    /// `edit_file(path, file_id?, old_string, new_string, replace_all?)`.
    SearchReplace,
    /// `edit_file(path, file_id?, edits: [{start_anchor, end_anchor, replacement}])`.
    Anchored,
    /// No `edit_file`; only `write_file`.
    Off,
}

impl DiffMode {
    /// Parses the config value; absent means `search_replace_multi`.
    /// Errors: an unknown name.
    pub fn parse(name: Option<&str>) -> Result<DiffMode> {
        match name.unwrap_or("search_replace_multi") {
            "search_replace_multi" | "" => Ok(DiffMode::SearchReplaceMulti),
            "search_replace" => Ok(DiffMode::SearchReplace),
            "anchored" => Ok(DiffMode::Anchored),
            "off" => Ok(DiffMode::Off),
            other => Err(Error::invalid(format!(
                "Unknown diff_mode {other}: use search_replace_multi, search_replace, anchored or off"
            ))),
        }
    }
}

/// The `tools` array of a chat request for `mode`.
pub fn tool_definitions(mode: DiffMode) -> Vec<Value> {
    let file_id = json!({"type": "string", "description": "The file_id shown with the file you are changing. Optional; when given it must match."});
    let mut tools = vec![json!({
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create a new file or replace a whole file. Give the complete content. Use it for new files and for rewrites of small files.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Project-relative path."},
                    "content": {"type": "string", "description": "The complete new content of the file."},
                    "file_id": file_id,
                },
                "required": ["path", "content"],
            }
        }
    })];
    let edit = |description: &str, properties: Value, required: Value| {
        json!({"type": "function", "function": {
            "name": "edit_file", "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}})
    };
    match mode {
        DiffMode::Off => {}
        DiffMode::SearchReplaceMulti => tools.push(edit(
            "Change parts of a writable file. Each edit replaces old_string, which must occur exactly once (unless replace_all), with new_string. Edits apply in order. Copy old_string from the file exactly, with enough lines to be unique.",
            json!({
                "path": {"type": "string", "description": "Project-relative path of a writable file."},
                "file_id": file_id,
                "edits": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
                    "old_string": {"type": "string", "description": "Exact text to replace."},
                    "new_string": {"type": "string", "description": "Replacement text (may be empty)."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence."}
                }, "required": ["old_string", "new_string"]}}
            }),
            json!(["path", "edits"]),
        )),
        DiffMode::SearchReplace => tools.push(edit(
            "Change part of a writable file: replace old_string, which must occur exactly once (unless replace_all), with new_string. Copy old_string from the file exactly, with enough lines to be unique.",
            json!({
                "path": {"type": "string", "description": "Project-relative path of a writable file."},
                "file_id": file_id,
                "old_string": {"type": "string", "description": "Exact text to replace."},
                "new_string": {"type": "string", "description": "Replacement text (may be empty)."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence."}
            }),
            json!(["path", "old_string", "new_string"]),
        )),
        DiffMode::Anchored => tools.push(edit(
            "Replace blocks of lines in a writable file. Each edit replaces everything from the line equal to start_anchor through the next line equal to end_anchor (both inclusive, whitespace around them ignored) with replacement. start_anchor must be unique in the file.",
            json!({
                "path": {"type": "string", "description": "Project-relative path of a writable file."},
                "file_id": file_id,
                "edits": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
                    "start_anchor": {"type": "string", "description": "The full first line of the block."},
                    "end_anchor": {"type": "string", "description": "The full last line of the block."},
                    "replacement": {"type": "string", "description": "The new lines, anchors included if they stay."}
                }, "required": ["start_anchor", "end_anchor", "replacement"]}}
            }),
            json!(["path", "edits"]),
        )),
    }
    tools
}

/// One complete tool call from the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The provider's call id.
    pub id: String,
    /// Function name.
    pub name: String,
    /// The JSON arguments, as streamed (may be invalid).
    pub arguments: String,
}

impl ToolCall {
    /// The OpenAI `tool_calls` entry of this call.
    pub fn to_request(&self) -> Value {
        json!({"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}})
    }
}

/// The assistant message that carries `text` and `calls`, to send back to the model
/// before the `tool` messages that answer the calls.
pub fn assistant_message(text: &str, calls: &[ToolCall]) -> Value {
    let tool_calls: Vec<Value> = calls.iter().map(ToolCall::to_request).collect();
    json!({"role": "assistant", "content": text, "tool_calls": tool_calls})
}

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

/// The outcome of one tool call, as reported in `diff_error` (PROTOCOL.md).
#[derive(Debug, Clone, Serialize)]
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
    pub status: &'static str,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For a not-unique match: where the matches start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_lines: Option<Vec<usize>>,
    /// For a not-found match: the closest lines of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestions: Option<Vec<String>>,
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
    /// A path that resolved outside the project (the hard guard of seed 001).
    pub escape: Option<String>,
}

impl Plan {
    /// Whether every call applied.
    pub fn ok(&self) -> bool {
        self.escape.is_none() && self.reports.iter().all(|r| r.status == "ok")
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

/// Plans `calls` against the files as `access` describes them. Calls apply in order,
/// later edits seeing earlier ones. Nothing is written here.
pub fn plan(
    calls: &[ToolCall],
    mode: DiffMode,
    root: &Path,
    access: &dyn Fn(&str) -> FileAccess,
) -> Plan {
    let mut plan = Plan::default();
    let mut current: BTreeMap<String, (String, String)> = BTreeMap::new();
    for call in calls {
        let mut report = CallReport {
            tool: call.name.clone(),
            path: None,
            args: None,
            args_raw: None,
            status: "ok",
            error: None,
            match_lines: None,
            suggestions: None,
        };
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                report.args_raw = Some(call.arguments.clone());
                fail(
                    &mut report,
                    "The arguments are not a valid JSON object".into(),
                );
                plan.reports.push(report);
                continue;
            }
        };
        report.args = Some(args.clone());
        let result = apply_call(
            call,
            &args,
            mode,
            root,
            access,
            &mut current,
            &mut plan,
            &mut report,
        );
        if let Err(e) = result {
            match e {
                CallError::Edit(err) => {
                    let path = report.path.clone().unwrap_or_default();
                    match &err {
                        EditError::NotUnique { match_lines } => {
                            report.match_lines = Some(match_lines.clone())
                        }
                        EditError::NotFound { suggestions, .. } => {
                            report.suggestions = Some(suggestions.clone())
                        }
                        EditError::Invalid(_) => {}
                    }
                    fail(&mut report, err.message(&path));
                }
                CallError::Other(m) => fail(&mut report, m),
            }
        }
        plan.reports.push(report);
    }
    for (path, (content, _)) in current {
        plan.writes.insert(path, content);
    }
    plan
}

enum CallError {
    Edit(EditError),
    Other(String),
}

impl From<EditError> for CallError {
    fn from(e: EditError) -> Self {
        CallError::Edit(e)
    }
}

fn fail(report: &mut CallReport, message: String) {
    report.status = "failed";
    report.error = Some(message);
}

fn str_arg<'a>(args: &'a Value, key: &str) -> std::result::Result<&'a str, CallError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| CallError::Other(format!("Missing string argument '{key}'")))
}

#[allow(clippy::too_many_arguments)]
fn apply_call(
    call: &ToolCall,
    args: &Value,
    mode: DiffMode,
    root: &Path,
    access: &dyn Fn(&str) -> FileAccess,
    current: &mut BTreeMap<String, (String, String)>,
    plan: &mut Plan,
    report: &mut CallReport,
) -> std::result::Result<(), CallError> {
    let raw_path = str_arg(args, "path")?;
    report.path = Some(raw_path.to_owned());
    let rel = match locate_in_project(root, raw_path) {
        Ok((rel, _)) => rel,
        Err(e) if e.code == ErrorCode::PathEscape => {
            plan.escape.get_or_insert_with(|| raw_path.to_owned());
            return Err(CallError::Other(format!(
                "{raw_path} is outside the project"
            )));
        }
        Err(e) => return Err(CallError::Other(e.message)),
    };
    report.path = Some(rel.clone());
    let access_now = access(&rel);
    if let FileAccess::ReadOnly(reason) = &access_now {
        return Err(CallError::Other(format!("{rel} is read-only: {reason}")));
    }
    let given_id = args
        .get("file_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let base = match &access_now {
        FileAccess::Writable { content, file_id } => Some((content.clone(), file_id.clone())),
        _ => None,
    };
    if let (Some(given), Some((_, id))) = (given_id, &base)
        && given != id
    {
        return Err(CallError::Other(format!(
            "file_id {given} does not match the current version of {rel} ({id}); use the file_id shown with the file"
        )));
    }
    let start = current.get(&rel).cloned().or_else(|| base.clone());
    let new_content = match call.name.as_str() {
        "write_file" => str_arg(args, "content")?.to_owned(),
        "edit_file" => {
            let Some((content, _)) = start.clone() else {
                return Err(CallError::Other(format!(
                    "{rel} is not in context; use write_file to create a new file"
                )));
            };
            edit_content(&content, args, mode)?
        }
        other => return Err(CallError::Other(format!("Unknown tool {other}"))),
    };
    plan.bases
        .entry(rel.clone())
        .or_insert_with(|| base.map(|(c, _)| c));
    let id = ids::file_version(&rel, &new_content);
    current.insert(rel, (new_content, id));
    Ok(())
}

fn edit_content(
    content: &str,
    args: &Value,
    mode: DiffMode,
) -> std::result::Result<String, CallError> {
    match mode {
        DiffMode::Off => Err(CallError::Other(
            "edit_file is not available; use write_file".into(),
        )),
        DiffMode::SearchReplace => {
            let all = args
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Ok(search_replace(
                content,
                str_arg(args, "old_string")?,
                str_arg(args, "new_string")?,
                all,
            )?
            .0)
        }
        DiffMode::SearchReplaceMulti | DiffMode::Anchored => {
            // Accept the single-edit shape too: models mix schemas up.
            let edits: Vec<Value> = match args.get("edits") {
                Some(Value::Array(a)) if !a.is_empty() => a.clone(),
                _ if args.get("old_string").is_some() || args.get("start_anchor").is_some() => {
                    vec![args.clone()]
                }
                _ => {
                    return Err(CallError::Other(
                        "Missing argument 'edits' (a non-empty list)".into(),
                    ));
                }
            };
            let mut text = content.to_owned();
            for (n, e) in edits.iter().enumerate() {
                let step = if e.get("start_anchor").is_some() {
                    anchored(
                        &text,
                        str_arg(e, "start_anchor")?,
                        str_arg(e, "end_anchor")?,
                        str_arg(e, "replacement")?,
                    )
                } else {
                    let all = e
                        .get("replace_all")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    search_replace(
                        &text,
                        str_arg(e, "old_string")?,
                        str_arg(e, "new_string")?,
                        all,
                    )
                    .map(|r| r.0)
                };
                text = step.map_err(|err| match err {
                    EditError::Invalid(m) if edits.len() > 1 => {
                        EditError::Invalid(format!("edit {}: {m}", n + 1))
                    }
                    other => other,
                })?;
            }
            Ok(text)
        }
    }
}
