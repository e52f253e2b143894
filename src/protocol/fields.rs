//! Field types shared by the request parameter structs: each checks its value while
//! deserializing, so a handler gets data it can use as it is, and a bad value becomes
//! an `invalid_request` error naming the field (docs/PROTOCOL.md, "Conventions").

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

/// A string that must not be empty (paths, ids).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NonEmpty(pub String);

impl NonEmpty {
    /// The string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for NonEmpty {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("must not be empty"));
        }
        Ok(NonEmpty(s))
    }
}

/// A non-negative integer; JSON numbers like `3.0` count as `3` (some clients only
/// have floats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Uint(pub u64);

struct UintVisitor;

impl Visitor<'_> for UintVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative integer")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
            Ok(v as u64)
        } else {
            Err(E::invalid_value(de::Unexpected::Float(v), &self))
        }
    }
}

impl<'de> Deserialize<'de> for Uint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UintVisitor).map(Uint)
    }
}

/// A 1-based line number (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct LineNumber(pub u64);

impl<'de> Deserialize<'de> for LineNumber {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Uint::deserialize(d)?.0 {
            0 => Err(de::Error::custom("must be a line number of at least 1")),
            n => Ok(LineNumber(n)),
        }
    }
}

/// A request id as the client wrote it: a string, or a number normalised to its decimal
/// text (`42` becomes `"42"`), as every reply echoes it (docs/PROTOCOL.md).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct RequestId(pub String);

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(RequestId(s)),
            serde_json::Value::Number(n) => Ok(RequestId(n.to_string())),
            _ => Err(de::Error::custom("must be a string or a number")),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Hunks a review decision names: `"all"`, or a list of hunk ids (absent = none).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HunkSelection {
    /// Every pending hunk of the file.
    All,
    /// These hunk ids.
    Ids(Vec<String>),
    /// None (the field was absent or `null`).
    #[default]
    None,
}

impl HunkSelection {
    /// Whether no hunk is named (the field is left out when sending).
    pub fn is_none(&self) -> bool {
        matches!(self, HunkSelection::None)
    }
}

impl Serialize for HunkSelection {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            HunkSelection::All => s.serialize_str("all"),
            HunkSelection::Ids(ids) => ids.serialize(s),
            HunkSelection::None => s.serialize_none(),
        }
    }
}

impl<'de> Deserialize<'de> for HunkSelection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Null => Ok(HunkSelection::None),
            serde_json::Value::String(s) if s == "all" => Ok(HunkSelection::All),
            serde_json::Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    serde_json::Value::String(s) => Some(s),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .map(HunkSelection::Ids)
                .ok_or_else(|| de::Error::custom("must be \"all\" or a list of hunk ids")),
            _ => Err(de::Error::custom("must be \"all\" or a list of hunk ids")),
        }
    }
}
