//! The file tools as the model sees them (`write_file`, and one `edit_file` schema per
//! `diff_mode`), and reading a call's arguments back, including the near-variants
//! models send when their meaning is unambiguous. Planning and applying the calls is
//! the edit engine's work ([`crate::edit`]).

use serde::Deserialize;
use serde_json::{Value, json};

use super::call::ToolCall;
use crate::edit::request::{Change, EditRequest, ProposedEdit, SrEdit};
use crate::error::Error;
use crate::text::model_lines;

const MULTI_PROMPT: &str = include_str!("../../prompts/edit_file_multi.md");
const SINGLE_PROMPT: &str = include_str!("../../prompts/edit_file_single.md");
const ANCHORED_PROMPT: &str = include_str!("../../prompts/edit_file_anchored.md");
const WRITE_PROMPT: &str = include_str!("../../prompts/write_file.md");

/// Which `edit_file` schema the model gets (config `diff_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffMode {
    /// `edit_file({"edits":[{path, file_id, old_string, new_string, replace_all?}]})`.
    SearchReplaceMulti,
    /// `edit_file({path, file_id, old_string, new_string, replace_all?})`.
    SearchReplace,
    /// `edit_file({path, file_id, changes:[{start:[lines], end?:[lines], content:[lines]}]})`.
    Anchored,
    /// No `edit_file`; only `write_file`.
    Off,
}

impl DiffMode {
    /// Parses the config value; absent means `search_replace_multi`.
    /// Errors: an unknown name.
    pub fn parse(name: Option<&str>) -> Result<DiffMode, UnknownDiffMode> {
        match name.unwrap_or("search_replace_multi") {
            "search_replace_multi" | "" => Ok(DiffMode::SearchReplaceMulti),
            "search_replace" => Ok(DiffMode::SearchReplace),
            "anchored" => Ok(DiffMode::Anchored),
            "off" => Ok(DiffMode::Off),
            other => Err(UnknownDiffMode(other.to_owned())),
        }
    }
}

/// A `diff_mode` setting that is not one of the four schemas.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown diff_mode {0}: use search_replace_multi, search_replace, anchored or off")]
pub struct UnknownDiffMode(pub String);

impl From<UnknownDiffMode> for Error {
    fn from(e: UnknownDiffMode) -> Self {
        Error::invalid(e.to_string())
    }
}

/// The shape `search_replace_multi` expects, quoted in refusals.
pub const MULTI_SHAPE: &str =
    r#"{"edits":[{"path","file_id","old_string","new_string","replace_all"?}]}"#;
/// The shape `search_replace` expects.
pub const SINGLE_SHAPE: &str = r#"{"path","file_id","old_string","new_string","replace_all"?}"#;
/// The shape `anchored` expects.
pub const ANCHORED_SHAPE: &str =
    r#"{"path","file_id","changes":[{"start":[lines],"end"?:[lines],"content":[lines]}]}"#;

/// The `tools` array of a chat request for `mode`: `write_file`, and `edit_file` in the
/// schema of the mode (none for `off`).
pub fn definitions(mode: DiffMode) -> Vec<Value> {
    let path = json!({"type": "string", "description": "Relative file path of the existing file to modify."});
    let file_id = json!({"type": "string", "description": "The id of the writable file version shown with the file (file_id)."});
    let old = json!({"type": "string", "description": "The exact text to find in the file. Must match exactly once (unless replace_all is true)."});
    let new = json!({"type": "string", "description": "The replacement text. May be empty string to delete the matched text."});
    let all = json!({"type": "boolean", "description": "Replace all occurrences of old_string (default false)."});
    let lines = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    let function = |description: &str, parameters: Value, name: &str| json!({"type": "function", "function": {"name": name, "description": description.trim_end(), "parameters": parameters}});
    let mut tools = vec![function(
        WRITE_PROMPT,
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "Relative file path (e.g. 'src/utils/helper.go')."},
            "content": {"type": "string", "description": "Complete file content."}
        }, "required": ["path", "content"]}),
        "write_file",
    )];
    let edit = match mode {
        DiffMode::Off => return tools,
        DiffMode::SearchReplaceMulti => function(
            MULTI_PROMPT,
            json!({"type": "object", "properties": {
                "edits": {"type": "array", "description": "Search/replace edits, applied in order.", "items": {
                    "type": "object",
                    "properties": {"path": path, "file_id": file_id, "old_string": old, "new_string": new, "replace_all": all},
                    "required": ["path", "file_id", "old_string", "new_string"]}}
            }, "required": ["edits"]}),
            "edit_file",
        ),
        DiffMode::SearchReplace => function(
            SINGLE_PROMPT,
            json!({"type": "object",
                "properties": {"path": path, "file_id": file_id, "old_string": old, "new_string": new, "replace_all": all},
                "required": ["path", "file_id", "old_string", "new_string"]}),
            "edit_file",
        ),
        DiffMode::Anchored => function(
            ANCHORED_PROMPT,
            json!({"type": "object", "properties": {
                "path": path, "file_id": file_id,
                "changes": {"type": "array", "description": "Changes to apply, in order.", "items": {
                    "type": "object",
                    "properties": {
                        "start": lines("1-4 consecutive lines that uniquely mark the start of the region."),
                        "end": lines("Lines that mark the end of the region (optional; without it the region is the start lines)."),
                        "content": lines("The lines that replace the whole region.")
                    },
                    "required": ["start", "content"]}}
            }, "required": ["path", "file_id", "changes"]}),
            "edit_file",
        ),
    };
    tools.push(edit);
    tools
}

