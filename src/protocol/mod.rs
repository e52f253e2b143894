//! Wire types of the stdio protocol (docs/PROTOCOL.md): requests are JSON objects
//! tagged by `action` whose parameters are the types in [`params`]; messages are JSON
//! objects tagged by `type`, classified by [`MessageKind`]. One object per line.

pub mod action;
pub mod events;
mod fields;
pub mod head;
pub mod outbox;
pub mod params;
pub mod replies;
pub mod trace;

use serde::Deserialize as _;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};

/// Longest request line bb7 accepts, in bytes (64 MiB). Longer lines are discarded
/// whole and answered with an `error`; the limit is documented in docs/PROTOCOL.md.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One parsed request line.
#[derive(Debug, Clone)]
pub struct Request {
    /// The `action` field, e.g. `chat_new`.
    pub action: String,
    /// The `request_id`, normalised to a string (`42` becomes `"42"`).
    pub request_id: Option<String>,
    /// The request object, `action` and `request_id` included.
    pub fields: Value,
}

/// Why a line could not become a [`Request`]; carries the request id when one was
/// readable so the error reply can be matched.
#[derive(Debug)]
pub struct BadLine {
    /// The request id, if the line was an object with a usable `request_id`.
    pub request_id: Option<String>,
    /// What was wrong, in the reference's words where it has them.
    pub error: Error,
}

impl Request {
    /// Parses one line. Errors: `Invalid JSON` (not JSON or not an object),
    /// `Missing required field: action`, `Field 'action' must be a string`.
    pub fn parse(line: &[u8]) -> std::result::Result<Request, BadLine> {
        let value: Value = serde_json::from_slice(line).map_err(|_| BadLine {
            request_id: head::request_id_at_start(line),
            error: Error::invalid("Invalid JSON"),
        })?;
        let Value::Object(fields) = value else {
            return Err(BadLine {
                request_id: None,
                error: Error::invalid("Invalid JSON: a request must be a JSON object"),
            });
        };
        let request_id = match fields.get("request_id") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let action = match fields.get("action") {
            Some(Value::String(a)) => a.clone(),
            None | Some(Value::Null) => {
                return Err(BadLine {
                    request_id,
                    error: Error::invalid("Missing required field: action"),
                });
            }
            Some(_) => {
                return Err(BadLine {
                    request_id,
                    error: Error::invalid("Field 'action' must be a string"),
                });
            }
        };
        Ok(Request {
            action,
            request_id,
            fields: Value::Object(fields),
        })
    }

    /// The request's parameters as the type of its action (see [`params`]). Errors
    /// (`invalid_request`): `Missing required field: <f>` for an absent or `null`
    /// required field, `Field '<f>' must be <what>` for a mistyped one.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T> {
        serde_path_to_error::deserialize(&self.fields).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner().to_string();
            param_error(&self.fields, &field, &inner)
        })
    }
}

/// Words a serde error in the reference's style; `field` is the path serde reports
/// (`.` when the error is about the object itself, as for a missing field).
fn param_error(fields: &Value, field: &str, inner: &str) -> Error {
    if let Some(rest) = inner.strip_prefix("missing field `") {
        return missing(rest.split('`').next().unwrap_or(rest));
    }
    let top = field.split(['.', '[']).next().unwrap_or(field);
    if matches!(fields.get(top), Some(Value::Null)) {
        return missing(top);
    }
    // serde: "invalid type: integer `3`, expected a string at line …"; ours: "must …".
    let inner = inner.split(" at line ").next().unwrap_or(inner);
    if let Some((_, expected)) = inner.split_once(", expected ") {
        return wrong_type(field, expected);
    }
    if inner.starts_with("must ") {
        return Error::invalid(format!("Field '{field}' {inner}"));
    }
    Error::invalid(format!("Field '{field}': {inner}"))
}

fn missing(field: &str) -> Error {
    Error::invalid(format!("Missing required field: {field}"))
}

fn wrong_type(field: &str, expected: &str) -> Error {
    Error::invalid(format!("Field '{field}' must be {expected}"))
}

