//! Replies to requests, one type per reply shape: each serializes to the JSON object
//! docs/PROTOCOL.md gives for its action, tagged by `type` (several share `ok`, the
//! reference's success, and differ in their fields), and deserializes back, so the
//! command line and the tests read the server's own types. The action table
//! (`protocol::action`) names each action's reply type.
//!
//! Large fields are `Cow`s: the server borrows them from its state, so building a reply
//! copies nothing; a reader gets owned values (`Reply<'static>`).

/// Declares reply types: each gets the derives every reply has, is tagged by `type`
/// with the given wire name, and answers with itself encoded. Written as
/// `/// doc` `Name<'a> = "tag" { fields }`; extra attributes (a `derive(Default)`)
/// go above the name.
macro_rules! reply_types {
    ($(
        $(#[$attr:meta])*
        $name:ident $(<$lt:lifetime>)? = $tag:literal { $($fields:tt)* }
    )*) => {$(
        $(#[$attr])*
        #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "type", rename = $tag)]
        pub struct $name $(<$lt>)? { $($fields)* }

        impl $(<$lt>)? $crate::protocol::replies::Answer for $name $(<$lt>)? {
            fn answer(self) -> $crate::error::Result<Option<$crate::protocol::Encoded>> {
                $crate::protocol::Encoded::encode(&self).map(Some)
            }
        }
    )*};
}

mod chats;
mod files;
mod mcp;
mod queue;
mod review;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub use chats::*;
pub use files::*;
pub use mcp::*;
pub use queue::*;
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

reply_types! {
    /// `version`: the crate version.
    Version<'a> = "version" {
        /// e.g. `0.1.0`.
        pub version: Cow<'a, str>,
    }

    /// `init`: the session is open.
    #[derive(Default)]
    Opened<'a> = "ok" {
        /// No project: only global chats.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub global_only: bool,
        /// The configured default model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub default_model: Option<Cow<'a, str>>,
        /// Why the config file could not be read, if it could not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub config_error: Option<Cow<'a, str>>,
        /// One line per problem of `config.json` that bb7 works around, e.g. an unknown
        /// key with the key it likely misspells (`config::keys::warnings`); absent when
        /// empty, so the reference plugin reads the reply as before.
        #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
        pub config_warnings: Cow<'a, [String]>,
    }

    /// `get_customization_info`: which instruction files exist and are usable.
    CustomizationInfo<'a> = "customization_info" {
        /// `~/.config/bb7/system.md` replaces the system prompt.
        pub system_override: bool,
        /// `~/.config/bb7/instructions.md` exists.
        pub global_instructions: bool,
        /// `.bb7/instructions` exists and is valid.
        pub project_instructions: bool,
        /// Why the project file cannot be used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub project_instructions_error: Option<Cow<'a, str>>,
        /// The project's rules files included as instructions (`AGENTS.md`, …), as
        /// configured (`rules_files`, `rules_mode`), in the order they are included.
        #[serde(default)]
        pub rules_files: Vec<String>,
        /// Lines of the instructions and rules files bb7 sends that hold invisible
        /// characters (docs/PROTOCOL.md "Extension: invisible characters").
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub invisible_warnings: Vec<crate::text::invisible::InvisibleWarning>,
    }

    /// `prepare_instructions`: the instruction file, absolute (created if it was missing).
    InstructionsPath<'a> = "instructions_path" {
        /// Absolute path.
        pub path: Cow<'a, std::path::Path>,
    }

    /// `get_models`.
    Models<'a> = "models" {
        /// OpenRouter's model objects, their fields as sent.
        pub models: Cow<'a, [crate::llm::models::ModelInfo]>,
        /// Served from an expired cache because the API could not be reached.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub stale: bool,
    }

    /// `get_balance`.
    Balance = "balance" {
        /// Credits bought, USD.
        pub total_credits: f64,
        /// Credits used, USD.
        pub total_usage: f64,
    }

    /// `events_get`: one page of a chat's event trace (`chat::events`).
    EventsPage<'a> = "events" {
        /// The chat.
        pub chat_id: Cow<'a, str>,
        /// Events with `seq` above the cursor, oldest first, at most 1000.
        pub events: Vec<crate::chat::events::Event>,
        /// The cursor to ask with next (`after`): the last event's `seq`, or the cursor
        /// given when there was none.
        pub next_cursor: u64,
        /// More events follow this page.
        pub more: bool,
    }

    /// `estimate_text_tokens`.
    TextTokenEstimate<'a> = "text_token_estimate" {
        /// One count per text.
        pub tokens: Cow<'a, [usize]>,
    }
}