/// Why a file tool call's arguments were refused. The text is what the model reads in
/// the repair round and the user in `diff_error` (code `invalid_arguments`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// A field of a type no accepted variant has, found while reading the arguments.
    #[error("{tool}: invalid arguments ({detail})")]
    Invalid {
        /// The tool called.
        tool: String,
        /// The reader's description of the field.
        detail: String,
    },
    /// `write_file` without `path` or `content` (the missing field's name).
    #[error("write_file expects {{\"path\",\"content\"}}: {0} is missing")]
    WriteMissing(&'static str),
    /// `edit_file` while `diff_mode` is `off`.
    #[error("edit_file is not available (diff_mode off); use write_file")]
    EditOff,
    /// A tool bb7 does not offer.
    #[error("Unknown tool {0}; use write_file or edit_file")]
    UnknownTool(String),
    /// `path`, `file_path` and `filepath` given with different values.
    #[error("path and file_path name different files")]
    PathConflict,
    /// A `file_id` that is neither a string nor a number (the JSON given).
    #[error("file_id must be a string, not {0}")]
    FileIdType(String),
    /// An `edit_file` call that is not the shape `expected` (the mode's schema).
    #[error("edit_file expects {expected}: {problem}")]
    Shape {
        /// The shape of the mode's schema, as the model is shown it.
        expected: &'static str,
        /// What is wrong with the call.
        problem: ShapeProblem,
    },
}

/// What is wrong with an `edit_file` call's shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeProblem {
    /// A required field is absent (its name).
    #[error("{0} is missing")]
    Missing(&'static str),
    /// An empty `edits` list.
    #[error("edits is empty")]
    Empty,
    /// `edits` or `changes` is not a list of objects (`a string`, or the JSON given).
    #[error("expected a list of objects, got {0}")]
    NotAList(String),
    /// An item of the list has a field of the wrong type (the reader's description).
    #[error("{0}")]
    Item(String),
    /// A `replace_all` string other than `true`/`false`.
    #[error("replace_all must be true or false, not {0:?}")]
    Flag(String),
    /// A problem of the `n`th (1-based) search/replace edit.
    #[error("edit {n}: {problem}")]
    InEdit {
        /// Which edit, from 1.
        n: usize,
        /// What is wrong with it.
        problem: Box<ShapeProblem>,
    },
}

/// A boolean that some models send as a string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Flag {
    Bool(bool),
    Text(String),
}

impl Flag {
    fn get(flag: &Option<Flag>) -> Result<bool, ShapeProblem> {
        match flag {
            None => Ok(false),
            Some(Flag::Bool(b)) => Ok(*b),
            Some(Flag::Text(t)) if t == "true" => Ok(true),
            Some(Flag::Text(t)) if t == "false" || t.is_empty() => Ok(false),
            Some(Flag::Text(t)) => Err(ShapeProblem::Flag(t.clone())),
        }
    }
}

/// Lines given as a list, or as one string holding several lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Lines {
    List(Vec<String>),
    Text(String),
}

impl Lines {
    fn into_vec(self) -> Vec<String> {
        match self {
            Lines::List(v) => v,
            Lines::Text(t) => model_lines(&t),
        }
    }
}

