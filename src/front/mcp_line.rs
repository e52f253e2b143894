//! The prompt command line both fronts read: `/mcp:SERVER:PROMPT name=value …` in
//! `bb7 chat` and in an ACP prompt's typed text (docs/PROTOCOL.md, MCP).

use std::collections::BTreeMap;

/// A prompt command line, `/mcp:SERVER:PROMPT name=value name="two words" …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptLine {
    /// The server's name.
    pub server: String,
    /// The prompt's name.
    pub name: String,
    /// The arguments, name → value (a value in double quotes may hold blanks).
    pub arguments: BTreeMap<String, String>,
}

/// Reads a prompt command line. `None`: the text does not start with
/// `/mcp:SERVER:PROMPT`. Errors: a word after it that is not `name=value`, or an
/// unclosed quote.
pub fn parse_prompt_line(text: &str) -> Option<Result<PromptLine, String>> {
    let rest = text.trim().strip_prefix("/mcp:")?;
    let (head, mut args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (server, name) = head.split_once(':')?;
    if server.is_empty() || name.is_empty() {
        return None;
    }
    let mut arguments = BTreeMap::new();
    loop {
        args = args.trim_start();
        if args.is_empty() {
            break;
        }
        let Some((key, after)) = args.split_once('=') else {
            return Some(Err(format!("{args}: prompt arguments are name=value")));
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Some(Err(format!("{key}: prompt arguments are name=value")));
        }
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => match quoted.split_once('"') {
                Some((v, next)) => (v, next),
                None => return Some(Err(format!("{key}: the quote is not closed"))),
            },
            None => after.split_once(char::is_whitespace).unwrap_or((after, "")),
        };
        arguments.insert(key.to_owned(), value.to_owned());
        args = next;
    }
    Some(Ok(PromptLine {
        server: server.to_owned(),
        name: name.to_owned(),
        arguments,
    }))
}
