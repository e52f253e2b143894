//! Keys of `config.json` that bb7 does not know: a misspelled key (`defualt_model`)
//! is otherwise ignored without a word. The known keys are read from [`Config`]'s own
//! deserializer, so they follow the struct as fields are added. `init` sends the
//! warnings to the editor (`config_warnings`, docs/PROTOCOL.md) and the command line
//! prints them.

use std::path::Path;

use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;

use crate::config::Config;

/// One line per unknown top-level key of `dir/config.json`, naming the file and the
/// key it most likely misspells: `…/config.json: unknown key defualt_model is
/// ignored; did you mean default_model?`. Empty when the file is missing or is not a
/// JSON object (a file that does not parse is [`Config::load`]'s error).
pub fn warnings(dir: &Path) -> Vec<String> {
    let path = dir.join("config.json");
    let Some(config) =
        crate::project::fsutil::read_regular_capped(&path, crate::project::state_file::SMALL_CAP)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return Vec::new();
    };
    unknown_keys(&config)
        .into_iter()
        .map(|(key, guess)| {
            let hint = guess
                .map(|g| format!("; did you mean {g}?"))
                .unwrap_or_default();
            format!("{}: unknown key {key} is ignored{hint}", path.display())
        })
        .collect()
}

/// Every key `config.json` may hold.
pub fn known_keys() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = <Config as de::Deserialize>::deserialize(FieldNames(&mut fields));
    fields
}

/// The top-level keys of `config` that bb7 does not know, each with the known key it
/// most likely misspells. Empty when `config` is not an object.
pub fn unknown_keys(config: &Value) -> Vec<(String, Option<&'static str>)> {
    let Value::Object(map) = config else {
        return Vec::new();
    };
    let known = known_keys();
    map.keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| (k.clone(), closest(k, known.iter().copied())))
        .collect()
}

/// The candidate closest to `typed`, when close enough to be a typo (Jaro-Winkler
/// similarity above 0.8).
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|k| (strsim::jaro_winkler(typed, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// A deserializer that only records the field names a derived struct asks for.
struct FieldNames<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only a struct's field names are read"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("only a struct's field names are read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelled_key_is_named_with_its_likely_meaning() {
        assert!(known_keys().contains(&"default_model"));
        let got = unknown_keys(&serde_json::json!({"defualt_model": "x", "api_key": "k"}));
        assert_eq!(
            got,
            vec![("defualt_model".to_owned(), Some("default_model"))]
        );
        assert_eq!(
            unknown_keys(&serde_json::json!({"zzz": 1})),
            vec![("zzz".to_owned(), None)]
        );
    }
}
