//! The request id of a line bb7 cannot parse whole: one over [`super::MAX_LINE_BYTES`]
//! (only its start is kept) or one that is not valid JSON further on. Every error then
//! carries the id the line began with, so no front-end waits for an answer that never
//! comes (docs/PROTOCOL.md, "Conventions").
//!
//! The scan reads the object's top-level members in order, from the line's start,
//! until it meets `request_id`: a member it cannot read whole (a value cut off at the
//! end of the kept start, bad JSON) ends the scan without an id. bb7's own front-ends
//! write `request_id` first for this reason.

use serde_json::Value;

/// How many bytes of an over-long line are kept to read its request id from.
pub const HEAD_BYTES: usize = 64 * 1024;

/// The request id (a string, or a number as its text) that `line` names among the
/// top-level members read in order from its start, before anything unreadable.
pub fn request_id_at_start(line: &[u8]) -> Option<String> {
    match member_at_start(line, "request_id")? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The value of top-level member `name` of the object `line` starts, read in order
/// from its start before anything unreadable (a JSON-RPC message's `id` or `method`).
pub fn member_at_start(line: &[u8], name: &str) -> Option<Value> {
    let mut i = ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = ws(line, i);
        let key_end = string_end(line, i)?;
        let key = &line[i..key_end];
        i = ws(line, key_end);
        if line.get(i) != Some(&b':') {
            return None;
        }
        i = ws(line, i + 1);
        let end = value_end(line, i)?;
        if serde_json::from_slice::<String>(key).is_ok_and(|k| k == name) {
            return serde_json::from_slice::<Value>(&line[i..end]).ok();
        }
        i = ws(line, end);
        if line.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

/// The first index at or after `i` that is not JSON whitespace.
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index just after the JSON string that starts at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// The index just after the JSON value that starts at `i` (its syntax is checked only
/// as far as finding its end; the id's own value is parsed by serde_json).
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(c) = b.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    return (j > i).then_some(j);
                }
                j += 1;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::request_id_at_start as id;

    #[test]
    fn reads_the_id_before_anything_unreadable() {
        assert_eq!(id(br#"{"request_id":"a1","action":"x""#), Some("a1".into()));
        assert_eq!(
            id(br#" { "action" : "x", "n":[1,{"a":"}"}], "request_id" : 42 , "#),
            Some("42".into())
        );
        assert_eq!(id(br#"{"action":"x","content":"cut off here"#), None);
        assert_eq!(id(br#"{"a":{"request_id":"inner"}, "b""#), None);
        assert_eq!(
            id(br#"{"t":"\"request_id\":\"no\"","request_id":"r\"2"}"#),
            Some("r\"2".into())
        );
        assert_eq!(id(b"[1,2]"), None);
        assert_eq!(id(br#"{"request_id":null}"#), None);
        let rpc = br#"{"jsonrpc":"2.0","id":7,"result":{"content":"cut"#;
        assert_eq!(super::member_at_start(rpc, "id"), Some(7.into()));
        assert_eq!(super::member_at_start(rpc, "method"), None);
    }
}
