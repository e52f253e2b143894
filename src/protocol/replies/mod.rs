//! Replies to requests, one type per reply shape: each serializes to the JSON object
//! docs/PROTOCOL.md gives for its action, tagged by `type` (several share `ok`, the
//! reference's success, and differ in their fields), and deserializes back, so the
//! command line and the tests read the server's own types. The action table
//! (`protocol::action`) names each action's reply type.
//!
//! Large fields are `Cow`s: the server borrows them from its state, so building a reply
//! copies nothing; a reader gets owned values (`Reply<'static>`).

/// Declares that each listed type is a reply encoded as it is.
macro_rules! replies {
    ($($t:ty),* $(,)?) => {
        $(impl $crate::protocol::replies::Answer for $t {
            fn answer(self) -> $crate::error::Result<Option<$crate::protocol::Encoded>> {
                $crate::protocol::Encoded::encode(&self).map(Some)
            }
        })*
    };
}

mod chats;
mod files;
mod review;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub use chats::*;
pub use files::*;
pub use review::*;

use super::Encoded;
use crate::error::Result;

/// What a handler answers with, turned into the message the writer sends: a reply
/// now, or nothing yet when background work answers later (a `send` stream, a model
/// list being fetched).
pub trait Answer {
    /// The encoded reply, or `None` when it comes later. Errors: a field that cannot
    /// be encoded, which the reply types rule out.
    fn answer(self) -> Result<Option<Encoded>>;
}

/// No reply now: background work sends it (with the request's id) when it is done.
#[derive(Debug)]
pub struct Deferred;

impl Answer for Deferred {
    fn answer(self) -> Result<Option<Encoded>> {
        Ok(None)
    }
}

/// A reply now, or later from background work (`get_models` with a stale cache).
#[derive(Debug)]
pub enum NowOrLater<T> {
    /// Answer with this now.
    Now(T),
    /// Background work answers.
    Later,
}

impl<T: Answer> Answer for NowOrLater<T> {
    fn answer(self) -> Result<Option<Encoded>> {
        match self {
            NowOrLater::Now(reply) => reply.answer(),
            NowOrLater::Later => Ok(None),
        }
    }
}

/// `{"type":"ok"}`: success without data.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename = "ok")]
pub struct Ack {}

impl Answer for Ack {
    fn answer(self) -> Result<Option<Encoded>> {
        Ok(Some(super::ok()))
    }
}

/// `version`: the crate version.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename = "version")]
pub struct Version<'a> {
    /// e.g. `0.1.0`.
    pub version: Cow<'a, str>,
}

/// `init`: the session is open.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename = "ok")]
pub struct Opened<'a> {
    /// No project: only global chats.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global_only: bool,
    /// The configured default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<Cow<'a, str>>,
    /// Why the config file could not be read, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<Cow<'a, str>>,
}

/// `get_customization_info`: which instruction files exist and are usable.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename = "customization_info")]
pub struct CustomizationInfo<'a> {
    /// `~/.config/bb7/system.md` replaces the system prompt.
    pub system_override: bool,
    /// `~/.config/bb7/instructions.md` exists.
    pub global_instructions: bool,
    /// `.bb7/instructions` exists and is valid.
    pub project_instructions: bool,
    /// Why the project file cannot be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_instructions_error: Option<Cow<'a, str>>,
}

/// `prepare_instructions`: the instruction file, absolute (created if it was missing).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename = "instructions_path")]
pub struct InstructionsPath<'a> {
    /// Absolute path.
    pub path: Cow<'a, std::path::Path>,
}

/// `get_models`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename = "models")]
pub struct Models<'a> {
    /// OpenRouter's model objects, their fields as sent.
    pub models: Cow<'a, [crate::llm::models::ModelInfo]>,
    /// Served from an expired cache because the API could not be reached.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// `get_balance`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename = "balance")]
pub struct Balance {
    /// Credits bought, USD.
    pub total_credits: f64,
    /// Credits used, USD.
    pub total_usage: f64,
}

/// `estimate_text_tokens`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename = "text_token_estimate")]
pub struct TextTokenEstimate<'a> {
    /// One count per text.
    pub tokens: Cow<'a, [usize]>,
}

replies!(
    Version<'_>,
    Opened<'_>,
    CustomizationInfo<'_>,
    InstructionsPath<'_>,
    Models<'_>,
    Balance,
    TextTokenEstimate<'_>,
);
