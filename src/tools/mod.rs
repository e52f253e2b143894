//! The model's tools, as offered in a chat request and as read back from its tool
//! calls (docs/PROTOCOL.md, "The model's file tools" and "approved retrieval tools"):
//!
//! - [`mod@file`]: `write_file` and `edit_file`, whose schema the config's `diff_mode`
//!   selects ([`DiffMode`]), and the reading of their arguments with the variants
//!   models send. The edit engine ([`crate::edit`]) plans and applies the calls.
//! - [`retrieval`]: the read-only `list_files`, `search_project`, `read_file` and
//!   `clarify_user`, offered when the chat's `tools` setting ([`ToolsMode`]) is not
//!   `off`.

mod call;
pub mod file;
pub mod reads;
pub mod retrieval;

use serde_json::Value;

pub use call::ToolCall;
pub use file::DiffMode;
pub use retrieval::{ToolsMode, is_retrieval};

/// The `tools` array a turn sends: the file tools in the schema of `diff_mode`, and the
/// retrieval tools unless `tools_mode` is `off` (their descriptions name `limits`).
pub fn definitions(
    diff_mode: DiffMode,
    tools_mode: ToolsMode,
    limits: &retrieval::Limits,
) -> Vec<Value> {
    let mut tools = file::definitions(diff_mode);
    if tools_mode != ToolsMode::Off {
        tools.extend(retrieval::definitions(limits));
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tools: &[Value]) -> Vec<&str> {
        tools
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect()
    }

    /// What a turn offers for each setting, and every offered retrieval tool is one the
    /// turn runs as such.
    #[test]
    fn a_turn_offers_the_tools_of_its_settings() {
        let limits = retrieval::Limits::default();
        let off = definitions(DiffMode::Off, ToolsMode::Off, &limits);
        assert_eq!(names(&off), ["write_file"]);
        let plain = definitions(DiffMode::Anchored, ToolsMode::Off, &limits);
        assert_eq!(names(&plain), ["write_file", "edit_file"]);
        let reads = retrieval::definitions(&limits);
        let all = definitions(DiffMode::SearchReplaceMulti, ToolsMode::Ask, &limits);
        assert_eq!(
            names(&all),
            [&names(&plain)[..], &names(&reads)[..]].concat()
        );
        for name in names(&reads) {
            assert!(is_retrieval(name), "{name}");
            let call = retrieval::RetrievalCall::parse(name, &serde_json::json!({}));
            assert!(call.is_some(), "{name}");
        }
        assert!(!is_retrieval("write_file") && !is_retrieval("edit_file"));
    }
}
