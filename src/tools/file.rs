//! The file tools as the model sees them (`write_file`, and one `edit_file` schema per
//! `diff_mode`), and reading a call's arguments back, including the near-variants
//! models send when their meaning is unambiguous. Planning and applying the calls is
//! the edit engine's work ([`crate::edit`]).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::edit::text::model_lines;
use crate::error::{Error, Result as BbResult};

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
    pub fn parse(name: Option<&str>) -> BbResult<DiffMode> {
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

/// A boolean that some models send as a string.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Flag {
    Bool(bool),
    Text(String),
}

impl Flag {
    fn get(flag: &Option<Flag>) -> Result<bool, String> {
        match flag {
            None => Ok(false),
            Some(Flag::Bool(b)) => Ok(*b),
            Some(Flag::Text(t)) if t == "true" => Ok(true),
            Some(Flag::Text(t)) if t == "false" || t.is_empty() => Ok(false),
            Some(Flag::Text(t)) => Err(format!("replace_all must be true or false, not {t:?}")),
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
struct ObjectList<T>(Result<Vec<T>, String>);

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for ObjectList<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let items = as_list(Value::deserialize(d)?).and_then(|items| {
            items
                .into_iter()
                .map(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
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
    fn path(&self) -> Result<Option<String>, String> {
        let given: Vec<&String> = [&self.path, &self.file_path, &self.filepath]
            .into_iter()
            .flatten()
            .collect();
        match given[..] {
            [] => Ok(None),
            [p] => Ok(Some(p.clone())),
            [a, ..] if given.iter().all(|p| p == &a) => Ok(Some(a.clone())),
            _ => Err("path and file_path name different files".into()),
        }
    }

    fn file_id(&self) -> Result<Option<String>, String> {
        match &self.file_id {
            None => Ok(None),
            Some(FileIdArg::Text(s)) if s.trim().is_empty() => Ok(None),
            Some(FileIdArg::Text(s)) => Ok(Some(s.trim().to_owned())),
            // File ids are 8 hex digits; one of digits only, sent unquoted, lost its
            // leading zeros.
            Some(FileIdArg::Number(n)) => Ok(Some(format!("{:0>8}", n.to_string()))),
            Some(FileIdArg::Other(other)) => Err(format!("file_id must be a string, not {other}")),
        }
    }
}

/// One search/replace edit.
#[derive(Debug, Clone, PartialEq)]
pub struct SrEdit {
    /// The path as the model wrote it (validated later).
    pub path: String,
    /// The file id the model gave, if any.
    pub file_id: Option<String>,
    /// Text to find.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence.
    pub replace_all: bool,
}

/// One change of the `anchored` schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Lines that start the region.
    pub start: Vec<String>,
    /// Lines that end it, if given.
    pub end: Option<Vec<String>>,
    /// The lines that replace the region.
    pub content: Vec<String>,
}

/// A tool call's arguments, read.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// `write_file`.
    Write {
        /// Target path as given.
        path: String,
        /// Complete content.
        content: String,
    },
    /// Search/replace edits, in order (possibly across files).
    Edits(Vec<SrEdit>),
    /// Anchored changes to one file.
    Anchored {
        /// Target path as given.
        path: String,
        /// The file id the model gave, if any.
        file_id: Option<String>,
        /// The changes, in order.
        changes: Vec<Change>,
    },
}

fn expected(mode: DiffMode) -> &'static str {
    match mode {
        DiffMode::SearchReplace => SINGLE_SHAPE,
        DiffMode::Anchored => ANCHORED_SHAPE,
        _ => MULTI_SHAPE,
    }
}

/// Reads the arguments of tool `name`. Accepted besides the schema of `mode`: a
/// top-level `path`/`file_id` for edits that lack one, one edit object (or a JSON
/// string of the list) instead of a list, `file_path` for `path`, and the other
/// `edit_file` schemas. Errors: a message that says which shape was expected.
pub fn parse_call(name: &str, args: &Value, mode: DiffMode) -> Result<Parsed, String> {
    let raw = RawEdit::deserialize(args).map_err(|e| format!("{name}: invalid arguments ({e})"))?;
    match name {
        "write_file" => {
            let path = raw
                .path()?
                .ok_or("write_file expects {\"path\",\"content\"}: path is missing")?;
            let content = match raw.content {
                Some(Lines::Text(t)) => t,
                Some(Lines::List(l)) => l.join("\n"),
                None => {
                    return Err(
                        "write_file expects {\"path\",\"content\"}: content is missing".into(),
                    );
                }
            };
            Ok(Parsed::Write { path, content })
        }
        "edit_file" if mode == DiffMode::Off => {
            Err("edit_file is not available (diff_mode off); use write_file".into())
        }
        "edit_file" => parse_edit(raw, mode),
        other => Err(format!("Unknown tool {other}; use write_file or edit_file")),
    }
}

fn parse_edit(mut raw: RawEdit, mode: DiffMode) -> Result<Parsed, String> {
    let want = expected(mode);
    let top_path = raw.path()?;
    let top_id = raw.file_id()?;
    if let Some(ObjectList(items)) = raw.changes.take() {
        let path = top_path.ok_or_else(|| format!("edit_file expects {want}: path is missing"))?;
        let changes = items
            .and_then(|items| items.into_iter().map(anchored_from).collect())
            .map_err(|e| format!("edit_file expects {want}: {e}"))?;
        return Ok(Parsed::Anchored {
            path,
            file_id: top_id,
            changes,
        });
    }
    let items: Vec<RawEdit> = match raw.edits.take() {
        Some(ObjectList(items)) => items.map_err(|e| format!("edit_file expects {want}: {e}"))?,
        None if raw.old_string.is_some() || raw.start.is_some() => vec![raw],
        None => return Err(format!("edit_file expects {want}: edits is missing")),
    };
    if items.is_empty() {
        return Err(format!("edit_file expects {want}: edits is empty"));
    }
    if items
        .iter()
        .any(|e| e.start.is_some() || e.start_anchor.is_some())
    {
        let path = top_path.ok_or_else(|| format!("edit_file expects {want}: path is missing"))?;
        let changes = items
            .into_iter()
            .map(|e| anchored_from(e).map_err(|m| format!("edit_file expects {want}: {m}")))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Parsed::Anchored {
            path,
            file_id: top_id,
            changes,
        });
    }
    let mut edits = Vec::new();
    for (n, e) in items.into_iter().enumerate() {
        let which = |m: &str| format!("edit_file expects {want}: edit {}: {m}", n + 1);
        let path = e
            .path()?
            .or_else(|| top_path.clone())
            .ok_or_else(|| which("path is missing"))?;
        let file_id = e.file_id()?.or_else(|| top_id.clone());
        let old_string = e
            .old_string
            .clone()
            .ok_or_else(|| which("old_string is missing"))?;
        let new_string = e
            .new_string
            .clone()
            .ok_or_else(|| which("new_string is missing"))?;
        edits.push(SrEdit {
            path,
            file_id,
            old_string,
            new_string,
            replace_all: Flag::get(&e.replace_all).map_err(|m| which(&m))?,
        });
    }
    Ok(Parsed::Edits(edits))
}

/// A list, one object standing for a list of one, or a JSON string of either.
fn as_list(v: Value) -> Result<Vec<Value>, String> {
    match v {
        Value::Array(a) => Ok(a),
        Value::Object(_) => Ok(vec![v]),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(inner @ (Value::Array(_) | Value::Object(_))) => as_list(inner),
            _ => Err("expected a list of objects, got a string".into()),
        },
        other => Err(format!("expected a list of objects, got {other}")),
    }
}

fn anchored_from(raw: RawEdit) -> Result<Change, String> {
    if let Some(start) = raw.start_anchor {
        // bb7's earlier anchored shape: one start line, one end line, a replacement.
        return Ok(Change {
            start: vec![start],
            end: raw.end_anchor.map(|e| vec![e]),
            content: model_lines(&raw.replacement.unwrap_or_default()),
        });
    }
    let start = raw.start.ok_or("start is missing")?.into_vec();
    let content = raw.content.ok_or("content is missing")?.into_vec();
    Ok(Change {
        start,
        end: raw.end.map(Lines::into_vec).filter(|e| !e.is_empty()),
        content,
    })
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
