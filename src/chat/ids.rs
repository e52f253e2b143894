//! Identifiers and times (docs/PROTOCOL.md, "Facts about the reference implementation").

use sha2::{Digest, Sha256};

/// File id of a whole file: the first 8 hex characters of sha256(path + NUL + content),
/// the `version` of a context file (docs/PROTOCOL.md).
pub fn file_version(path: &str, content: &str) -> String {
    short_hash(&[path.as_bytes(), b"\0", content.as_bytes()], 8)
}

/// File id of a section: the first 8 hex of sha256("path:start:end" + NUL + content).
pub fn section_version(path: &str, start: u64, end: u64, content: &str) -> String {
    let key = format!("{path}:{start}:{end}");
    short_hash(&[key.as_bytes(), b"\0", content.as_bytes()], 8)
}

/// Name of a section's snapshot file under `context/_sections/`: 16 hex of
/// sha256("path:start:end"), so each range of each path has one immutable file.
pub fn section_key(path: &str, start: u64, end: u64) -> String {
    short_hash(&[format!("{path}:{start}:{end}").as_bytes()], 16)
}

/// The first `len` hex characters of sha256(`bytes`).
pub fn short_sha256(bytes: &[u8], len: usize) -> String {
    short_hash(&[bytes], len)
}

/// `sha256:<64 hex>` of bytes, the form used for disk hashes.
pub fn sha256_tagged(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn short_hash(pieces: &[&[u8]], len: usize) -> String {
    let mut h = Sha256::new();
    for p in pieces {
        h.update(p);
    }
    let mut s = hex::encode(h.finalize());
    s.truncate(len);
    s
}

/// A new chat id: 10 random hex characters (the reference's shape).
pub fn new_chat_id() -> String {
    let mut buf = [0u8; 5];
    if getrandom::fill(&mut buf).is_err() {
        // No OS randomness: fall back to time and PID; callers check for collisions.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let seed = format!("{nanos}:{}", std::process::id());
        return short_hash(&[seed.as_bytes()], 10);
    }
    hex::encode(buf)
}

/// Now as RFC 3339 UTC with second precision, e.g. `2025-01-19T22:00:00Z`.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The default chat name, `Chat YYYY-MM-DD HH:MM` in UTC.
pub fn default_chat_name() -> String {
    chrono::Utc::now().format("Chat %Y-%m-%d %H:%M").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_depend_on_path_and_content() {
        let a = file_version("a.rs", "x");
        assert_eq!(a.len(), 8);
        assert_ne!(a, file_version("b.rs", "x"));
        assert_ne!(a, file_version("a.rs", "y"));
        assert_ne!(
            section_version("a.rs", 1, 2, "x"),
            section_version("a.rs", 1, 3, "x")
        );
        assert_eq!(new_chat_id().len(), 10);
    }
}
