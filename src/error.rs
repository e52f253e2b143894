//! Errors as values: every failure a request can meet becomes an [`Error`] with a
//! machine-readable code and a message written for the user.

use std::fmt;

/// The machine-readable category of an [`Error`], sent as the `code` field of an
/// `error` line (docs/PROTOCOL.md, "Conventions"). Clients branch on it, never on the
/// message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No `init` yet, or the directory has no `.bb7/`.
    NotInitialized,
    /// The action needs an active chat and none is selected.
    NoActiveChat,
    /// What the request names does not exist.
    NotFound,
    /// A malformed request: missing or mistyped field, impossible value.
    InvalidRequest,
    /// The disk changed under an apply, or a merge found overlapping edits.
    Conflict,
    /// Another process holds the chat's lock.
    Locked,
    /// A path leaves the project (or names a protected directory).
    PathEscape,
    /// The chat is streaming a turn already.
    Busy,
    /// The model API failed.
    Api,
    /// The user cancelled the turn.
    Cancelled,
    /// An unexpected file-system failure.
    Io,
    /// A bug in bb7 while handling the request (it keeps serving).
    Internal,
}

impl ErrorCode {
    /// The wire spelling, e.g. `path_escape`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotInitialized => "not_initialized",
            ErrorCode::NoActiveChat => "no_active_chat",
            ErrorCode::NotFound => "not_found",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Locked => "locked",
            ErrorCode::PathEscape => "path_escape",
            ErrorCode::Busy => "busy",
            ErrorCode::Api => "api",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Io => "io",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure that is reported to the client as an `error` line: a [`ErrorCode`] and a
/// message written for the user, shown as it is, so it never contains secrets, and
/// for the errors a client acts on, the facts it needs in [`ErrorData`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Machine-readable category.
    pub code: ErrorCode,
    /// Human-readable text, e.g. `Chat not found`.
    pub message: String,
    /// Facts a client branches on (sent as the message's `data`), if any.
    pub data: Option<Box<ErrorData>>,
}

/// Facts about an error that a client acts on, sent as the `error` message's `data`
/// object (docs/PROTOCOL.md, "Conventions"), so no client reads the message text.
/// Fields that do not apply are left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorData {
    /// The project-relative file an apply could not merge (`conflict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The disk file's lines that both the user and the model changed (`conflict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<LineRange>,
    /// The process holding the chat (`locked`), when its lock file names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_pid: Option<u32>,
}

/// Lines of the disk file, 1-based and inclusive: `{"start_line","end_line"}`. An
/// empty range (`end_line < start_line`) marks a point between lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LineRange {
    /// First line.
    pub start_line: usize,
    /// Last line.
    pub end_line: usize,
}

/// Shorthand for results whose error is an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with an explicit code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` for the client.
    pub fn with_data(mut self, data: ErrorData) -> Self {
        self.data = Some(Box::new(data));
        self
    }

    /// A malformed request: bad field, bad value, impossible operation.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// Something the request names does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// A path resolves outside the place it is allowed to be.
    pub fn path_escape(path: &str) -> Self {
        Self::new(
            ErrorCode::PathEscape,
            format!("Path is outside the project: {path}"),
        )
    }

    /// No project or global session has been set up with `init` yet.
    pub fn not_initialized() -> Self {
        Self::new(
            ErrorCode::NotInitialized,
            "Not initialized: send init with project_root first",
        )
    }

    /// The action needs an active chat and none is selected (reference text).
    pub fn no_active_chat() -> Self {
        Self::new(ErrorCode::NoActiveChat, "No active chat")
    }

    /// The named chat does not exist (reference text).
    pub fn chat_not_found() -> Self {
        Self::not_found("Chat not found")
    }

    /// A file-system failure, with what bb7 was doing when it happened.
    pub fn io(doing: impl fmt::Display, err: std::io::Error) -> Self {
        Self::new(ErrorCode::Io, format!("{doing}: {err}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