/// The `type` of a message bb7 writes, as a client reads it: which ones end the stream
/// of a `send` ([`MessageKind::is_final`]) and which ones come while it runs. Unknown
/// types are [`MessageKind::Other`], which a client skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A text delta of the answer.
    Chunk,
    /// A reasoning delta.
    Thinking,
    /// A retrieval tool step.
    ToolCall,
    /// A read waiting for `tool_approve`.
    ToolApproval,
    /// A question waiting for `clarify`.
    Clarification,
    /// A retry of the model request is scheduled.
    Retry,
    /// A dropped attempt of a `hybrid_auto` turn; another one starts.
    Attempt,
    /// A chat got a generated title (unsolicited).
    TitleUpdated,
    /// A trace event (unsolicited, while the client follows the trace).
    Event,
    /// The turn ended with an answer.
    Done,
    /// The request failed (or the turn was cancelled: code `cancelled`).
    Error,
    /// The turn ended and its file edits could not be applied; nothing was written.
    DiffError,
    /// Any other reply (`ok`, `chat_list`, …) or a type this build does not know.
    #[serde(other)]
    Other,
}

impl MessageKind {
    /// The kind of a message object (`Other` when it has no known `type`).
    pub fn of(msg: &Value) -> MessageKind {
        msg.get("type")
            .and_then(|t| MessageKind::deserialize(t).ok())
            .unwrap_or(MessageKind::Other)
    }

    /// Whether this message ends the stream of a `send`: `done`, `error` or
    /// `diff_error`. Everything else is an event within it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            MessageKind::Done | MessageKind::Error | MessageKind::DiffError
        )
    }
}

/// One outgoing message object, already encoded, without its `request_id`. Replies
/// are encoded straight from the state they borrow ([`replies::Reply`]), with no
/// intermediate `Value`; [`Encoded::into_line`] adds the id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded(String);

impl Encoded {
    /// Encodes a message. Errors (`io`): the value is not a JSON object, or a field
    /// cannot be encoded (map keys that are not strings); the reply types rule both out.
    pub fn encode(msg: &impl serde::Serialize) -> Result<Encoded> {
        let text = serde_json::to_string(msg)
            .map_err(|e| Error::new(ErrorCode::Io, format!("Cannot encode the reply: {e}")))?;
        if !(text.starts_with('{') && text.ends_with('}')) {
            return Err(Error::new(
                ErrorCode::Internal,
                "Cannot encode the reply: not a JSON object",
            ));
        }
        Ok(Encoded(text))
    }

    /// The encoded object.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The message line (without the newline), with `request_id` set when given.
    pub fn into_line(self, request_id: Option<&str>) -> String {
        let Some(id) = request_id else {
            return self.0;
        };
        let mut line = self.0;
        line.pop();
        if line.len() > 1 {
            line.push(',');
        }
        line.push_str("\"request_id\":");
        // A string always encodes.
        line.push_str(&serde_json::to_string(id).unwrap_or_else(|_| "null".into()));
        line.push('}');
        line
    }
}

/// `{"type":"ok"}`: success without data.
pub fn ok() -> Encoded {
    Encoded(r#"{"type":"ok"}"#.to_owned())
}

/// Builds an `error` message from an [`Error`] (docs/PROTOCOL.md "Conventions").
pub fn error_message(err: &Error) -> Encoded {
    #[derive(serde::Serialize)]
    struct ErrorMessage<'a> {
        r#type: &'static str,
        message: &'a str,
        code: ErrorCode,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<&'a crate::error::ErrorData>,
    }
    Encoded::encode(&ErrorMessage {
        r#type: "error",
        message: &err.message,
        code: err.code,
        data: err.data.as_deref(),
    })
    .unwrap_or_else(|_| Encoded(r#"{"type":"error","message":"error","code":"internal"}"#.into()))
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn the_request_id_is_added_to_any_object() {
        assert_eq!(ok().into_line(None), r#"{"type":"ok"}"#);
        assert_eq!(
            ok().into_line(Some("7\"")),
            r#"{"type":"ok","request_id":"7\""}"#
        );
        let empty = Encoded::encode(&serde_json::json!({})).unwrap();
        assert_eq!(empty.into_line(Some("1")), r#"{"request_id":"1"}"#);
        assert!(Encoded::encode(&3).is_err());
    }
}
