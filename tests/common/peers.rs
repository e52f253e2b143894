//! Reading what a process holding a chat (or one viewing it read-only) is told of
//! turns that other processes run on it: `peer_change` notes and the turn's messages
//! under its `peer:` request id (docs/PROTOCOL.md, "One chat, many front-ends").

use serde_json::Value;

use super::Bb7;

/// Messages of `b` until one satisfies `stop` (that one included); the stream ending
/// first (the harness's hang guard, `super::TIMEOUT`, or bb7 gone) fails the test.
pub fn until(b: &mut Bb7, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    while let Some(m) = b.recv() {
        let end = stop(&m);
        seen.push(m);
        if end {
            return seen;
        }
    }
    panic!("the stream ended first: {seen:?}");
}

/// The `content` of the messages of type `kind` (`chunk`, `thinking`) for request
/// `rid` among `seen`, joined in order.
pub fn joined(seen: &[Value], rid: &str, kind: &str) -> String {
    seen.iter()
        .filter(|m| m["request_id"] == rid && m["type"] == kind)
        .filter_map(|m| m["content"].as_str())
        .collect()
}
