//! Token estimates with the `cl100k_base` tokenizer. The tokenizer is loaded on first
//! use (it costs tens of milliseconds), and counts of whole files are cached by file id,
//! so repeated estimates over unchanged files cost a map lookup.
//!
//! Only counts are needed, never token ids or decoding, so the ranks are kept in three
//! flat arrays (about 2 MB: the token bytes back to back, each rank's span, and a hash
//! table of ranks) instead of the `tiktoken-rs` tokenizer (about 25 MB with its
//! decoder, sorted token list and 128 copies of its pre-split regex), which is built
//! once to read the ranks out and then dropped. The text is pre-split by hand in one
//! pass (`split.rs`, held to the tokenizer's own pattern by its tests; about seven
//! times faster than the regex, `cargo bench --bench tokens`), and the merges follow
//! `tiktoken`'s byte-pair encoding, so the counts are the same (`counts_match_tiktoken`
//! below), except for a single pre-split piece over 4 KiB (a run of letters or CJK
//! text without spaces), which is merged in 4 KiB slices and may count a few tokens
//! more per slice boundary.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The context gauge (tokens of the next request against the model's window).
pub mod gauge;
mod split;

/// Texts longer than this are counted on their first this many bytes and scaled:
/// tokenizing megabytes exactly takes seconds, and a request must not stall on it.
pub const EXACT_LIMIT: usize = 256 * 1024;

/// The pre-split pattern of `cl100k_base`: every match is encoded on its own. Counts
/// split by hand (`split.rs`), which the tests hold to this pattern.
#[cfg(test)]
const PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

/// Pieces longer than this are merged in slices of this size: the merge is quadratic
/// in a piece's length, and a long run of punctuation is one piece.
const MAX_PIECE: usize = 4096;

/// No merge: the sentinel rank of a pair that is not a token.
const NONE: u32 = u32::MAX;

/// The ordinary tokens of `cl100k_base` (special tokens are never counted).
const ORDINARY_TOKENS: u32 = 100_256;

/// The ordinary tokens, found by their bytes.
struct Ranks {
    /// Every token's bytes, back to back, in rank order.
    bytes: Vec<u8>,
    /// Where each rank's bytes lie in `bytes`.
    spans: Vec<(u32, u32)>,
    /// Ranks, hashed by their bytes.
    table: hashbrown::HashTable<u32>,
}

fn hash(bytes: &[u8]) -> u64 {
    std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, bytes)
}

impl Ranks {
    /// Reads the ranks out of the full tokenizer, which the caller then drops.
    fn of(full: &tiktoken_rs::CoreBPE) -> Ranks {
        let mut bytes = Vec::with_capacity(1 << 20);
        let mut spans = Vec::with_capacity(ORDINARY_TOKENS as usize);
        for rank in 0..ORDINARY_TOKENS {
            let start = bytes.len() as u32;
            if let Ok(token) = full.decode_bytes(&[rank]) {
                bytes.extend_from_slice(&token);
            }
            spans.push((start, bytes.len() as u32));
        }
        bytes.shrink_to_fit();
        let token = |r: u32| {
            let (s, e) = spans[r as usize];
            &bytes[s as usize..e as usize]
        };
        let mut table = hashbrown::HashTable::with_capacity(spans.len());
        for rank in 0..ORDINARY_TOKENS {
            if !token(rank).is_empty() {
                table.insert_unique(hash(token(rank)), rank, |&r| hash(token(r)));
            }
        }
        Ranks {
            bytes,
            spans,
            table,
        }
    }

    fn get(&self, piece: &[u8]) -> Option<u32> {
        self.table
            .find(hash(piece), |&r| {
                let (s, e) = self.spans[r as usize];
                &self.bytes[s as usize..e as usize] == piece
            })
            .copied()
    }
}

struct Tokenizer {
    ranks: Ranks,
}

/// The tokenizer, built on first use. `None` when it cannot be built, which the
/// embedded data rules out; counts then fall back to bytes / 4.
fn tokenizer() -> Option<&'static Tokenizer> {
    static TOKENIZER: OnceLock<Option<Tokenizer>> = OnceLock::new();
    TOKENIZER
        .get_or_init(|| {
            let full = tiktoken_rs::cl100k_base().ok()?;
            let ranks = Ranks::of(&full);
            drop(full);
            give_back_freed_memory();
            Some(Tokenizer { ranks })
        })
        .as_ref()
}

impl Tokenizer {
    fn count(&self, text: &str) -> usize {
        let mut n = 0;
        for piece in split::pieces(text) {
            for part in piece.as_bytes().chunks(MAX_PIECE) {
                n += self.piece_tokens(part);
            }
        }
        n
    }

    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).unwrap_or(NONE)
    }

    /// Tokens in one piece: starting from single bytes, the adjacent pair whose joined
    /// bytes have the lowest rank (the leftmost on a tie) is joined, until no joined
    /// pair is a token.
    fn piece_tokens(&self, piece: &[u8]) -> usize {
        if piece.len() < 2 || self.ranks.get(piece).is_some() {
            return piece.len().min(1);
        }
        // Part i is piece[starts[i]..starts[i + 1]]; join[i] ranks parts i and i + 1.
        let mut starts: Vec<usize> = (0..=piece.len()).collect();
        let join_rank = |starts: &[usize], i: usize| match starts.get(i + 2) {
            Some(&end) => self.rank(&piece[starts[i]..end]),
            None => NONE,
        };
        let mut join: Vec<u32> = (0..piece.len()).map(|i| join_rank(&starts, i)).collect();
        loop {
            let mut best = (NONE, 0);
            for (i, &r) in join.iter().enumerate() {
                if r < best.0 {
                    best = (r, i);
                }
            }
            if best.0 == NONE {
                return join.len();
            }
            let i = best.1;
            starts.remove(i + 1);
            join.remove(i + 1);
            join[i] = join_rank(&starts, i);
            if i > 0 {
                join[i - 1] = join_rank(&starts, i - 1);
            }
        }
    }
}

/// Returns the pages the dropped full tokenizer leaves free inside the allocator's
/// arenas to the system; without it they stay resident between the ranks built
/// alongside them.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator; any thread may
    // call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Tokens in `text` under `cl100k_base`; for a text over [`EXACT_LIMIT`] bytes, the
/// count of its first [`EXACT_LIMIT`] bytes scaled by length.
pub fn count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let Some(tok) = tokenizer() else {
        return text.len().div_ceil(4);
    };
    if text.len() <= EXACT_LIMIT {
        return tok.count(text);
    }
    let mut cut = EXACT_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = tok.count(&text[..cut]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_tiktoken() {
        let reference = tiktoken_rs::cl100k_base().unwrap();
        let long = "x".repeat(3000);
        let samples = [
            "hello world",
            "    let value = compute(alpha, beta, gamma); // adjust the running total here\n",
            "fn main() {\n    println!(\"{}\", 1234567 + 89);\n}\n\n\n",
            "Ünïcödé — naïve café; 日本語のテキスト、絵文字 🎉🎉 and a tab\there",
            "I'm sure they'll say we've done what they're asking, don't you?",
            "======================================== ////////// ----\r\n\r\n",
            "   trailing spaces   \n\t\tindent\n",
            "<|endoftext|> is not special here",
            "a",
            long.as_str(),
        ];
        let tok = tokenizer().unwrap();
        for s in samples {
            assert_eq!(
                tok.count(s),
                reference.encode_ordinary(s).len(),
                "{:?}",
                &s[..s.len().min(60)]
            );
        }
        let source = include_str!("tokens.rs");
        assert_eq!(tok.count(source), reference.encode_ordinary(source).len());
    }
}
