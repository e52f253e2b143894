//! `init`'s reply: [`Opened`] and the warnings about `config.json` that do not stop bb7
//! (docs/PROTOCOL.md, `init`). The warnings are an extension that is absent when there
//! are none, so the reference plugin reads the reply as before.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::Encoded;
use super::replies::{Answer, Opened};
use crate::error::Result;

/// `{"type":"ok","global_only"?,"default_model"?,"config_error"?,"config_warnings"?}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct InitReply<'a> {
    /// The session as opened.
    #[serde(flatten)]
    pub opened: Opened<'a>,
    /// One line per problem of `config.json` that bb7 works around, e.g. an unknown
    /// key with the key it likely misspells (`config::keys::warnings`); absent when
    /// empty.
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    pub config_warnings: Cow<'a, [String]>,
}

impl Answer for InitReply<'_> {
    fn answer(self) -> Result<Option<Encoded>> {
        Encoded::encode(&self).map(Some)
    }
}
