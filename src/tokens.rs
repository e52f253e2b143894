//! Token estimates with the `cl100k_base` tokenizer. The tokenizer is loaded on first use (it costs tens of
//! milliseconds), and counts of whole files are cached by file id, so repeated
//! estimates over unchanged files cost a map lookup.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Texts longer than this are counted on their first this many bytes and scaled:
/// tokenizing megabytes exactly takes seconds, and a request must not stall on it.
pub const EXACT_LIMIT: usize = 256 * 1024;

/// Tokens in `text` under `cl100k_base`; for a text over [`EXACT_LIMIT`] bytes, the
/// count of its first [`EXACT_LIMIT`] bytes scaled by length.
pub fn count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let bpe = tiktoken_rs::cl100k_base_singleton();
    if text.len() <= EXACT_LIMIT {
        return bpe.encode_ordinary(text).len();
    }
    let mut cut = EXACT_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = bpe.encode_ordinary(&text[..cut]).len();
    (head as u128 * text.len() as u128).div_ceil(cut as u128) as usize
}

/// Like [`count`], cached under `file_id` (which changes whenever the content does).
pub fn count_cached(file_id: &str, text: &str) -> usize {
    static CACHE: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(map) = cache.lock()
        && let Some(&n) = map.get(file_id)
    {
        return n;
    }
    let n = count(text);
    if let Ok(mut map) = cache.lock() {
        map.insert(file_id.to_owned(), n);
    }
    n
}

/// Like [`count`], remembered under the text's sha256 for the life of the process, for
/// texts that are re-counted on every estimate but rarely change (system prompt,
/// instructions, history).
pub fn count_memo(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let key = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()));
    count_cached(&key, text)
}
