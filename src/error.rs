//! Errors as values: every failure a request can meet becomes an [`Error`] with a
//! machine-readable code and a message written for the user.

use std::fmt;

/// A failure that is reported to the client as an `error` line.
///
/// `code` is one of the codes of PROTOCOL.md ("Conventions"): `not_initialized`,
/// `no_active_chat`, `not_found`, `invalid_request`, `conflict`, `locked`,
/// `path_escape`, `busy`, `api`, `cancelled`, or `io` for an unexpected file-system
/// failure. `message` is shown to the user as it is, so it never contains secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Machine-readable category (see above).
    pub code: &'static str,
    /// Human-readable text, e.g. `Chat not found`.
    pub message: String,
}

/// Shorthand for results whose error is an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with an explicit code.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    /// A malformed request: bad field, bad value, impossible operation.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid_request", message)
    }

    /// Something the request names does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new("not_found", message)
    }

    /// A path resolves outside the place it is allowed to be.
    pub fn path_escape(path: &str) -> Self {
        Self::new(
            "path_escape",
            format!("Path is outside the project: {path}"),
        )
    }

    /// No project or global session has been set up with `init` yet.
    pub fn not_initialized() -> Self {
        Self::new(
            "not_initialized",
            "Not initialized: send init with project_root first",
        )
    }

    /// The action needs an active chat and none is selected (reference text).
    pub fn no_active_chat() -> Self {
        Self::new("no_active_chat", "No active chat")
    }

    /// The named chat does not exist (reference text).
    pub fn chat_not_found() -> Self {
        Self::not_found("Chat not found")
    }

    /// A file-system failure, with what bb7 was doing when it happened.
    pub fn io(doing: impl fmt::Display, err: std::io::Error) -> Self {
        Self::new("io", format!("{doing}: {err}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