/// An edit's `file_id`: a string, or an id of digits sent unquoted; anything else is
/// kept to be refused by name.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum FileIdArg {
    Text(String),
    Number(serde_json::Number),
    Other(Value),
}

/// A list of objects as models send it: a list, one object standing for a list of one,
/// or a JSON string of either. Reading the arguments never fails on it: the problem is
/// kept and reported when the list is used, after the checks that come first.
#[derive(Debug, Clone)]
struct ObjectList<T>(Result<Vec<T>, ShapeProblem>);

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for ObjectList<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = as_list(Value::deserialize(d)?).and_then(|items| {
            items
                .into_iter()
                .map(|v| serde_json::from_value(v).map_err(|e| ShapeProblem::Item(e.to_string())))
                .collect()
        });
        Ok(ObjectList(items))
    }
}

/// The fields any edit object may carry (all optional here; checked after).
#[derive(Debug, Clone, Default, Deserialize)]
struct RawEdit {
    path: Option<String>,
    file_path: Option<String>,
    #[serde(alias = "filePath")]
    filepath: Option<String>,
    #[serde(alias = "fileId")]
    file_id: Option<FileIdArg>,
    #[serde(alias = "old_str", alias = "oldString")]
    old_string: Option<String>,
    #[serde(alias = "new_str", alias = "newString")]
    new_string: Option<String>,
    #[serde(alias = "replaceAll")]
    replace_all: Option<Flag>,
    edits: Option<ObjectList<RawEdit>>,
    changes: Option<ObjectList<RawEdit>>,
    start: Option<Lines>,
    end: Option<Lines>,
    content: Option<Lines>,
    start_anchor: Option<String>,
    end_anchor: Option<String>,
    replacement: Option<String>,
}

impl RawEdit {
    fn path(&self) -> Result<Option<String>, ArgError> {
        let given: Vec<&String> = [&self.path, &self.file_path, &self.filepath]
            .into_iter()
            .flatten()
            .collect();
        match given[..] {
            [] => Ok(None),
            [p] => Ok(Some(p.clone())),
            [a, ..] if given.iter().all(|p| p == &a) => Ok(Some(a.clone())),
            _ => Err(ArgError::PathConflict),
        }
    }

    fn file_id(&self) -> Result<Option<String>, ArgError> {
        match &self.file_id {
            None => Ok(None),
            Some(FileIdArg::Text(s)) if s.trim().is_empty() => Ok(None),
            Some(FileIdArg::Text(s)) => Ok(Some(s.trim().to_owned())),
            // File ids are 8 hex digits; one of digits only, sent unquoted, lost its
            // leading zeros.
            Some(FileIdArg::Number(n)) => Ok(Some(format!("{:0>8}", n.to_string()))),
            Some(FileIdArg::Other(other)) => Err(ArgError::FileIdType(other.to_string())),
        }
    }
}

fn expected(mode: DiffMode) -> &'static str {
    match mode {
        DiffMode::SearchReplace => SINGLE_SHAPE,
        DiffMode::Anchored => ANCHORED_SHAPE,
        _ => MULTI_SHAPE,
    }
}

/// Reads a file tool call into the edit engine's [`ProposedEdit`]: arguments that are not
/// a JSON object, or that no accepted variant of `mode`'s schema reads, become a request
/// that fails with the text the model and `diff_error` show.
pub fn proposed_edit(call: &ToolCall, mode: DiffMode) -> ProposedEdit {
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(args @ Value::Object(_)) => ProposedEdit {
            tool: call.name.clone(),
            request: parse_call(&call.name, &args, mode).map_err(|e| e.to_string()),
            args: Some(args),
            args_raw: None,
        },
        _ => ProposedEdit {
            tool: call.name.clone(),
            args: None,
            args_raw: Some(call.arguments.clone()),
            request: Err("The arguments are not a valid JSON object".into()),
        },
    }
}

/// Reads the arguments of tool `name`. Accepted besides the schema of `mode`: a
/// top-level `path`/`file_id` for edits that lack one, one edit object (or a JSON
/// string of the list) instead of a list, `file_path` for `path`, and the other
/// `edit_file` schemas. Errors: an [`ArgError`] that says which shape was expected.
pub fn parse_call(name: &str, args: &Value, mode: DiffMode) -> Result<EditRequest, ArgError> {
    let raw = RawEdit::deserialize(args).map_err(|e| ArgError::Invalid {
        tool: name.to_owned(),
        detail: e.to_string(),
    })?;
    match name {
        "write_file" => {
            let path = raw.path()?.ok_or(ArgError::WriteMissing("path"))?;
            let content = match raw.content {
                Some(Lines::Text(t)) => t,
                Some(Lines::List(l)) => l.join("\n"),
                None => return Err(ArgError::WriteMissing("content")),
            };
            Ok(EditRequest::Write { path, content })
        }
        "edit_file" if mode == DiffMode::Off => Err(ArgError::EditOff),
        "edit_file" => parse_edit(raw, mode),
        other => Err(ArgError::UnknownTool(other.to_owned())),
    }
}

fn parse_edit(mut raw: RawEdit, mode: DiffMode) -> Result<EditRequest, ArgError> {
    let shape = |problem| ArgError::Shape {
        expected: expected(mode),
        problem,
    };
    let top_path = raw.path()?;
    let top_id = raw.file_id()?;
    if let Some(ObjectList(items)) = raw.changes.take() {
        let path = top_path.ok_or(shape(ShapeProblem::Missing("path")))?;
        let changes = items
            .and_then(|items| items.into_iter().map(anchored_from).collect())
            .map_err(shape)?;
        return Ok(EditRequest::Anchored {
            path,
            file_id: top_id,
            changes,
        });
    }
    let items: Vec<RawEdit> = match raw.edits.take() {
        Some(ObjectList(items)) => items.map_err(shape)?,
        None if raw.old_string.is_some() || raw.start.is_some() => vec![raw],
        None => return Err(shape(ShapeProblem::Missing("edits"))),
    };
    if items.is_empty() {
        return Err(shape(ShapeProblem::Empty));
    }
    if items
        .iter()
        .any(|e| e.start.is_some() || e.start_anchor.is_some())
    {
        let path = top_path.ok_or(shape(ShapeProblem::Missing("path")))?;
        let changes = items
            .into_iter()
            .map(anchored_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(shape)?;
        return Ok(EditRequest::Anchored {
            path,
            file_id: top_id,
            changes,
        });
    }
    let mut edits = Vec::new();
    for (n, e) in items.into_iter().enumerate() {
        let which = |problem| {
            shape(ShapeProblem::InEdit {
                n: n + 1,
                problem: Box::new(problem),
            })
        };
        let path = e
            .path()?
            .or_else(|| top_path.clone())
            .ok_or_else(|| which(ShapeProblem::Missing("path")))?;
        let file_id = e.file_id()?.or_else(|| top_id.clone());
        let old_string = e
            .old_string
            .clone()
            .ok_or_else(|| which(ShapeProblem::Missing("old_string")))?;
        let new_string = e
            .new_string
            .clone()
            .ok_or_else(|| which(ShapeProblem::Missing("new_string")))?;
        edits.push(SrEdit {
            path,
            file_id,
            old_string,
            new_string,
            replace_all: Flag::get(&e.replace_all).map_err(which)?,
        });
    }
    Ok(EditRequest::Edits(edits))
}

/// A list, one object standing for a list of one, or a JSON string of either.
fn as_list(v: Value) -> Result<Vec<Value>, ShapeProblem> {
    match v {
        Value::Array(a) => Ok(a),
        Value::Object(_) => Ok(vec![v]),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(inner @ (Value::Array(_) | Value::Object(_))) => as_list(inner),
            _ => Err(ShapeProblem::NotAList("a string".into())),
        },
        other => Err(ShapeProblem::NotAList(other.to_string())),
    }
}

fn anchored_from(raw: RawEdit) -> Result<Change, ShapeProblem> {
    if let Some(start) = raw.start_anchor {
        // bb7's earlier anchored shape: one start line, one end line, a replacement.
        return Ok(Change {
            start: vec![start],
            end: raw.end_anchor.map(|e| vec![e]),
            content: model_lines(&raw.replacement.unwrap_or_default()),
        });
    }
    let start = raw.start.ok_or(ShapeProblem::Missing("start"))?.into_vec();
    let content = raw
        .content
        .ok_or(ShapeProblem::Missing("content"))?
        .into_vec();
    Ok(Change {
        start,
        end: raw.end.map(Lines::into_vec).filter(|e| !e.is_empty()),
        content,
    })
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
